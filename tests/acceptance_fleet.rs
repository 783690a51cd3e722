//! `gpufleet_fleet` through the real terraform and tofu CLIs against the
//! real API server, whose Karpenter CRDs validate the NodePools.

mod common;

use common::fixtures::{INFERENCE, TRAINING, fleet, node_pool_api, node_pools};
use common::terraform::{At, ImportBy, Workspace, assert_invalid, assert_plan_invalid, each_cli};
use common::{block_on, kube_client, unique_name};
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// The live NodePool's spec, if the NodePool exists.
fn live(name: &str) -> Option<Value> {
    block_on(async { node_pool_api().await.get_opt(name).await.unwrap() })
        .map(|o| o.data["spec"].clone())
}

fn uid(name: &str) -> String {
    block_on(async { node_pool_api().await.get(name).await.unwrap() })
        .metadata
        .uid
        .unwrap()
}

/// Changes a NodePool behind Terraform's back, as another tool would.
fn edit(name: &str, patch: Value) {
    block_on(async {
        node_pool_api()
            .await
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap()
    });
}

fn requirement_keys(spec: &Value) -> Vec<(String, String, Value)> {
    spec["template"]["spec"]["requirements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["key"].as_str().unwrap().to_string(),
                r["operator"].as_str().unwrap().to_string(),
                r["values"].clone(),
            )
        })
        .collect()
}

/// The seed's training and inference fleets: the API server accepts their
/// NodePools, a second plan is empty, an import of each gives an empty plan
/// and the applied state, and destroy removes them.
#[test]
fn seed_fleets_apply_import_and_destroy() {
    each_cli(|cli| {
        let (training, inference) = (
            unique_name("fleet-training"),
            unique_name("fleet-inference"),
        );
        let config =
            fleet("training", &training, TRAINING) + &fleet("inference", &inference, INFERENCE);
        let mut ws = Workspace::new(cli);
        ws.config(&config);
        ws.apply();

        let spec = live(&training).expect("training NodePool exists");
        assert_eq!(
            requirement_keys(&spec),
            [
                (
                    "cfke.io/accelerator-name".into(),
                    "In".into(),
                    json!(["H100"])
                ),
                (
                    "cfke.io/accelerator-count".into(),
                    "Gte".into(),
                    json!(["8"])
                ),
                (
                    "cfke.io/accelerator-count".into(),
                    "Lte".into(),
                    json!(["8"])
                ),
            ]
        );
        assert_eq!(
            spec["template"]["spec"]["taints"],
            json!([{"key": "workload", "value": "training", "effect": "NoSchedule"}])
        );
        assert_eq!(spec["limits"], json!({"nvidia.com/gpu": "64"}));
        assert_eq!(
            spec["disruption"]["consolidationPolicy"],
            "WhenEmptyOrUnderutilized"
        );
        let values = ws.resource_values("gpufleet_fleet.inference");
        assert_eq!(
            values["node_selector"],
            json!({"karpenter.sh/nodepool": inference})
        );
        assert_eq!(
            values["tolerations"],
            json!([{"key": "workload", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}])
        );

        ws.assert_import_verifies(
            &[
                ("gpufleet_fleet.training", &training),
                ("gpufleet_fleet.inference", &inference),
            ],
            ImportBy::Command,
            &[],
        );

        ws.destroy();
        assert!(
            live(&training).is_none() && live(&inference).is_none(),
            "destroy left NodePools behind"
        );
    });
}

/// Each label scheme's keys, values and units reach the API server, and
/// read back into the same configuration.
#[test]
fn each_label_scheme() {
    let cases = [
        (
            "cfke",
            "cfke.io/accelerator-name",
            "H100",
            Some(("cfke.io/accelerator-memory", "80")),
        ),
        (
            "aws",
            "karpenter.k8s.aws/instance-gpu-name",
            "h100",
            Some(("karpenter.k8s.aws/instance-gpu-memory", "81920")),
        ),
        ("azure", "karpenter.azure.com/sku-gpu-name", "H100", None),
    ];
    each_cli(|cli| {
        for (scheme, name_key, value, memory) in cases {
            let name = unique_name(&format!("fleet-{scheme}"));
            let memory_setting = if memory.is_some() {
                "  accelerator_memory_min_gib = 80\n"
            } else {
                ""
            };
            let mut ws = Workspace::new(cli);
            ws.config_with_provider(
                &format!("  label_scheme = \"{scheme}\"\n"),
                &fleet("f", &name, &format!("{TRAINING}{memory_setting}")),
            );
            ws.apply();
            let keys = requirement_keys(&live(&name).unwrap());
            assert_eq!(
                keys[0],
                (name_key.to_string(), "In".to_string(), json!([value])),
                "{scheme}"
            );
            if let Some((key, mib)) = memory {
                assert!(
                    keys.contains(&(key.to_string(), "Gte".to_string(), json!([mib]))),
                    "{scheme}: {keys:?}"
                );
            }
            ws.destroy();
        }
    });
}

