//! Real-world NodePools through the real terraform and tofu CLIs against
//! the real API server with Karpenter's CRD. Each one is written twice in
//! `tests/node_pools/`: by hand as the YAML a platform team applies with
//! kubectl (`<pool>.yaml`), and as the `gpufleet_fleet` that says the same
//! (`<pool>.tf`). Both give the same spec after the API server's defaulting;
//! the YAML's NodePool imports into the hand-written configuration with no
//! change; `plan -generate-config-out` writes configuration that applies
//! with an empty plan; and every CRD rule a configuration can break fails
//! at plan, at its attribute.

use common::fixtures::{fleet, kubectl_apply, node_pool_api};
use common::terraform::{Cli, Workspace, each_cli};
use common::{block_on, repo_root, unique_name};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

/// The NodePools, by file name: GPU training with minValues, budgets and
/// node lifetime; inference with startup taints; Karpenter's CPU pool with
/// CPU limits; a static pool; Azure A100s with Balanced consolidation;
/// spot GPUs with minValues on two keys.
const POOLS: &[&str] = &[
    "gpu-training",
    "inference",
    "cpu-general",
    "static",
    "azure-a100",
    "spot-mixed-gpu",
];

struct Pool {
    file: &'static str,
    /// Resource address in the `.tf` file.
    address: String,
    /// The NodePool the configuration makes.
    from_hcl: String,
    /// The NodePool kubectl makes from the YAML.
    from_yaml: String,
}

