//! Extra evidence that the provider works with older clients: Terraform
//! v1.5.7 (the last MPL-licensed line) and OpenTofu 1.8, as built by
//! `tests/controlplane/build.sh` into `target/tools/bin/` under their
//! versioned names. Not the main matrix (that is terraform and tofu in the
//! acceptance tests): a missing one is skipped, unless
//! GPUFLEET_REQUIRE_OLDER_CLIS is set (as `make test` does).

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use common::fixtures::{TRAINING, class, fleet, live_node_pool, live_priority_class};
use common::terraform::{Cli, Workspace, assert_invalid};
use common::{repo_root, unique_name};

/// Name prefixes of the extra CLIs in `target/tools/bin/`.
const EXTRA: &[&str] = &["terraform-1.5.", "tofu-1.8."];

fn cli_at(name: &str, path: &Path) -> Cli {
    let out = Command::new(path)
        .args(["version", "-json"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{} version -json: {e}", path.display()));
    Cli {
        // One leak per CLI per test process; Cli wants a &'static str.
        name: Box::leak(name.to_string().into_boxed_str()),
        path: path.to_path_buf(),
        version: json["terraform_version"].as_str().unwrap().to_string(),
    }
}

/// The extra CLIs present, newest patch first within each line.
fn extra_clis() -> &'static [Cli] {
    static CLIS: OnceLock<Vec<Cli>> = OnceLock::new();
    CLIS.get_or_init(|| {
        let bin = repo_root().join("target/tools/bin");
        let mut names: Vec<String> = std::fs::read_dir(&bin)
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| EXTRA.iter().any(|p| n.starts_with(p)))
                    .filter(|n| bin.join(n).is_file())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        let found: Vec<Cli> = names.iter().map(|n| cli_at(n, &bin.join(n))).collect();
        for cli in &found {
            eprintln!(
                "compat: using {} (reports {}, {})",
                cli.name,
                cli.version,
                cli.path.display()
            );
        }
        // make test sets this: there, a missing older CLI is a failure.
        if std::env::var_os("GPUFLEET_REQUIRE_OLDER_CLIS").is_some() {
            for prefix in EXTRA {
                assert!(
                    found.iter().any(|c| c.name.starts_with(prefix)),
                    "required CLI {prefix}* not found in {} (run tests/controlplane/build.sh)",
                    bin.display()
                );
            }
        }
        for prefix in EXTRA {
            if !found.iter().any(|c| c.name.starts_with(prefix)) {
                eprintln!(
                    "compat: skipped {prefix}*: not in {} (tests/controlplane/build.sh builds it)",
                    bin.display()
                );
            }
        }
        found
    })
}

fn each_extra_cli(test: impl Fn(&Cli)) {
    for cli in extra_clis() {
        eprintln!("--- with {} ({})", cli.name, cli.version);
        test(cli);
    }
}

/// Apply, an empty second plan, `import` into an empty state giving an empty
/// plan, and a destroy that leaves nothing in the cluster.
#[test]
fn priority_class_and_fleet_lifecycle() {
    each_extra_cli(|cli| {
        let (pc, pool) = (unique_name("compat-pc"), unique_name("compat-fleet"));
        let config = class(
            "c",
            &pc,
            4242,
            "  description = \"compat\"\n  preemption_policy = \"Never\"\n  labels = { team = \"ml\" }\n",
        ) + &fleet("f", &pool, TRAINING);

        let mut ws = Workspace::new(cli);
        ws.config(&config);
        ws.apply();
        let object = live_priority_class(&pc).expect("PriorityClass exists");
        assert_eq!(object.value, 4242);
        assert_eq!(object.preemption_policy.as_deref(), Some("Never"));
        let node_pool = live_node_pool(&pool).expect("NodePool exists");
        assert_eq!(
            node_pool.data["spec"]["limits"],
            serde_json::json!({"nvidia.com/gpu": "64"})
        );
        ws.assert_plan_empty();

        let mut imported = Workspace::new(cli);
        imported.config(&config);
        imported.import("gpufleet_priority_class.c", &pc);
        imported.import("gpufleet_fleet.f", &pool);
        imported.assert_plan_empty();
        for address in ["gpufleet_priority_class.c", "gpufleet_fleet.f"] {
            assert_eq!(
                imported.resource_values(address),
                ws.resource_values(address),
                "{}: imported state of {address} differs",
                cli.name
            );
        }
        // Both workspaces hold the same objects; the original removes them.
        imported.forget();

        ws.destroy();
        assert!(
            live_priority_class(&pc).is_none(),
            "{}: destroy left {pc}",
            cli.name
        );
        assert!(
            live_node_pool(&pool).is_none(),
            "{}: destroy left {pool}",
            cli.name
        );
    });
}

/// A validation error names the problem and the old CLIs still quote the
/// attribute's line of the configuration.
#[test]
fn validate_errors_point_at_the_attribute() {
    each_extra_cli(|cli| {
        assert_invalid(
            cli,
            &class("c", "policy", 1, "  preemption_policy = \"Sometimes\"\n"),
            "is not one of",
            Some("preemption_policy = \"Sometimes\""),
        );
        assert_invalid(
            cli,
            &class("c", "fraction", 1, "").replace("value = 1", "value = 1.5"),
            "not a whole number",
            Some("value = 1.5"),
        );
        assert_invalid(
            cli,
            &fleet("f", "fleet-bad", "  accelerators = [\"H10\"]\n"),
            "did you mean `H100`?",
            Some("accelerators = [\"H10\"]"),
        );
    });
}
