//! The module tests of examples/training-and-inference (`tests/*.tftest.hcl`)
//! through `terraform test` and `tofu test`. They only plan, so they run
//! against a kubeconfig naming a server where nothing listens.

use common::terraform::{Workspace, each_cli};
use common::{repo_root, unreachable_kubeconfig};

const EXAMPLE: &str = "examples/training-and-inference";

#[test]
fn module_tests_pass_without_a_cluster() {
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config_from(EXAMPLE);
        let tests = repo_root().join(EXAMPLE).join("tests");
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
            "{} test failed:\n{}\n{}",
            cli.name,
            run.stdout,
            run.stderr
        );
        // Every run block ran and passed (none skipped after a failure).
        assert!(
            run.stdout.contains(&format!("{runs} passed, 0 failed")),
            "expected {runs} passed:\n{}",
            run.stdout
        );
    });
}