/// Changes behind Terraform's back to fields the fleet owns show in the
/// plan, and apply puts the configuration back. The template's labels and
/// taints are atomic in the NodePool CRD, so a label or taint someone else
/// adds there is drift of `labels` or `taints` too, and the apply removes
/// it; the template's
/// annotations, its limits and the NodePool's own labels and annotations
/// are owned key by key, so another writer's keys there are no drift and
/// survive.
#[test]
fn drift_shows_in_the_plan() {
    each_cli(|cli| {
        let name = unique_name("fleet-drift");
        let mut ws = Workspace::new(cli);
        ws.config(&fleet(
            "f",
            &name,
            &format!(
                "{TRAINING}  labels = {{ team = \"ml\" }}\n  annotations = {{ team = \"ml\" }}\n  node_pool_labels = {{ team = \"ml\" }}\n  node_pool_annotations = {{ team = \"ml\" }}\n"
            ),
        ));
        ws.apply();
        let mut spec = live(&name).unwrap();
        spec["template"]["spec"]["requirements"][0]["values"] = json!(["H200"]);
        let mut taints = spec["template"]["spec"]["taints"].clone();
        taints
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "foreign", "value": "x", "effect": "NoSchedule"}));
        edit(
            &name,
            json!({
                "metadata": {"labels": {"foreign": "x"}, "annotations": {"foreign": "x"}},
                "spec": {"template": {
                    "metadata": {"labels": {"foreign": "x"}, "annotations": {"foreign": "x"}},
                    "spec": {
                        "requirements": spec["template"]["spec"]["requirements"],
                        "taints": taints,
                    },
                }, "limits": {"nvidia.com/gpu": "128", "cpu": "1000"}},
            }),
        );
        let plan = ws.assert_plan_changes();
        let address = "gpufleet_fleet.f";
        plan.assert_actions(address, &["update"]);
        for keyed in ["annotations", "node_pool_labels", "node_pool_annotations"] {
            assert_eq!(
                (plan.before(address, keyed), plan.after(address, keyed)),
                (Some(&json!({"team": "ml"})), Some(&json!({"team": "ml"}))),
                "{}: another writer's key in {keyed} shows as drift",
                cli.name
            );
        }
        plan.assert_change(address, "accelerators", json!(["H200"]), json!(["H100"]));
        plan.assert_change(
            address,
            "limits",
            json!({"gpus": "128"}),
            json!({"gpus": "64"}),
        );
        plan.assert_change(
            address,
            "labels",
            json!({"foreign": "x", "team": "ml"}),
            json!({"team": "ml"}),
        );
        assert_eq!(
            (
                plan.before(address, "taints[1].key"),
                plan.after(address, "taints")
                    .and_then(Value::as_array)
                    .map(Vec::len),
            ),
            (Some(&json!("foreign")), Some(1)),
            "{}: another writer's taint is not drift of taints:\n{}",
            cli.name,
            plan.text
        );
        ws.apply();
        assert_eq!(
            live(&name).unwrap()["template"]["metadata"]["labels"],
            json!({"team": "ml"})
        );
        assert_eq!(
            live(&name).unwrap()["template"]["metadata"]["annotations"],
            json!({"team": "ml", "foreign": "x"})
        );
        let metadata = block_on(async { node_pool_api().await.get(&name).await.unwrap() }).metadata;
        for keys in [metadata.labels, metadata.annotations] {
            let keys = keys.unwrap_or_default();
            assert_eq!(
                (
                    keys.get("team").map(String::as_str),
                    keys.get("foreign").map(String::as_str)
                ),
                (Some("ml"), Some("x")),
                "{}: {keys:?}",
                cli.name
            );
        }
        assert_eq!(
            live(&name).unwrap()["limits"],
            json!({"nvidia.com/gpu": "64", "cpu": "1000"})
        );
        assert_eq!(
            live(&name).unwrap()["template"]["spec"]["taints"],
            json!([{"key": "workload", "value": "training", "effect": "NoSchedule"}])
        );
        assert_eq!(
            live(&name).unwrap()["template"]["spec"]["requirements"][0]["values"],
            json!(["H100"])
        );
        ws.destroy();
    });
}

