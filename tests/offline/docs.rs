//! docs/ is generated (`make docs`): from the provider's schema, the prose in
//! templates/ and the examples in examples/, by HashiCorp's tfplugindocs. The
//! committed pages must be exactly what the generator makes of this tree, and
//! pass `tfplugindocs validate`, the registry's own checks. Both tools are
//! Go builds of the testbed; the offline tier builds nothing, so without
//! them the check is skipped (a failure under `make test`, which builds them).

use std::process::Command;

use common::{repo_root, skipped};

#[test]
fn committed_docs_are_what_make_docs_generates() {
    let tools = repo_root().join("target/tools/bin");
    let missing: Vec<&str> = ["tfplugindocs", "terraform-1.13.3"]
        .into_iter()
        .filter(|tool| !tools.join(tool).exists())
        .collect();
    if !missing.is_empty() {
        skipped(
            "the docs check",
            &format!(
                "{} missing (built into {} by testbed/build.sh)",
                missing.join(" and "),
                tools.display()
            ),
        );
        return;
    }
    let out = Command::new("bash")
        .args(["scripts/docs.sh", "--check"])
        .current_dir(repo_root())
        // The binary this test run built: its schema is the one to document.
        .env("GPUFLEET_PROVIDER_BINARY", common::provider_binary())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("docs/ is up to date")
            && stderr.contains("tfplugindocs validate: docs/ passes"),
        "{stderr}"
    );
}