fn read_fixture(file: &str, ext: &str) -> String {
    let path = repo_root().join(format!("tests/node_pools/{file}.{ext}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Pool {
    fn new(file: &'static str) -> Self {
        let hcl = read_fixture(file, "tf");
        let resource = hcl
            .lines()
            .next()
            .and_then(|l| l.split('"').nth(3))
            .expect("the .tf file starts with resource \"gpufleet_fleet\" \"<name>\"");
        Self {
            file,
            address: format!("gpufleet_fleet.{resource}"),
            from_hcl: unique_name(file),
            from_yaml: unique_name(file),
        }
    }

    fn hcl(&self, name: &str) -> String {
        read_fixture(self.file, "tf").replace("__NAME__", name)
    }

    fn yaml(&self) -> String {
        read_fixture(self.file, "yaml").replace("__NAME__", &self.from_yaml)
    }

    fn import_block(&self) -> String {
        format!(
            "import {{\n  to = {}\n  id = \"{}\"\n}}\n",
            self.address, self.from_yaml
        )
    }
}

/// NodePools made behind Terraform's back, deleted when the test ends
/// however it ends, so a failure leaves the shared cluster clean.
struct MadeByKubectl(Vec<String>);

impl Drop for MadeByKubectl {
    fn drop(&mut self) {
        block_on(async {
            let api = node_pool_api().await;
            for name in &self.0 {
                let _ = api.delete(name, &DeleteParams::default()).await;
            }
        });
    }
}

fn live(name: &str) -> Option<Value> {
    block_on(async { node_pool_api().await.get_opt(name).await.unwrap() })
        .map(|o| serde_json::to_value(o).unwrap())
}

/// A live spec as Karpenter reads it: requirements and their values in any
/// order (it hashes the template with slices as sets), quantities as
/// strings (the API keeps a YAML number as a number), and a bound on a
/// whole-number label the same whether written `Gte 8` or `Gt 7` (`Lte 8`
/// or `Lt 9`; gpufleet writes the second form, which Karpenter before v1.9
/// accepts too).
fn normalized_spec(name: &str) -> Value {
    let mut spec = live(name).unwrap_or_else(|| panic!("NodePool {name} exists"))["spec"].clone();
    if let Some(requirements) = spec["template"]["spec"]["requirements"].as_array_mut() {
        for r in requirements.iter_mut() {
            let shifted = match (r["operator"].as_str(), r["values"][0].as_str()) {
                (Some("Gte"), Some(n)) => n.parse::<i64>().ok().map(|n| ("Gt", n - 1)),
                (Some("Lte"), Some(n)) => n.parse::<i64>().ok().map(|n| ("Lt", n + 1)),
                _ => None,
            };
            if let Some((operator, n)) = shifted {
                r["operator"] = json!(operator);
                r["values"] = json!([n.to_string()]);
            }
            if let Some(values) = r.get_mut("values").and_then(Value::as_array_mut) {
                values.sort_by_key(Value::to_string);
            }
        }
        requirements.sort_by_key(Value::to_string);
    }
    if let Some(limits) = spec["limits"].as_object_mut() {
        for quantity in limits.values_mut().filter(|q| !q.is_string()) {
            *quantity = json!(quantity.to_string());
        }
    }
    spec
}

/// The NodePool's own labels and annotations, without kubectl's record of
/// what it applied.
fn own_metadata(name: &str) -> Value {
    let object = live(name).unwrap();
    let mut annotations = object["metadata"]["annotations"].clone();
    if let Some(a) = annotations.as_object_mut() {
        a.remove("kubectl.kubernetes.io/last-applied-configuration");
        if a.is_empty() {
            annotations = Value::Null;
        }
    }
    json!({"labels": object["metadata"]["labels"], "annotations": annotations})
}

#[test]
fn real_world_node_pools_round_trip() {
    each_cli(|cli| {
        let pools: Vec<Pool> = POOLS.iter().map(|f| Pool::new(f)).collect();
        let _cleanup = MadeByKubectl(pools.iter().map(|p| p.from_yaml.clone()).collect());
        kubectl_apply(
            &pools
                .iter()
                .map(Pool::yaml)
                .collect::<Vec<_>>()
                .join("\n---\n"),
        );

        // Expressed as gpufleet_fleet: the same spec, field by field.
        let mut written = Workspace::new(cli);
        written.config(&pools.iter().map(|p| p.hcl(&p.from_hcl)).collect::<String>());
        written.apply();
        written.assert_plan_empty();
        for pool in &pools {
            assert_eq!(
                normalized_spec(&pool.from_hcl),
                normalized_spec(&pool.from_yaml),
                "{}: spec from gpufleet_fleet vs from YAML",
                pool.file
            );
            assert_eq!(
                own_metadata(&pool.from_hcl),
                own_metadata(&pool.from_yaml),
                "{}: NodePool labels and annotations",
                pool.file
            );
        }

        // Imported into the hand-written configuration: nothing to change.
        let mut by_hand = Workspace::new(cli);
        by_hand.config(
            &pools
                .iter()
                .map(|p| p.hcl(&p.from_yaml) + &p.import_block())
                .collect::<String>(),
        );
        by_hand.init();
        let plan = by_hand.run(&["plan", "-no-color", "-input=false"]);
        assert!(plan.success, "{}: {}{}", cli.name, plan.stdout, plan.stderr);
        let summary = format!(
            "{} to import, 0 to add, 0 to change, 0 to destroy",
            pools.len()
        );
        assert!(
            plan.stdout.contains(&summary),
            "{}: {}",
            cli.name,
            plan.stdout
        );
        by_hand.apply();
        by_hand.assert_plan_empty();
        by_hand.forget();

        // Configuration generated from the imported state applies with an
        // empty plan.
        let mut generated = Workspace::new(cli);
        generated.config(&pools.iter().map(Pool::import_block).collect::<String>());
        generated.init();
        let plan = generated.run(&[
            "plan",
            "-no-color",
            "-input=false",
            "-generate-config-out=generated.tf",
        ]);
        assert!(plan.success, "{}: {}{}", cli.name, plan.stdout, plan.stderr);
        let config = std::fs::read_to_string(generated.path().join("generated.tf")).unwrap();
        for pool in &pools {
            assert!(
                config.contains(&pool.address.replace('.', "\" \"")),
                "{config}"
            );
        }
        generated.apply();
        generated.assert_plan_empty();
        generated.destroy();
        written.destroy();
        for pool in &pools {
            assert!(live(&pool.from_yaml).is_none() && live(&pool.from_hcl).is_none());
        }
    });
}

/// Terraform's error diagnostics, one string each (summary, address,
/// location, detail), with whitespace collapsed: the CLIs wrap long details.
fn diagnostics(output: &str) -> Vec<String> {
    output
        .split("Error: ")
        .skip(1)
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// One broken rule: the fleet breaking it, the attribute path the
/// diagnostic must carry, and what it must say.
struct Broken {
    resource: &'static str,
    body: &'static str,
    path: &'static str,
    message: &'static str,
}

const fn broken(
    resource: &'static str,
    body: &'static str,
    path: &'static str,
    message: &'static str,
) -> Broken {
    Broken {
        resource,
        body,
        path,
        message,
    }
}

/// The configuration of `cases`, one fleet each.
fn fleets(cases: &[Broken]) -> String {
    cases
        .iter()
        .map(|c| {
            let name = format!("fleet-{}", c.resource.replace('_', "-"));
            fleet(c.resource, &name, &format!("{}\n", c.body))
        })
        .collect()
}

/// The 1-based line of `attribute` in `resource`'s block of `config`.
fn line_of(config: &str, resource: &str, attribute: &str) -> usize {
    let lines: Vec<&str> = config.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(&format!("resource \"gpufleet_fleet\" \"{resource}\"")))
        .unwrap();
    start
        + 1
        + lines[start..]
            .iter()
            .position(|l| l.trim_start().starts_with(&format!("{attribute} ")))
            .unwrap_or_else(|| panic!("{resource} sets no {attribute}"))
}

/// Each case must be one diagnostic about its fleet, saying its message at
/// its path: a top-level attribute's line in the configuration (where
/// Terraform points), or, inside a nested attribute (where Terraform shows
/// the resource), the path leading the detail.
fn assert_diagnosed(cli: &Cli, config: &str, output: &str, cases: &[Broken]) {
    let found = diagnostics(output);
    for case in cases {
        let top_level = case.path.split(['.', '[']).next().unwrap();
        let at = if top_level == case.path {
            format!(
                "on main.tf line {},",
                line_of(config, case.resource, top_level)
            )
        } else {
            case.path.to_string()
        };
        let matching = found.iter().any(|d| {
            d.contains(&format!("with gpufleet_fleet.{},", case.resource))
                && d.contains(&at)
                && d.contains(case.message)
        });
        assert!(
            matching,
            "{}: no diagnostic for {} at {at:?} saying {:?} in:\n{output}",
            cli.name, case.resource, case.message
        );
    }
    assert_eq!(found.len(), cases.len(), "{}: {output}", cli.name);
}

/// Every rule of Karpenter's NodePool CRD a configuration can break, each
/// refused by `validate`, or by `plan` (without a cluster) where the label
/// scheme decides, at its attribute path.
#[test]
fn each_crd_rule_fails_at_plan_with_its_path() {
    let at_validate = [
        broken(
            "schedule_without_duration",
            r#"  disruption = { budgets = [{ nodes = "0", schedule = "@daily" }] }"#,
            "disruption.budgets[0]",
            "`schedule` and `duration` go together",
        ),
        broken(
            "duration_in_seconds",
            r#"  disruption = { budgets = [{ nodes = "0", schedule = "@daily", duration = "30s" }] }"#,
            "disruption.budgets[0].duration",
            "\"30s\" is not a duration in hours and minutes",
        ),
        broken(
            "budget_nodes",
            r#"  disruption = { budgets = [{ nodes = "110%" }] }"#,
            "disruption.budgets[0].nodes",
            "\"110%\" is not a node count",
        ),
        broken(
            "budget_reason",
            r#"  disruption = { budgets = [{ nodes = "1", reasons = ["Expired"] }] }"#,
            "disruption.budgets[0].reasons",
            "\"Expired\" is not one of",
        ),
        broken(
            "cron",
            r#"  disruption = { budgets = [{ nodes = "1", schedule = "daily", duration = "1h" }] }"#,
            "disruption.budgets[0].schedule",
            "\"daily\" is not a cron schedule",
        ),
        broken(
            "consolidate_after",
            r#"  disruption = { consolidate_after = "5 minutes" }"#,
            "disruption.consolidate_after",
            "\"5 minutes\" is not a duration",
        ),
        broken(
            "consolidation_policy",
            r#"  disruption = { consolidation_policy = "Always" }"#,
            "disruption.consolidation_policy",
            "\"Always\" is not one of",
        ),
        broken(
            "expire_after",
            r#"  expire_after = "30d""#,
            "expire_after",
            "\"30d\" is not a duration",
        ),
        broken(
            "termination_grace_period",
            r#"  termination_grace_period = "Never""#,
            "termination_grace_period",
            "\"Never\" is not a duration",
        ),
        broken("weight", "  weight = 0", "weight", "0 is outside 1..=100"),
        broken(
            "replicas",
            "  replicas = -1",
            "replicas",
            "-1 is outside 0..=",
        ),
        broken(
            "static_limits",
            "  replicas = 2\n  limits   = { nodes = 4, cpu = 100 }",
            r#"limits["cpu"]"#,
            "a static fleet (with `replicas`) may only limit `nodes`",
        ),
        broken(
            "static_weight",
            "  replicas = 2\n  weight   = 10",
            "weight",
            "A static fleet (with `replicas`) has no `weight`",
        ),
        broken(
            "limit_quantity",
            r#"  limits = { memory = "lots" }"#,
            "limits",
            "\"lots\" is not a Kubernetes quantity",
        ),
        broken(
            "label_domain",
            r#"  labels = { "karpenter.sh/team" = "ml" }"#,
            "labels",
            "label domain `karpenter.sh` is reserved",
        ),
        broken(
            "label_hostname",
            r#"  labels = { "kubernetes.io/hostname" = "n1" }"#,
            "labels",
            "Karpenter reserves `kubernetes.io/hostname`",
        ),
        broken(
            "label_value",
            r#"  labels = { team = "machine learning" }"#,
            "labels",
            "is not a valid label value",
        ),
        broken(
            "requirement_domain",
            r#"  requirements = [{ key = "karpenter.sh/nodepool", operator = "In", values = ["x"] }]"#,
            "requirements[0]",
            "`karpenter.sh/nodepool`: the label domain `karpenter.sh` is reserved",
        ),
        broken(
            "requirement_in_without_values",
            r#"  requirements = [{ key = "example.com/rack", operator = "In" }]"#,
            "requirements[0]",
            "`In` needs at least one value",
        ),
        broken(
            "requirement_comparison",
            r#"  requirements = [{ key = "example.com/cpus", operator = "Gt", values = ["1.5"] }]"#,
            "requirements[0]",
            "Comparisons take exactly one value, a whole number",
        ),
        broken(
            "requirement_min_values",
            r#"  requirements = [{ key = "example.com/rack", operator = "In", values = ["a"], min_values = 2 }]"#,
            "requirements[0]",
            "min_values is 2 but only 1 values are listed",
        ),
        broken(
            "requirement_operator",
            r#"  requirements = [{ key = "example.com/rack", operator = "Like" }]"#,
            "requirements[0].operator",
            "\"Like\" is not one of",
        ),
        broken(
            "requirement_value",
            r#"  requirements = [{ key = "example.com/rack", operator = "In", values = ["rack 1"] }]"#,
            "requirements[0].values",
            "is not a valid label value",
        ),
        broken(
            "min_values_range",
            "  zones      = [\"a\"]\n  min_values = { zones = 51 }",
            "min_values.zones",
            "51 is outside 1..=50",
        ),
        broken(
            "taint_effect",
            r#"  taints = [{ key = "workload", effect = "NoScheduled" }]"#,
            "taints[0].effect",
            "\"NoScheduled\" is not one of",
        ),
        broken(
            "taint_value",
            r#"  taints = [{ key = "workload", value = "", effect = "NoSchedule" }]"#,
            "taints[0].value",
            "a NodePool taint value cannot be empty",
        ),
        broken(
            "startup_taint_key",
            r#"  startup_taints = [{ key = "not a key", effect = "NoSchedule" }]"#,
            "startup_taints[0].key",
            "is not a valid key",
        ),
        broken(
            "node_class_group",
            "",
            "node_class.group",
            "\"karpenter.k8s.aws/v1\" is not an API group",
        ),
    ];
    let at_plan = [
        broken(
            "min_values_above_values",
            "  instance_families = [\"p5\", \"p4d\"]\n  min_values        = { instance_families = 3 }",
            "min_values.instance_families",
            "is 3, but `instance_families` gives 2",
        ),
        broken(
            "min_values_without_attribute",
            "  min_values = { zones = 2 }",
            "min_values.zones",
            "`zones` is not set",
        ),
        broken(
            "contradiction",
            "  zones        = [\"a\"]\n  requirements = [{ key = \"topology.kubernetes.io/zone\", operator = \"In\", values = [\"b\"] }]",
            "requirements[0]",
            "(`topology.kubernetes.io/zone In [\"b\"]`) contradicts `zones`",
        ),
    ];
    let (group_case, others) = at_validate.split_last().unwrap();
    let validate_config = fleets(others)
        + &fleets(std::slice::from_ref(group_case)).replace(
            "group = \"karpenter.kwok.sh\"",
            "group = \"karpenter.k8s.aws/v1\"",
        );
    let plan_config = fleets(&at_plan);
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(&validate_config);
        let out = ws.validate_fails();
        let written = std::fs::read_to_string(ws.path().join("main.tf")).unwrap();
        assert_diagnosed(cli, &written, &out, &at_validate);

        let mut ws = Workspace::new(cli);
        ws.config(&plan_config);
        ws.init();
        assert!(
            ws.run(&["validate", "-no-color"]).success,
            "plan-time cases pass validate"
        );
        let run = ws.run(&["plan", "-no-color", "-input=false"]);
        assert!(!run.success, "{}: plan unexpectedly succeeded", cli.name);
        let written = std::fs::read_to_string(ws.path().join("main.tf")).unwrap();
        assert_diagnosed(cli, &written, &(run.stderr + &run.stdout), &at_plan);
    });
}

