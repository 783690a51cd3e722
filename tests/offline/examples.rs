//! The configurations in examples/ are what users copy, and what the
//! generated docs show: each directory must be formatted as `fmt` writes it
//! and pass `validate` (which runs the provider's own checks) with every CLI.
//! None of them needs a cluster.

use std::path::{Path, PathBuf};

use common::repo_root;
use common::terraform::{Cli, Workspace, clis, each_cli, run_in};

/// Every directory under `root` holding a `.tf` file, relative to `root`,
/// skipping what `init` leaves behind.
fn configuration_dirs(root: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, found: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect();
        entries.sort();
        if entries
            .iter()
            .any(|p| p.is_file() && p.extension().is_some_and(|e| e == "tf"))
        {
            found.push(dir.strip_prefix(root).unwrap().to_path_buf());
        }
        for entry in entries.iter().filter(|p| p.is_dir()) {
            walk(root, entry, found);
        }
    }
    let mut found = Vec::new();
    walk(root, root, &mut found);
    found
}

/// A copy of `from` without init's leftovers, so examples referring to
/// each other by relative path (a root configuration and its module) still do.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        let name_text = name.to_string_lossy();
        if name_text.starts_with(".terraform") || name_text.starts_with("terraform.tfstate") {
            continue;
        }
        if path.is_dir() {
            copy_tree(&path, &to.join(name));
        } else {
            std::fs::copy(&path, to.join(name)).unwrap();
        }
    }
}

/// `fmt -check`, `init` and `validate` in `at` (a copy of examples/`dir`):
/// what failed first, if anything.
fn check_example(cli: &Cli, dir: &Path, at: &Path) -> Option<String> {
    let steps: [&[&str]; 3] = [
        &["fmt", "-check", "-diff", "-no-color"],
        &["init", "-backend=false", "-input=false", "-no-color"],
        &["validate", "-no-color"],
    ];
    steps.into_iter().find_map(|args| {
        let run = run_in(cli, at, args);
        (!run.success).then(|| {
            format!(
                "examples/{}: {} {} failed:\n{}{}",
                dir.display(),
                cli.name,
                args[0],
                run.stdout,
                run.stderr
            )
        })
    })
}

#[test]
fn every_example_is_formatted_and_valid() {
    let examples = repo_root().join("examples");
    let dirs = configuration_dirs(&examples);
    assert!(
        dirs.contains(&PathBuf::from("provider")),
        "no examples/provider in {dirs:?}"
    );
    each_cli(|cli| {
        let copy = tempfile::tempdir().unwrap();
        copy_tree(&examples, copy.path());
        // One thread per directory: the time goes into starting CLIs and
        // providers, not into computing.
        let failures: Vec<String> = std::thread::scope(|scope| {
            let checks: Vec<_> = dirs
                .iter()
                .map(|dir| {
                    let at = copy.path().join(dir);
                    scope.spawn(move || check_example(cli, dir, &at))
                })
                .collect();
            checks
                .into_iter()
                .filter_map(|check| check.join().unwrap())
                .collect()
        });
        assert!(
            failures.is_empty(),
            "{} of {} example directories fail with {} {}:\n\n{}",
            failures.len(),
            dirs.len(),
            cli.name,
            cli.version,
            failures.join("\n\n")
        );
        eprintln!(
            "{}: {} example directories formatted and valid",
            cli.name,
            dirs.len()
        );
    });
}

/// The registry layout tfplugindocs reads: a provider example, and for every
/// resource and data source the provider serves, an example (and for
/// resources an import command) under its full type name.
#[test]
fn every_resource_and_data_source_has_an_example() {
    let mut ws = Workspace::new(&clis()[0]);
    ws.config_raw(
        "terraform {\n  required_providers {\n    gpufleet = {\n      source = \"gpufleet/gpufleet\"\n    }\n  }\n}\n",
    );
    ws.init();
    let run = ws.run(&["providers", "schema", "-json"]);
    assert!(run.success, "providers schema failed:\n{}", run.stderr);
    let schemas: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let provider = schemas["provider_schemas"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .expect("the gpufleet schema");

    let examples = repo_root().join("examples");
    let mut expected = vec![PathBuf::from("provider/provider.tf")];
    for name in provider["resource_schemas"].as_object().unwrap().keys() {
        expected.push(format!("resources/{name}/resource.tf").into());
        expected.push(format!("resources/{name}/import.sh").into());
    }
    for name in provider["data_source_schemas"].as_object().unwrap().keys() {
        expected.push(format!("data-sources/{name}/data-source.tf").into());
    }
    let missing: Vec<_> = expected
        .iter()
        .filter(|path| !examples.join(path).is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "examples missing for the docs: {missing:?}"
    );
}
