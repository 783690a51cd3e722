//! docs/ is generated (`make docs`): from the provider's schema, the prose in
//! templates/ and the examples in examples/, by HashiCorp's tfplugindocs. The
//! committed pages must be exactly what the generator makes of this tree, and
//! pass `tfplugindocs validate`, the registry's own checks.

use std::process::Command;

use common::repo_root;

#[test]
fn committed_docs_are_what_make_docs_generates() {
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