/// Karpenter refuses to turn a NodePool static or dynamic in place, so
/// gpufleet replaces it; scaling a static fleet is an update.
#[test]
fn static_and_dynamic_switch_by_replacement() {
    let static_fleet = "  replicas     = 2\n  limits       = { nodes = 4 }\n  requirements = [{ key = \"node.kubernetes.io/instance-type\", operator = \"In\", values = [\"p5.48xlarge\"] }]\n";
    each_cli(|cli| {
        let name = unique_name("fleet-static");
        let address = "gpufleet_fleet.f";
        let mut ws = Workspace::new(cli);
        ws.config(&fleet("f", &name, static_fleet));
        ws.apply();
        let first = live(&name).unwrap();
        assert_eq!(first["spec"]["replicas"], 2);
        // What an in-place switch would meet.
        let refused = block_on(async {
            node_pool_api()
                .await
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": null, "limits": null}})),
                )
                .await
        });
        let message = format!("{:?}", refused.expect_err("the API refuses the switch"));
        assert!(
            message.contains("Cannot transition NodePool between static"),
            "{message}"
        );

        ws.config(&fleet(
            "f",
            &name,
            &static_fleet.replace("replicas     = 2", "replicas     = 3"),
        ));
        ws.assert_plan_changes()
            .assert_change(address, "replicas", json!(2), json!(3));
        ws.apply();
        assert_eq!(live(&name).unwrap()["spec"]["replicas"], 3);

        let dynamic = "  limits       = { gpus = 8 }\n  requirements = [{ key = \"node.kubernetes.io/instance-type\", operator = \"In\", values = [\"p5.48xlarge\"] }]\n";
        ws.config(&fleet("f", &name, dynamic));
        ws.assert_plan_changes()
            .assert_replaced_for(address, &["replicas"]);
        ws.apply();
        let replaced = live(&name).unwrap();
        assert!(replaced["spec"].get("replicas").is_none(), "{replaced}");
        assert_ne!(replaced["metadata"]["uid"], first["metadata"]["uid"]);
        ws.assert_plan_empty();
        ws.destroy();
        assert!(live(&name).is_none(), "destroy left the NodePool behind");
    });
}
