//! docs/ is generated (`make docs`): from the provider's schema, the prose in
//! templates/ and the examples in examples/, by HashiCorp's tfplugindocs. The
//! committed pages must be exactly what the generator makes of this tree, and
//! pass `tfplugindocs validate`, the registry's own checks. Both tools are
//! Go builds of the testbed; the offline tier builds nothing, so without
//! them the check is skipped (a failure under `make test`, which builds them).
//! The published benchmark report must name a clean commit of this history.

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

/// The provider's index page names every resource and data source it
/// documents, so a user starting there finds them all.
#[test]
fn the_index_names_every_resource_and_data_source() {
    let docs = repo_root().join("docs");
    let index = std::fs::read_to_string(docs.join("index.md")).unwrap();
    for kind in ["resources", "data-sources"] {
        for page in std::fs::read_dir(docs.join(kind)).unwrap() {
            let page = page.unwrap().path();
            let name = page.file_stem().unwrap().to_string_lossy();
            let type_name = format!("`gpufleet_{name}`");
            assert!(
                index.contains(&type_name),
                "docs/index.md does not name {type_name} ({})",
                page.display()
            );
        }
    }
}

/// docs/benchmarks.md names the commit it was measured at (`git describe
/// --always --dirty`, which `make bench-publish` refuses to publish with
/// `-dirty`): a clean commit of this branch's history, so anyone can check
/// it out and rerun the benchmark.
#[test]
fn published_benchmarks_name_a_clean_commit_of_this_history() {
    let root = repo_root();
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .unwrap()
    };
    let shallow = git(&["rev-parse", "--is-shallow-repository"]);
    if !shallow.status.success() || shallow.stdout.starts_with(b"true") {
        skipped(
            "the published benchmarks' commit check",
            "not a git checkout with its whole history",
        );
        return;
    }
    let report = std::fs::read_to_string(root.join("docs/benchmarks.md")).unwrap();
    let row = report
        .lines()
        .find(|l| l.starts_with("| gpufleet | "))
        .expect("docs/benchmarks.md has a gpufleet row");
    let described = row
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(inside, _)| inside)
        .unwrap_or_else(|| panic!("no commit in {row:?}"));
    assert!(
        !described.ends_with("-dirty"),
        "docs/benchmarks.md was measured on a dirty tree: {row}"
    );
    // `TAG-N-gHASH` past a tag, else the abbreviated hash alone.
    let commit = described
        .rsplit_once("-g")
        .map_or(described, |(_, hash)| hash);
    let ancestor = git(&["merge-base", "--is-ancestor", commit, "HEAD"]);
    assert!(
        ancestor.status.success(),
        "docs/benchmarks.md names {commit}, which is not an ancestor of HEAD: {}",
        String::from_utf8_lossy(&ancestor.stderr)
    );
}

/// The index and the README link every guide under docs/guides, so a user
/// starting at either finds the getting-started pages.
#[test]
fn the_index_and_the_readme_link_every_guide() {
    let docs = repo_root().join("docs");
    let index = std::fs::read_to_string(docs.join("index.md")).unwrap();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let guides: Vec<String> = std::fs::read_dir(docs.join("guides"))
        .unwrap()
        .map(|page| page.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        guides.iter().any(|g| g == "getting-started-eks.md"),
        "{guides:?}"
    );
    for guide in guides {
        assert!(
            index.contains(&format!("(guides/{guide})")),
            "docs/index.md does not link guides/{guide}"
        );
        assert!(
            readme.contains(&format!("(docs/guides/{guide})")),
            "README.md does not link docs/guides/{guide}"
        );
    }
}
