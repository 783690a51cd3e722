//! The module tests of the examples that have them (`tests/*.tftest.hcl`
//! under examples/training-and-inference and examples/getting-started/*),
//! through `terraform test` and `tofu test`. They only plan, so they run
//! against a kubeconfig naming a server where nothing listens.

use std::path::Path;

use common::terraform::{Workspace, each_cli};
use common::{repo_root, unreachable_kubeconfig};

/// The example directories with a `tests` folder, relative to the repository.
fn examples_with_tests() -> Vec<String> {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.is_dir() || path.file_name().unwrap().to_string_lossy().starts_with('.') {
                continue;
            }
            if path.file_name().unwrap() == "tests" {
                let example = path.parent().unwrap().strip_prefix(repo_root()).unwrap();
                found.push(example.to_string_lossy().into_owned());
            } else {
                walk(&path, found);
            }
        }
    }
    let mut found = Vec::new();
    walk(&repo_root().join("examples"), &mut found);
    found.sort();
    found
}

/// `test` in a copy of `example` with its tests: how many run blocks passed.
fn run_module_tests(cli: &common::terraform::Cli, example: &str) -> usize {
    let mut ws = Workspace::new(cli);
    ws.config_from(example);
    let tests = repo_root().join(example).join("tests");
    std::fs::create_dir_all(ws.path().join("tests")).unwrap();
    let mut runs = 0;
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".tftest.hcl") {
            let content = std::fs::read_to_string(&path).unwrap();
            runs += content.matches("\nrun \"").count();
            std::fs::write(
                ws.path().join("tests").join(path.file_name().unwrap()),
                content,
            )
            .unwrap();
        }
    }
    assert!(runs > 0, "no run blocks in {}", tests.display());
    let kubeconfig = ws.path().join("unreachable.kubeconfig");
    std::fs::write(&kubeconfig, unreachable_kubeconfig()).unwrap();
    ws.env("KUBECONFIG", kubeconfig.to_str().unwrap()).init();
    let run = ws.run(&["test", "-no-color"]);
    assert!(
        run.success && run.stdout.contains("Success!"),
        "{example}: {} test failed:\n{}\n{}",
        cli.name,
        run.stdout,
        run.stderr
    );
    // Every run block ran and passed (none skipped after a failure).
    assert!(
        run.stdout.contains(&format!("{runs} passed, 0 failed")),
        "{example}: expected {runs} passed:\n{}",
        run.stdout
    );
    runs
}

#[test]
fn module_tests_pass_without_a_cluster() {
    let examples = examples_with_tests();
    for expected in [
        "examples/training-and-inference",
        "examples/getting-started/eks",
        "examples/getting-started/self-managed",
    ] {
        assert!(
            examples.iter().any(|e| e == expected),
            "{expected} has no tests: {examples:?}"
        );
    }
    each_cli(|cli| {
        // One thread per example: the time goes into the CLIs and providers.
        std::thread::scope(|scope| {
            let runs: Vec<_> = examples
                .iter()
                .map(|example| (example, scope.spawn(|| run_module_tests(cli, example))))
                .collect();
            for (example, run) in runs {
                let passed = run.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
                eprintln!("{}: {example}: {passed} run blocks passed", cli.name);
            }
        });
    });
}
