//! Extra evidence that the provider works with older clients: Terraform
//! v1.5.7 (the last MPL-licensed line) and OpenTofu 1.8, as built by
//! `testbed/build.sh` into `target/tools/bin/` under their
//! versioned names. Not the main matrix (that is terraform and tofu in the
//! acceptance tests): a missing one is skipped with a notice, and is a
//! failure under `make test` (GPUFLEET_REQUIRE_ALL).

use std::sync::OnceLock;

use common::fixtures::{TRAINING, class, fleet, live_node_pool, live_priority_class};
use common::terraform::{At, Cli, ImportBy, Workspace, assert_invalid, cli_at};
use common::{repo_root, skipped, unique_name};

/// Name prefixes of the extra CLIs in `target/tools/bin/`.
const EXTRA: &[&str] = &["terraform-1.5.", "tofu-1.8."];

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
        // One leak per CLI per test process; Cli wants a &'static str.
        let found: Vec<Cli> = names
            .iter()
            .map(|n| cli_at(Box::leak(n.clone().into_boxed_str()), &bin.join(n)))
            .collect();
        for cli in &found {
            eprintln!(
                "compat: using {} (reports {}, {})",
                cli.name,
                cli.version,
                cli.path.display()
            );
        }
        for prefix in EXTRA {
            if !found.iter().any(|c| c.name.starts_with(prefix)) {
                skipped(
                    &format!("compat tests with {prefix}*"),
                    &format!("not in {} (testbed/build.sh builds it)", bin.display()),
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

/// Apply, an empty second plan, import into an empty state (by command and
/// by block) giving an empty plan and the applied state, and a destroy that
/// leaves nothing in the cluster.
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
        assert_eq!(object.value, Some(4242));
        assert_eq!(object.preemption_policy.as_deref(), Some("Never"));
        let node_pool = live_node_pool(&pool).expect("NodePool exists");
        assert_eq!(
            node_pool.data["spec"]["limits"],
            serde_json::json!({"nvidia.com/gpu": "64"})
        );

        for by in [ImportBy::Command, ImportBy::Block] {
            ws.assert_import_verifies(
                &[
                    ("gpufleet_priority_class.c", &pc),
                    ("gpufleet_fleet.f", &pool),
                ],
                by,
                &[],
            );
        }

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

/// A validation error names the problem and the old CLIs place it as the
/// new ones do: a top-level attribute on its line, a path into a nested
/// attribute on the nested object or list element holding it.
#[test]
fn validate_errors_point_at_the_attribute() {
    each_extra_cli(|cli| {
        let cases = [
            (
                class("c", "policy", 1, "  preemption_policy = \"Sometimes\"\n"),
                "is not one of",
                At::Line("preemption_policy = \"Sometimes\""),
            ),
            (
                class("c", "fraction", 1, "").replace("value = 1", "value = 1.5"),
                "not a whole number",
                At::Line("value = 1.5"),
            ),
            (
                fleet("f", "fleet-bad", "  accelerators = [\"H10\"]\n"),
                "did you mean `H100`?",
                At::Line("accelerators = [\"H10\"]"),
            ),
            (
                fleet(
                    "f",
                    "fleet-bad",
                    "  taints = [{ key = \"workload\", effect = \"NoScheduled\" }]\n",
                ),
                "taints[0].effect: \"NoScheduled\" is not one of",
                At::Line("taints = [{"),
            ),
            (
                fleet("f", "fleet-bad", "  limits = { gpus = -1 }\n"),
                "\"gpus\": \"-1\" is negative",
                At::Line("limits = { gpus = -1 }"),
            ),
            (
                fleet("f", "fleet-bad", "").replace("name = \"default\"", "name = \"\""),
                "node_class.name: must not be empty",
                At::Line("node_class"),
            ),
        ];
        for (body, message, at) in cases {
            assert_invalid(cli, &body, message, at);
        }
    });
}
