//! `gpufleet_fleet` through the real terraform and tofu CLIs against the
//! real API server, whose Karpenter CRDs validate the NodePools.

use common::fixtures::{Guard, INFERENCE, TRAINING, fleet, kubectl_apply, node_pool_api};
use common::terraform::{At, ImportBy, Workspace, assert_invalid, assert_plan_invalid, each_cli};
use common::{block_on, unique_name};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

mod ec2;

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
/// The requirement operators the NodePool CRD of Karpenter `version`
/// accepts, read from that release's Go module (sigs.k8s.io/karpenter,
/// pkg/apis/crds/karpenter.sh_nodepools.yaml).
fn karpenter_operators(version: &str) -> Vec<String> {
    let dir = common::go_module::module_dir(&format!("sigs.k8s.io/karpenter@{version}"))
        .unwrap_or_else(|why| panic!("Karpenter {version}'s CRDs: {why}"));
    let text = std::fs::read_to_string(dir.join("pkg/apis/crds/karpenter.sh_nodepools.yaml"))
        .expect("the NodePool CRD");
    let crd: Value = serde_saphyr::from_str(&text).expect("CRD YAML");
    let requirement = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"]["template"]["properties"]["spec"]["properties"]["requirements"]["items"]["properties"]
        ["operator"]["enum"];
    let operators: Vec<String> = requirement
        .as_array()
        .unwrap_or_else(|| panic!("no operator enum in Karpenter {version}'s NodePool CRD"))
        .iter()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    assert!(operators.contains(&"Gt".to_string()), "{operators:?}");
    operators
}

/// Every requirement of the live NodePool uses an operator the oldest v1
/// Karpenter (v1.0) and the last before `Gte`/`Lte` (v1.6, as on EKS) accept.
fn assert_old_karpenter_accepts(spec: &Value) {
    for version in ["v1.0.8", "v1.6.4"] {
        let accepted = karpenter_operators(version);
        for (key, operator, _) in requirement_keys(spec) {
            assert!(
                accepted.contains(&operator),
                "{key} {operator}: Karpenter {version} accepts only {accepted:?}"
            );
        }
    }
}

/// What the fleet docs say of Karpenter versions: v1.6's NodePool CRD (from
/// its Go module) refuses `Gte` and `Lte`, so raw requirements with them
/// need a newer one, and v1.6 ships no NodeOverlay CRD; the test cluster's
/// CRDs, Karpenter v1.15.0's, have both.
#[test]
fn karpenter_versions_the_docs_name() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let old = karpenter_operators("v1.6.4");
    let overlay_crd = common::go_module::module_dir("sigs.k8s.io/karpenter@v1.6.4")
        .unwrap()
        .join("pkg/apis/crds/karpenter.sh_nodeoverlays.yaml");
    assert!(!overlay_crd.exists());
    block_on(async {
        let crds = kube::Api::<CustomResourceDefinition>::all(common::kube_client().await);
        let node_pools =
            serde_json::to_value(crds.get("nodepools.karpenter.sh").await.unwrap()).unwrap();
        let current: Vec<&str> = node_pools["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            ["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"]
            ["requirements"]["items"]["properties"]["operator"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap())
            .collect();
        for operator in ["Gte", "Lte"] {
            assert!(!old.iter().any(|o| o == operator), "v1.6.4 {operator}");
            assert!(
                current.contains(&operator),
                "v1.15.0 {operator}: {current:?}"
            );
        }
        crds.get("nodeoverlays.karpenter.sh").await.unwrap();
    });
}

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
        assert_old_karpenter_accepts(&spec);
        assert_eq!(
            requirement_keys(&spec),
            [
                (
                    "cfke.io/accelerator-name".into(),
                    "In".into(),
                    json!(["H100"])
                ),
                // Gt/Lt, which every Karpenter v1 release's CRD accepts.
                (
                    "cfke.io/accelerator-count".into(),
                    "Gt".into(),
                    json!(["7"])
                ),
                (
                    "cfke.io/accelerator-count".into(),
                    "Lt".into(),
                    json!(["9"])
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
            Some(("cfke.io/accelerator-memory", "79")),
        ),
        (
            "aws",
            "karpenter.k8s.aws/instance-gpu-name",
            "h100",
            Some(("karpenter.k8s.aws/instance-gpu-memory", "81919")),
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
            let spec = live(&name).unwrap();
            assert_old_karpenter_accepts(&spec);
            let keys = requirement_keys(&spec);
            assert_eq!(
                keys[0],
                (name_key.to_string(), "In".to_string(), json!([value])),
                "{scheme}"
            );
            if let Some((key, mib)) = memory {
                assert!(
                    keys.contains(&(key.to_string(), "Gt".to_string(), json!([mib]))),
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
    use gpufleet::cluster::api::Kind;
    use gpufleet::cluster::connection::Connection;
    use gpufleet::cluster::retry::Deadline;
    use gpufleet::framework::timeouts::Operation;

    block_on(async {
        let kubernetes = Kubernetes::new(Connection {
            config_path: Some(common::kubeconfig()),
            ..Default::default()
        });
        let missing = Kind::new("missing.gpufleet.example/v1", "NodePool", "nodepools");
        let pools = kubernetes.custom(missing).await.expect("a client");
        let gave_up = pools
            .named("x")
            .get(Deadline::of(None, Operation::Read))
            .await
            .expect_err("a missing API is an error");
        assert!(gave_up.not_installed, "{:?}", gave_up.diagnostics);
        let diagnostics = gave_up.diagnostics;
        let diagnostic = &diagnostics.0[0];
        assert_eq!(
            diagnostic.summary,
            "missing.gpufleet.example/v1 NodePool is not installed"
        );
        assert!(
            diagnostic.detail.contains("Could not read NodePool \"x\""),
            "{}",
            diagnostic.detail
        );
        assert!(
            diagnostic.detail.contains(&common::kubeconfig()),
            "{}",
            diagnostic.detail
        );
    });
}

/// Creating a fleet whose NodePool exists already (applied with kubectl)
/// fails with a hint to import it, and leaves the NodePool as it was.
#[test]
fn creating_a_fleet_whose_node_pool_exists_fails_with_a_hint_to_import_it() {
    each_cli(|cli| {
        let name = unique_name("fleet-exists");
        let _guard = Guard::node_pools(&[&name]);
        kubectl_apply(&format!(
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}\n      requirements: []\n"
        ));
        let before = live(&name);
        let mut ws = Workspace::new(cli);
        ws.config(&fleet("f", &name, TRAINING));
        let error = ws.apply_fails();
        assert!(
            error.contains("already exists") && error.contains("import it"),
            "{}: {error}",
            cli.name
        );
        assert_eq!(live(&name), before, "{}", cli.name);
    });
}
