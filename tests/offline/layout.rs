//! What CONTRIBUTING.md's Design section says of the tree: every path it names
//! exists, and the layers it calls free of Kubernetes are crates whose
//! dependencies cannot reach it.

use std::collections::BTreeSet;
use std::process::Command;

use common::repo_root;

/// The paths that open the lines of the Design section's tree.
fn design_paths() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("CONTRIBUTING.md")).unwrap();
    let design = readme
        .split("## Design")
        .nth(1)
        .and_then(|rest| rest.split("```").nth(1))
        .expect("CONTRIBUTING.md has a Design section with a tree");
    design
        .lines()
        .filter(|line| !line.starts_with(' ') && !line.is_empty())
        .flat_map(|line| {
            // `a/, b/, c/  what they are`: the paths end at the first word
            // without a comma.
            let mut paths = Vec::new();
            for word in line.split_whitespace() {
                paths.push(word.trim_end_matches(',').to_string());
                if !word.ends_with(',') {
                    break;
                }
            }
            paths
        })
        .collect()
}

#[test]
fn every_path_of_the_design_section_exists() {
    let paths = design_paths();
    assert!(paths.len() > 15, "{paths:?}");
    let missing: Vec<&String> = paths
        .iter()
        .filter(|path| !repo_root().join(path).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md names {missing:?}, not in the tree"
    );
}

/// The crates each layer's build depends on, as cargo resolves them.
fn dependencies(package: &str) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--edges",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--format", "{lib}", "--package", package])
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_protocol_and_the_framework_cannot_reach_kubernetes_or_the_provider() {
    for layer in ["gpufleet-protocol", "gpufleet-framework"] {
        let reached = dependencies(layer);
        assert!(reached.contains("tonic"), "{layer}: {reached:?}");
        for outside in ["kube", "kube_client", "k8s_openapi", "gpufleet"] {
            assert!(!reached.contains(outside), "{layer} depends on {outside}");
        }
    }
    assert!(dependencies("gpufleet-framework").contains("gpufleet_protocol"));
    assert!(!dependencies("gpufleet-protocol").contains("gpufleet_framework"));
}