/// `node_class` group and kind are immutable in Karpenter: changing one
/// replaces the fleet (a new NodePool with the new class); its name changes
/// in place (the same NodePool).
#[test]
fn node_class_kind_change_replaces() {
    each_cli(|cli| {
        let name = unique_name("fleet-class");
        let address = "gpufleet_fleet.f";
        let node_class =
            |name: &str| live(name).unwrap()["template"]["spec"]["nodeClassRef"].clone();
        let mut ws = Workspace::new(cli);
        ws.config(&fleet("f", &name, INFERENCE));
        ws.apply();
        let first_uid = uid(&name);

        let renamed =
            fleet("f", &name, INFERENCE).replace("name = \"default\"", "name = \"other\"");
        ws.config(&renamed);
        let plan = ws.assert_plan_changes();
        plan.assert_actions(address, &["update"]);
        plan.assert_change(address, "node_class.name", json!("default"), json!("other"));
        ws.apply();
        assert_eq!(
            node_class(&name),
            json!({"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "other"})
        );
        assert_eq!(uid(&name), first_uid, "a rename replaced the NodePool");

        let rekinded = renamed.replace("KWOKNodeClass", "OtherNodeClass");
        ws.config(&rekinded);
        ws.assert_plan_changes()
            .assert_replaced_for(address, &["node_class", "kind"]);
        ws.apply();
        assert_eq!(
            node_class(&name),
            json!({"group": "karpenter.kwok.sh", "kind": "OtherNodeClass", "name": "other"})
        );
        assert_ne!(uid(&name), first_uid, "the NodePool was not replaced");
        ws.destroy();
        assert!(live(&name).is_none(), "destroy left {name}");
    });
}

/// Bad inputs fail `validate` (or, where the label scheme matters, `plan`)
/// before anything reaches the cluster, each with one error that names the
/// attribute path and is placed where the CLIs place that path: a
/// top-level attribute on its line, a map entry on its line, a path into a
/// nested attribute on the nested object or list element holding it.
#[test]
fn bad_inputs_through_the_cli() {
    each_cli(|cli| {
        let cases = [
            (
                r#"  accelerators = ["H10"]"#,
                "unknown accelerator `H10`; did you mean `H100`?",
                At::Line(r#"accelerators = ["H10"]"#),
            ),
            (
                r#"  labels = { "karpenter.sh/nodepool" = "x" }"#,
                "`karpenter.sh/nodepool`: the label domain `karpenter.sh` is reserved",
                At::Line(r#"labels = { "karpenter.sh/nodepool" = "x" }"#),
            ),
            (
                r#"  taints = [{ key = "workload", effect = "NoScheduled" }]"#,
                "taints[0].effect: \"NoScheduled\" is not one of",
                At::Line("taints = [{"),
            ),
            (
                "  accelerator_count = { min = 16, max = 8 }",
                "accelerator_count.min (16) is greater than accelerator_count.max (8)",
                At::Line("accelerator_count = {"),
            ),
            (
                "  limits = { gpus = -1 }",
                "\"gpus\": \"-1\" is negative",
                At::Line("limits = { gpus = -1 }"),
            ),
            (
                r#"  limits = { cpu = "-4" }"#,
                "\"cpu\": \"-4\" is negative",
                At::Line(r#"limits = { cpu = "-4" }"#),
            ),
        ];
        for (body, message, at) in cases {
            assert_invalid(
                cli,
                &fleet("f", "fleet-bad", &format!("{body}\n")),
                message,
                at,
            );
        }
        // node_class.name: placed on node_class, the object holding it,
        // not on the fleet's own `name`; the detail names the attribute.
        assert_invalid(
            cli,
            &fleet("f", "fleet-bad", "").replace("name = \"default\"", "name = \"\""),
            "node_class.name: must not be empty",
            At::Line("node_class"),
        );

        let mut ws = Workspace::new(cli);
        ws.config_with_provider(
            "  label_scheme = \"azure\"\n",
            &fleet(
                "f",
                "fleet-bad",
                "  accelerators = [\"H100\"]\n  accelerator_memory_min_gib = 80\n",
            ),
        );
        assert_plan_invalid(
            &mut ws,
            "cannot be expressed with the azure label scheme",
            At::Line("accelerator_memory_min_gib = 80"),
        );
    });
}

/// The real API server's answer for an API that does not exist (as for a
/// NodePool without Karpenter's CRDs) is an error naming the API and the
/// cluster, not a missing object.
#[test]
fn a_missing_node_pool_api_is_named() {
    use gpufleet::cluster::Kubernetes;
    use gpufleet::cluster::client::get;
    use gpufleet::cluster::connection::Connection;

    block_on(async {
        let missing: Api<DynamicObject> =
            Api::all_with(kube_client().await, &node_pools("missing.gpufleet.example"));
        let error = get(&missing, "x")
            .await
            .expect_err("a missing API is an error");
        let kubernetes = Kubernetes::new(Connection {
            config_path: Some(common::kubeconfig()),
            ..Default::default()
        });
        let diagnostics =
            kubernetes.api_error("create NodePool \"x\"", "karpenter.sh/v1 NodePool", &error);
        let diagnostic = &diagnostics.0[0];
        assert_eq!(
            diagnostic.summary,
            "karpenter.sh/v1 NodePool is not installed"
        );
        assert!(
            diagnostic.detail.contains(&common::kubeconfig()),
            "{}",
            diagnostic.detail
        );
    });
}
