//! GPU sharing through the real terraform and tofu CLIs against the real API
//! server, with the GPU Operator's ClusterPolicy CRD and Karpenter's CRDs
//! (NodeOverlay included) installed, and for the device-plugin restarts a
//! DaemonSet of the operator's name whose pods kwok runs on fake nodes.
//!
//! Each test writes into a namespace of its own (the provider's
//! `gpu_operator_namespace`), so tests never share a ConfigMap.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::fixtures::{HelmClusterPolicy, OperatorNamespace, fleet, node_overlays, node_pool_api};
use common::terraform::{Cli, ImportBy, Workspace, each_cli, each_identity_cli};
use common::{block_on, kube_client, kubeconfig, repo_root, unique_name};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const CONFIG_MAP: &str = "gpufleet-device-plugin";
const CONFIG_LABEL: &str = "nvidia.com/device-plugin.config";

async fn config_maps(namespace: &str) -> Api<ConfigMap> {
    Api::namespaced(kube_client().await, namespace)
}

/// The keys of the device-plugin ConfigMap; `None` when it does not exist.
fn keys(namespace: &str) -> Option<BTreeMap<String, String>> {
    block_on(async {
        config_maps(namespace)
            .await
            .get_opt(CONFIG_MAP)
            .await
            .unwrap()
            .map(|cm| cm.data.unwrap_or_default())
    })
}

/// Edits the ConfigMap as another tool would, under its own field manager.
fn edit_config_map(namespace: &str, data: Value) {
    block_on(async {
        let params = PatchParams {
            field_manager: Some("another-tool".into()),
            ..Default::default()
        };
        config_maps(namespace)
            .await
            .patch(CONFIG_MAP, &params, &Patch::Merge(json!({ "data": data })))
            .await
            .unwrap();
    });
}

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"))
}

/// A device-plugin configuration with the plugin's defaults written out:
/// version, MIG strategy, and in a sharing block `renameByDefault` and
/// `failRequestsGreaterThanOne` (off for time slicing, on for MPS).
fn with_defaults(mut config: Value) -> Value {
    config["version"] = json!("v1");
    if config["flags"]["migStrategy"].is_null() {
        config["flags"]["migStrategy"] = json!("none");
    }
    if let Some(sharing) = config["sharing"].as_object_mut() {
        for (name, block) in sharing.iter_mut() {
            if block["renameByDefault"].is_null() {
                block["renameByDefault"] = json!(false);
            }
            if block["failRequestsGreaterThanOne"].is_null() {
                block["failRequestsGreaterThanOne"] = json!(name == "mps");
            }
        }
    }
    config
}

/// Destroys what `ws` holds, which leaves nothing of gpufleet's in `ns` but
/// what a device plugin may still read: without a ClusterPolicy (the
/// callers hold `no_gpu_operator`) a standalone device plugin may be
/// pointed at the ConfigMap, so it stays, with only a `default` that shares
/// nothing, held by `gpufleet-unshared-default`.
fn destroy_leaves_only_the_unshared_default(ws: &mut Workspace, ns: &OperatorNamespace) {
    ws.destroy();
    let map = block_on(async { config_maps(&ns.0).await.get(CONFIG_MAP).await.unwrap() });
    let holders: Vec<String> = map
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter(|m| {
            m.fields_v1
                .as_ref()
                .is_some_and(|f| !f.0["f:data"]["f:default"].is_null())
        })
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(
        (map.data, holders),
        (
            Some(BTreeMap::from([(
                "default".to_string(),
                "version: v1\nflags:\n  migStrategy: none\n".to_string()
            )])),
            vec!["gpufleet-unshared-default".to_string()]
        ),
        "{}: destroy left more than the unshared default",
        ws.cli.name
    );
}

fn cluster_sharing(body: &str) -> String {
    format!("resource \"gpufleet_gpu_sharing\" \"default\" {{\n{body}}}\n")
}

/// Configured like the sharing the device plugin's README documents (ten
/// replicas of `nvidia.com/gpu` by time slicing or MPS, with and without
/// `renameByDefault`, written here as we read it) and like the GPU
/// Operator's own e2e time-slicing configuration (read from its Go module),
/// the key `default` holds what the example holds, once both are parsed as
/// YAML with the plugin's defaults written out; updates rewrite it, a second
/// plan is empty, an import gives an empty plan, and destroy leaves nothing
/// behind.
#[test]
fn configured_like_nvidias_examples() {
    // Plans check its MIG or MPS sharing against the ClusterPolicy.
    let Some(_no_operator) = common::exclusive::no_gpu_operator("NVIDIA's examples applied") else {
        return;
    };
    let ten_gpus = json!([{"name": "nvidia.com/gpu", "replicas": 10}]);
    let mut examples = vec![
        (
            "time slicing",
            json!({"version": "v1", "sharing": {"timeSlicing": {"resources": ten_gpus}}}),
            "  strategy = \"time_slicing\"\n  replicas = 10\n",
        ),
        (
            "time slicing, renamed",
            json!({"version": "v1", "sharing": {"timeSlicing": {
                "renameByDefault": true, "resources": ten_gpus}}}),
            "  strategy          = \"time_slicing\"\n  replicas          = 10\n  rename_by_default = true\n",
        ),
        (
            "MPS",
            json!({"version": "v1", "sharing": {"mps": {"resources": ten_gpus}}}),
            "  strategy = \"mps\"\n  replicas = 10\n",
        ),
        (
            "MPS, renamed",
            json!({"version": "v1", "sharing": {"mps": {
                "renameByDefault": true, "resources": ten_gpus}}}),
            "  strategy          = \"mps\"\n  replicas          = 10\n  rename_by_default = true\n",
        ),
    ];
    let e2e = "the GPU Operator's tests/plugin-config.yaml";
    if let Some(text) = common::go_module::gpu_operator_file(e2e, "tests/plugin-config.yaml") {
        examples.push((
            e2e,
            yaml(&text),
            "  strategy          = \"time_slicing\"\n  replicas          = 10\n  rename_by_default = false\n",
        ));
    }
    each_cli(|cli| {
        let ns = OperatorNamespace::new("sharing-examples");
        let mut ws = Workspace::new(cli);
        for (example, documented, settings) in &examples {
            let body = cluster_sharing(&format!("{settings}  manage_cluster_policy = false\n"));
            ws.config_with_provider(&ns.provider(), &body);
            ws.apply();
            let live = keys(&ns.0).expect("the ConfigMap exists")["default"].clone();
            assert_eq!(
                with_defaults(yaml(&live)),
                with_defaults(documented.clone()),
                "{}: {example}",
                cli.name
            );
            assert_eq!(
                ws.resource_values("gpufleet_gpu_sharing.default")["device_plugin_config"],
                live
            );
            ws.assert_plan_empty();
        }

        ws.assert_import_verifies(
            &[("gpufleet_gpu_sharing.default", "default")],
            ImportBy::Command,
            &[],
        );

        // No sharing is a configuration without `sharing`, not `replicas: 1`.
        ws.config_with_provider(
            &ns.provider(),
            &cluster_sharing("  strategy = \"none\"\n  manage_cluster_policy = false\n"),
        );
        ws.apply();
        let live = keys(&ns.0).unwrap()["default"].clone();
        assert_eq!(
            yaml(&live),
            json!({"version": "v1", "flags": {"migStrategy": "none"}})
        );

        destroy_leaves_only_the_unshared_default(&mut ws, &ns);
    });
}

/// Without the GPU Operator only the ConfigMap is written, with a warning
/// on how to wire it; with its ClusterPolicy as Helm installed it, exactly
/// the device-plugin config name and default and the MIG strategy are
/// applied, everything else and its owner untouched, and destroy gives them
/// back.
#[test]
fn cluster_policy_fields_set_and_released() {
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli| {
        let ns = OperatorNamespace::new("sharing-policy");
        let mut ws = Workspace::new(cli);
        ws.config_with_provider(
            &ns.provider(),
            &cluster_sharing("  strategy = \"time_slicing\"\n  replicas = 4\n"),
        );
        // A cluster with the GPU Operator has its ClusterPolicy, which the
        // test must not write: there, the warning cannot be seen.
        if let Some(theirs) = cluster_policy_names().first() {
            common::skipped(
                "the warning without the GPU Operator",
                &format!("the cluster holds ClusterPolicy {theirs:?}, not the test's"),
            );
        } else {
            let out = ws.apply().stdout;
            assert!(
                out.contains("GPU Operator not found"),
                "{}: no warning:\n{out}",
                cli.name
            );
            assert!(out.contains("config.default=default"), "{out}");
            assert!(ws.resource_values("gpufleet_gpu_sharing.default")["cluster_policy"].is_null());
            ws.assert_plan_empty();
        }

        let mut policy = HelmClusterPolicy::install(Some("single"));
        let helm_before = policy.owners()["helm"].clone();
        let before = policy.live().data["spec"].clone();
        // Everything but our fields, as it was.
        let others = |spec: &Value| {
            let mut spec = spec.clone();
            spec["devicePlugin"]
                .as_object_mut()
                .unwrap()
                .remove("config");
            spec.as_object_mut().unwrap().remove("mig");
            spec
        };
        ws.config_with_provider(
            &ns.provider(),
            &cluster_sharing(
                "  strategy = \"time_slicing\"\n  replicas = 8\n  mig_strategy = \"mixed\"\n",
            ),
        );
        ws.apply();
        assert_eq!(
            ws.resource_values("gpufleet_gpu_sharing.default")["cluster_policy"],
            policy.0
        );
        let spec = policy.live().data["spec"].clone();
        assert_eq!(
            spec["devicePlugin"]["config"],
            json!({"name": CONFIG_MAP, "default": "default"})
        );
        assert_eq!(spec["mig"]["strategy"], "mixed");
        assert_eq!(others(&spec), others(&before), "{}", cli.name);
        let owners = policy.owners();
        assert_eq!(
            owners["gpufleet-sharing-default"],
            [
                "devicePlugin.config.default",
                "devicePlugin.config.name",
                "mig.strategy"
            ]
        );
        let ours = &owners["gpufleet-sharing-default"];
        let helm_now: Vec<String> = helm_before
            .iter()
            .filter(|f| !ours.contains(f))
            .cloned()
            .collect();
        // Helm's create also owns each map it wrote, which shows once we
        // hold all of its fields (`mig`).
        let helms_leaves: Vec<String> = owners["helm"]
            .iter()
            .filter(|f| !ours.iter().any(|o| o.starts_with(&format!("{f}."))))
            .cloned()
            .collect();
        assert_eq!(
            helms_leaves, helm_now,
            "{}: helm lost more than our fields",
            cli.name
        );
        ws.assert_plan_empty();

        // A Helm upgrade patches what changed between the chart's two
        // renderings: with the MIG strategy changed in its values it sets
        // that (the plan shows it, and apply takes it again), and leaves the
        // device plugin's config, which the chart renders the same, to us.
        policy.helm_upgrade("none");
        let plan = ws.assert_plan_changes();
        let flat = plan.text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(r#"~ mig_strategy = "none" -> "mixed""#)
                && !flat.contains("manage_cluster_policy"),
            "{}:\n{}",
            cli.name,
            plan.text
        );
        ws.apply();
        let spec = policy.live().data["spec"].clone();
        assert_eq!(spec["mig"]["strategy"], "mixed");
        assert_eq!(
            spec["devicePlugin"]["config"],
            json!({"name": CONFIG_MAP, "default": "default"})
        );
        ws.assert_plan_empty();

        // Another writer points the device plugin at its own ConfigMap: the
        // ClusterPolicy reads back as no longer managed, and apply points
        // it back.
        policy.edit(
            "kubectl-edit",
            json!({"devicePlugin": {"config": {"default": "their-key"}}}),
        );
        let plan = ws.assert_plan_changes();
        let flat = plan.text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("~ manage_cluster_policy = false -> true")
                && !flat.contains("~ mig_strategy"),
            "{}:\n{}",
            cli.name,
            plan.text
        );
        ws.apply();
        assert_eq!(
            policy.live().data["spec"]["devicePlugin"]["config"],
            json!({"name": CONFIG_MAP, "default": "default"})
        );
        ws.assert_plan_empty();

        // Destroy gives each field back to the writer that set it last,
        // with its value: the MIG strategy to helm as its upgrade set it,
        // the config default to the other writer; the config name, which
        // the chart does not render, goes.
        ws.destroy();
        let owners = policy.owners();
        assert!(
            !owners.contains_key("gpufleet-sharing-default"),
            "{owners:?}"
        );
        assert_eq!(owners["helm"], helm_before, "{}", cli.name);
        assert_eq!(owners["kubectl-edit"], ["devicePlugin.config.default"]);
        let mut after = before.clone();
        after["mig"]["strategy"] = json!("none");
        after["devicePlugin"]["config"] = json!({"default": "their-key"});
        assert_eq!(policy.live().data["spec"], after, "{}", cli.name);
        assert_eq!(keys(&ns.0), None);
    });
}

/// The names of the ClusterPolicies on the cluster.
fn cluster_policy_names() -> Vec<String> {
    block_on(async { common::fixtures::cluster_policy_names(&kube_client().await).await })
}

/// Plain Node objects (no kubelet), deleted when the test ends.
struct Nodes(Vec<String>);

impl Nodes {
    fn create(
        &mut self,
        prefix: &str,
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
    ) -> String {
        let name = unique_name(prefix);
        let to_map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": to_map(labels), "annotations": to_map(annotations)},
            "status": {
                "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            },
        }))
        .unwrap();
        block_on(async {
            Api::<Node>::all(kube_client().await)
                .create(&PostParams::default(), &node)
                .await
                .unwrap();
        });
        self.0.push(name.clone());
        name
    }

    fn labels(name: &str) -> BTreeMap<String, String> {
        block_on(async {
            Api::<Node>::all(kube_client().await)
                .get(name)
                .await
                .unwrap()
        })
        .metadata
        .labels
        .unwrap_or_default()
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        block_on(async {
            let api = Api::<Node>::all(kube_client().await);
            for name in &self.0 {
                let _ = api.delete(name, &DeleteParams::default()).await;
            }
        });
    }
}

fn overlay(name: &str) -> Option<Value> {
    block_on(async {
        node_overlays(&kube_client().await)
            .get_opt(name)
            .await
            .unwrap()
    })
    .map(|o| o.data["spec"].clone())
}

fn template_labels(pool: &str) -> Value {
    let live = block_on(async { node_pool_api().await.get(pool).await.unwrap() });
    live.data["spec"]["template"]["metadata"]["labels"].clone()
}

fn sharing_config(ws: &Workspace, address: &str) -> Value {
    yaml(
        ws.resource_values(address)["device_plugin_config"]
            .as_str()
            .unwrap(),
    )
}

/// Two fleets, a node-sharing resource and the cluster default keep their
/// own keys of one ConfigMap through each other's updates and destroys, and
/// through another field manager editing the ConfigMap in between; fleets'
/// NodePools carry the labels that select their key and their NodeOverlays
/// exist exactly as long as they do; drift on a key and on the labels shows
/// in the next plan; imports give empty plans.
#[test]
fn owners_keep_their_own_keys() {
    // Its MIG fleet and MPS node sharing go together only where each node's
    // configuration decides the MIG strategy, which plans and applies check
    // against the ClusterPolicy: under one of its own whose values clear
    // `mig.strategy`, as without the GPU Operator (which then passes the
    // device plugin none: NVIDIA gpu-operator, controllers/object_controls.go,
    // applyMIGConfiguration), whatever ClusterPolicy the cluster holds.
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli| {
        let policy = HelmClusterPolicy::install(Some(""));
        // Installed with `--set devicePlugin.config.name=...`, as the docs
        // say for a GPU Operator gpufleet_gpu_sharing does not manage: the
        // keys are read, so the fleets and node sharing may write theirs.
        policy.edit(
            "helm",
            serde_json::json!({"devicePlugin": {"config": {"name": CONFIG_MAP}}}),
        );
        let ns = OperatorNamespace::new("sharing-keys");
        let mut nodes = Nodes(Vec::new());
        let server = nodes.create("sharing-dgx", &[("team", "research")], &[]);
        let (shared, mig) = (unique_name("shared"), unique_name("mig"));
        let node_sharing = |replicas: u32| {
            format!(
                "resource \"gpufleet_node_sharing\" \"dgx\" {{\n  name      = \"dgx\"\n  node_name = \"{server}\"\n  strategy  = \"mps\"\n  replicas  = {replicas}\n}}\n"
            )
        };
        let shared_fleet = |replicas: u32| {
            fleet(
                "shared",
                &shared,
                &format!(
                    "  accelerators      = [\"L4\"]\n  accelerator_count = {{ min = 1, max = 4 }}\n  gpu_sharing       = {{ strategy = \"time_slicing\", replicas = {replicas} }}\n"
                ),
            )
        };
        let mig_fleet = fleet(
            "mig",
            &mig,
            "  accelerators      = [\"H100\"]\n  accelerator_count = { min = 8, max = 8 }\n  gpu_sharing       = { strategy = \"mig\", mig_layout = \"all-1g.10gb\" }\n",
        );
        let default = cluster_sharing(
            "  strategy = \"time_slicing\"\n  replicas = 2\n  manage_cluster_policy = false\n",
        );
        let all = |replicas: u32| {
            default.clone() + &shared_fleet(replicas) + &mig_fleet + &node_sharing(4)
        };

        let mut ws = Workspace::new(cli);
        ws.config_with_provider(&ns.provider(), &all(4));
        ws.apply();
        let shared_key = format!("fleet-{shared}");
        let mig_key = format!("fleet-{mig}");
        let expected_keys = [
            "default".to_string(),
            shared_key.clone(),
            mig_key.clone(),
            "node-dgx".to_string(),
        ];
        let live = keys(&ns.0).unwrap();
        for key in &expected_keys {
            assert!(
                live.contains_key(key),
                "{}: no key {key}: {live:?}",
                cli.name
            );
        }
        assert_eq!(
            yaml(&live[&mig_key]),
            json!({"version": "v1", "flags": {"migStrategy": "mixed"}})
        );
        assert_eq!(
            yaml(&live["node-dgx"])["sharing"]["mps"]["resources"][0]["replicas"],
            4
        );
        // The NodePools' nodes join with their fleet's key and MIG layout.
        assert_eq!(template_labels(&shared), json!({CONFIG_LABEL: shared_key}));
        assert_eq!(
            template_labels(&mig),
            json!({CONFIG_LABEL: mig_key, "nvidia.com/mig.config": "all-1g.10gb"})
        );
        // Karpenter plans the shared fleet's nodes with GPUs × replicas.
        let four = overlay(&format!("{shared}-4-gpus")).expect("overlay for 4-GPU nodes");
        assert_eq!(four["capacity"], json!({"nvidia.com/gpu": "16"}));
        assert_eq!(
            four["requirements"][0],
            json!({"key": "karpenter.sh/nodepool", "operator": "In", "values": [shared]})
        );
        assert_eq!(
            overlay(&format!("{mig}-8-gpus")).unwrap()["capacity"],
            json!({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"})
        );
        assert_eq!(Nodes::labels(&server)[CONFIG_LABEL], "node-dgx");
        let values = ws.resource_values("gpufleet_fleet.mig");
        assert_eq!(
            (
                values["gpu_resource"].clone(),
                values["gpus_per_node_advertised"].clone()
            ),
            (json!("nvidia.com/mig-1g.10gb"), json!(56))
        );
        ws.assert_plan_empty();

        // Another tool adds a key of its own; then one fleet changes.
        edit_config_map(&ns.0, json!({"theirs": "version: v1\n"}));
        ws.config_with_provider(&ns.provider(), &all(8));
        ws.apply();
        let live = keys(&ns.0).unwrap();
        assert_eq!(live["theirs"], "version: v1\n");
        assert_eq!(
            yaml(&live[&shared_key])["sharing"]["timeSlicing"]["resources"][0]["replicas"],
            8
        );
        assert_eq!(
            yaml(&live["default"])["sharing"]["timeSlicing"]["resources"][0]["replicas"],
            2
        );
        assert_eq!(
            overlay(&format!("{shared}-4-gpus")).unwrap()["capacity"],
            json!({"nvidia.com/gpu": "32"})
        );
        ws.assert_plan_empty();

        // Drift: a key edited behind Terraform's back; the plan shows the
        // edited value going back to the configured one.
        let configured =
            ws.resource_values("gpufleet_fleet.shared")["device_plugin_config"].clone();
        let edited = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n";
        edit_config_map(&ns.0, json!({ shared_key.clone(): edited }));
        ws.assert_plan_changes().assert_change(
            "gpufleet_fleet.shared",
            "device_plugin_config",
            json!(edited),
            configured,
        );
        // A template label removed and the MIG layout's changed: the plan
        // shows what the NodePool holds now going back to both.
        block_on(async {
            let patch = json!({"spec": {"template": {"metadata": {"labels": {
                CONFIG_LABEL: null,
                "nvidia.com/mig.config": "all-balanced",
            }}}}});
            node_pool_api()
                .await
                .patch(&mig, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .unwrap();
        });
        let mig_labels = json!({CONFIG_LABEL: mig_key, "nvidia.com/mig.config": "all-1g.10gb"});
        ws.assert_plan_changes().assert_change(
            "gpufleet_fleet.mig",
            "sharing_labels",
            json!({"nvidia.com/mig.config": "all-balanced"}),
            mig_labels.clone(),
        );
        block_on(async {
            let patch = json!({"metadata": {"labels": { CONFIG_LABEL: null }}});
            Api::<Node>::all(kube_client().await)
                .patch(&server, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .unwrap();
        });
        let before = ws
            .assert_plan_changes()
            .assert_updates("gpufleet_node_sharing.dgx", "labels");
        assert!(
            before.to_string().contains("(missing on node"),
            "{}: {before}",
            cli.name
        );
        ws.apply();
        assert_eq!(Nodes::labels(&server)[CONFIG_LABEL], "node-dgx");
        // Another writer points the node at another key: the plan shows the
        // value it holds now, and the apply takes the label back.
        block_on(async {
            let patch = json!({"metadata": {"labels": { CONFIG_LABEL: "fleet-theirs" }}});
            Api::<Node>::all(kube_client().await)
                .patch(&server, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .unwrap();
        });
        let changed = ws
            .assert_plan_changes()
            .assert_updates("gpufleet_node_sharing.dgx", "labels");
        assert_eq!(changed[CONFIG_LABEL], "fleet-theirs", "{}", cli.name);
        ws.apply();
        assert_eq!(Nodes::labels(&server)[CONFIG_LABEL], "node-dgx");
        assert_eq!(
            sharing_config(&ws, "gpufleet_fleet.shared")["sharing"]["timeSlicing"]["resources"][0]
                ["replicas"],
            8
        );
        assert_eq!(template_labels(&mig), mig_labels);
        ws.assert_plan_empty();

        // Drift on the cluster-wide key and on the NodeOverlays: one
        // overlay deleted, another's capacity edited; the plan shows each,
        // the apply puts them back.
        edit_config_map(
            &ns.0,
            json!({"default": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 5\n"}),
        );
        let four_gpus = format!("{shared}-4-gpus");
        let eight_gpus = format!("{mig}-8-gpus");
        block_on(async {
            let api = node_overlays(&kube_client().await);
            api.delete(&four_gpus, &DeleteParams::default())
                .await
                .unwrap();
            let edit = json!({"spec": {"capacity": {"nvidia.com/mig-1g.10gb": "7"}}});
            api.patch(&eight_gpus, &PatchParams::default(), &Patch::Merge(edit))
                .await
                .unwrap();
        });
        let plan = ws.assert_plan_changes();
        let drifted = plan.assert_updates("gpufleet_gpu_sharing.default", "device_plugin_config");
        assert!(
            drifted.as_str().is_some_and(|t| t.contains("replicas: 5")),
            "{}: {drifted}",
            cli.name
        );
        let shared_overlays = plan.assert_updates("gpufleet_fleet.shared", "node_overlays");
        assert!(
            shared_overlays.get(&four_gpus).is_none(),
            "{}: {shared_overlays}",
            cli.name
        );
        let mig_overlays = plan.assert_updates("gpufleet_fleet.mig", "node_overlays");
        assert_eq!(
            mig_overlays[&eight_gpus]["capacity"]["nvidia.com/mig-1g.10gb"], "7",
            "{}",
            cli.name
        );
        ws.apply();
        assert_eq!(
            yaml(&keys(&ns.0).unwrap()["default"])["sharing"]["timeSlicing"]["resources"][0]["replicas"],
            2
        );
        assert_eq!(
            overlay(&four_gpus).expect("overlay put back")["capacity"],
            json!({"nvidia.com/gpu": "32"})
        );
        assert_eq!(
            overlay(&eight_gpus).unwrap()["capacity"],
            json!({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"})
        );
        ws.assert_plan_empty();

        let dgx = format!("dgx:{server}");
        for by in [ImportBy::Command, ImportBy::Block] {
            ws.assert_import_verifies(
                &[
                    ("gpufleet_gpu_sharing.default", "default"),
                    ("gpufleet_fleet.shared", &shared),
                    ("gpufleet_fleet.mig", &mig),
                    ("gpufleet_node_sharing.dgx", &dgx),
                ],
                by,
                &[],
            );
        }

        // One fleet goes: its key, labels' NodePool and overlays go with it.
        ws.config_with_provider(
            &ns.provider(),
            &(default.clone() + &mig_fleet + &node_sharing(4)),
        );
        ws.apply();
        let live = keys(&ns.0).unwrap();
        assert!(!live.contains_key(&shared_key), "{live:?}");
        for key in ["default", mig_key.as_str(), "node-dgx", "theirs"] {
            assert!(live.contains_key(key), "{}: {key} lost: {live:?}", cli.name);
        }
        assert!(overlay(&format!("{shared}-4-gpus")).is_none());
        ws.assert_plan_empty();

        // Theirs stays, and the `default` that shares nothing, which a
        // standalone device plugin may read.
        ws.destroy();
        assert_eq!(
            keys(&ns.0),
            Some(BTreeMap::from([
                ("theirs".to_string(), "version: v1\n".to_string()),
                (
                    "default".to_string(),
                    "version: v1\nflags:\n  migStrategy: none\n".to_string()
                ),
            ]))
        );
        assert!(overlay(&format!("{mig}-8-gpus")).is_none());
        assert!(!Nodes::labels(&server).contains_key(CONFIG_LABEL));
        assert_eq!(Nodes::labels(&server)["team"], "research");
    });
}

/// The identities docs/resources/*.md give for import: the cluster-wide
/// key, a shared fleet's name, and a node sharing's name with its node or
/// its selector. Apply records them in state, and importing by them gives
/// the state apply gave, attribute by attribute.
#[test]
fn identities_import_the_sharing_objects() {
    // Import reads back which ClusterPolicy points at the configuration,
    // and what destroy leaves depends on what reads the ConfigMap.
    let Some(_no_operator) = common::exclusive::no_gpu_operator("the sharing imports") else {
        return;
    };
    each_identity_cli(|cli| {
        let mut nodes = Nodes(Vec::new());
        let pool_value = unique_name("lab");
        nodes.create("sharing-lab", &[("example.com/pool", &pool_value)], &[]);
        let server = nodes.create("sharing-identity", &[], &[]);
        let ns = OperatorNamespace::new("sharing-identity");
        let shared = unique_name("shared");
        let body = cluster_sharing(
            "  strategy = \"time_slicing\"\n  replicas = 2\n  manage_cluster_policy = false\n",
        ) + &fleet(
            "shared",
            &shared,
            "  accelerators = [\"L4\"]\n  gpu_sharing  = { strategy = \"time_slicing\", replicas = 3 }\n",
        ) + &format!(
            "resource \"gpufleet_node_sharing\" \"dgx\" {{\n  name      = \"dgx\"\n  node_name = \"{server}\"\n  strategy  = \"time_slicing\"\n  replicas  = 4\n}}\n\
             resource \"gpufleet_node_sharing\" \"lab\" {{\n  name          = \"lab\"\n  node_selector = {{ \"example.com/pool\" = \"{pool_value}\" }}\n  strategy      = \"time_slicing\"\n  replicas      = 10\n}}\n"
        );
        let mut ws = Workspace::new(cli);
        ws.config_with_provider(&ns.provider(), &body);
        ws.apply();
        let selector = format!("example.com/pool={pool_value}");
        let identities = [
            (
                "gpufleet_gpu_sharing.default",
                json!({"key": "default"}),
                "{ key = \"default\" }".to_string(),
            ),
            (
                "gpufleet_fleet.shared",
                json!({"name": shared}),
                format!("{{ name = \"{shared}\" }}"),
            ),
            (
                "gpufleet_node_sharing.dgx",
                json!({"name": "dgx", "node_name": server, "node_selector": null}),
                format!("{{ name = \"dgx\", node_name = \"{server}\" }}"),
            ),
            (
                "gpufleet_node_sharing.lab",
                json!({"name": "lab", "node_name": null, "node_selector": selector}),
                format!("{{ name = \"lab\", node_selector = \"{selector}\" }}"),
            ),
        ];
        for (address, identity, _) in &identities {
            assert_eq!(
                &ws.resource(address)["identity"],
                identity,
                "{}: {address}",
                cli.name
            );
        }
        let by_identity: Vec<(&str, &str)> = identities
            .iter()
            .map(|(address, _, hcl)| (*address, hcl.as_str()))
            .collect();
        ws.assert_import_verifies(&by_identity, ImportBy::Identity, &[]);
        destroy_leaves_only_the_unshared_default(&mut ws, &ns);
    });
}

/// kwok playing the kubelet on the nodes annotated for this test, with
/// kwok's own stages (from its module); stopped when dropped.
struct Kwok(Child);

impl Kwok {
    const ANNOTATION: &str = "gpufleet.test/kwok";

    fn start(value: &str) -> Self {
        let root = repo_root();
        // The Go toolchain build.sh used: $GO, `go` on PATH, or the usual place.
        let go = std::env::var_os("GO")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("PATH").and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|d| d.join("go"))
                        .find(|p| p.is_file())
                })
            })
            .unwrap_or_else(|| PathBuf::from("/usr/local/go/bin/go"));
        let out = Command::new(go)
            .args(["mod", "download", "-json", "sigs.k8s.io/kwok"])
            .current_dir(root.join("testbed/kwok"))
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "-mod=mod")
            .output()
            .expect("go runs");
        let info: Value = serde_json::from_slice(&out.stdout).expect("go mod download -json");
        let stages = PathBuf::from(info["Dir"].as_str().unwrap()).join("kustomize/stage");
        let mut command = Command::new(root.join("target/tools/bin/kwok"));
        command
            .arg(format!("--kubeconfig={}", kubeconfig()))
            .arg(format!(
                "--manage-nodes-with-annotation-selector={}={value}",
                Self::ANNOTATION
            ))
            .arg("--server-address=127.0.0.1:0")
            .arg("--cidr=10.246.0.0/16");
        for stage in [
            "node/fast/node-initialize.yaml",
            "pod/fast/pod-ready.yaml",
            "pod/fast/pod-delete.yaml",
        ] {
            command.arg(format!("--config={}", stages.join(stage).display()));
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kwok starts");
        Self(child)
    }
}

impl Drop for Kwok {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The GPU Operator's DaemonSets whose pods read the device-plugin
/// configuration, as the operator's assets define them: the plugin, its MPS
/// control daemon and GPU Feature Discovery (config-manager sidecars with
/// NODE_LABEL nvidia.com/device-plugin.config in each).
const READERS: [&str; 3] = [
    "assets/state-device-plugin/0500_daemonset.yaml",
    "assets/state-mps-control-daemon/0400_daemonset.yaml",
    "assets/gpu-feature-discovery/0500_daemonset.yaml",
];

/// One of the operator's reader DaemonSets, as its asset names and selects
/// its pods, on the test's nodes only; kwok runs its pods.
struct Reader {
    name: String,
    selector: String,
}

impl Reader {
    /// Reads `asset` from the pinned GPU Operator module and creates its
    /// DaemonSet in `namespace`; `None` when the module is not available
    /// (said, and a failure under `make test`).
    fn create(asset: &str, namespace: &str, node_label: &str) -> Option<Self> {
        let text = common::go_module::gpu_operator_file("the GPU Operator's DaemonSets", asset)?;
        let theirs: Value = serde_saphyr::from_str(&text).unwrap();
        let name = theirs["metadata"]["name"].as_str().unwrap().to_string();
        let labels = theirs["spec"]["selector"]["matchLabels"].clone();
        let selector = labels
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
            .collect::<Vec<_>>()
            .join(",");
        let daemon_set: DaemonSet = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": theirs["spec"]["template"]["metadata"]["labels"]},
                    "spec": {
                        "nodeSelector": {node_label: "true"},
                        "containers": [{"name": "reader", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}],
                    },
                },
            },
        }))
        .unwrap();
        block_on(async {
            Api::<DaemonSet>::namespaced(kube_client().await, namespace)
                .create(&PostParams::default(), &daemon_set)
                .await
                .unwrap();
        });
        Some(Self { name, selector })
    }
}

/// Every pod of the readers, whatever its state: (DaemonSet, node) →
/// (uid, whether it is being deleted).
fn reader_pods(namespace: &str, readers: &[Reader]) -> BTreeMap<(String, String), (String, bool)> {
    block_on(async {
        let api = Api::<Pod>::namespaced(kube_client().await, namespace);
        let mut pods = BTreeMap::new();
        for reader in readers {
            let listed = api
                .list(&ListParams::default().labels(&reader.selector))
                .await
                .unwrap();
            for pod in listed.items {
                let running =
                    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                let going = pod.metadata.deletion_timestamp.is_some();
                let Some(node) = pod.spec.and_then(|s| s.node_name) else {
                    continue;
                };
                if running || going {
                    pods.insert(
                        (reader.name.clone(), node),
                        (pod.metadata.uid.unwrap(), going),
                    );
                }
            }
        }
        pods
    })
}

/// Until every reader runs one pod, not being deleted, on each of `nodes`.
fn wait_for_readers(
    namespace: &str,
    readers: &[Reader],
    nodes: &[&str],
) -> BTreeMap<(String, String), (String, bool)> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let pods = reader_pods(namespace, readers);
        let settled = pods.len() == readers.len() * nodes.len()
            && pods.values().all(|(_, going)| !going)
            && readers.iter().all(|r| {
                nodes
                    .iter()
                    .all(|n| pods.contains_key(&(r.name.clone(), n.to_string())))
            });
        if settled {
            return pods;
        }
        assert!(
            Instant::now() < deadline,
            "reader pods not running on {nodes:?}: {pods:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Between `before` and `after`, the pods of every reader restarted (a new
/// uid) on exactly the nodes in `restarted`.
fn assert_restarted(
    cli: &Cli,
    step: &str,
    before: &BTreeMap<(String, String), (String, bool)>,
    after: &BTreeMap<(String, String), (String, bool)>,
    restarted: &[&str],
) {
    for ((reader, node), (uid, _)) in before {
        let new = after[&(reader.clone(), node.clone())].0 != *uid;
        assert_eq!(
            new,
            restarted.contains(&node.as_str()),
            "{}, {step}: {reader} on {node} {}",
            cli.name,
            if new {
                "restarted for nothing"
            } else {
                "not restarted"
            }
        );
    }
}

fn restart_test(cli: &Cli) {
    let ns = OperatorNamespace::new("sharing-restart");
    let run = unique_name("kwok");
    let _kwok = Kwok::start(&run);
    let gpu_node = format!("gpufleet.test/{run}");
    let mut nodes = Nodes(Vec::new());
    let simulated = [(gpu_node.as_str(), "true")];
    let annotations = [(Kwok::ANNOTATION, run.as_str())];
    let plain = nodes.create("gpu-default", &simulated, &annotations);
    let server = nodes.create("gpu-server", &simulated, &annotations);
    // A node of the fleet: Karpenter gives it the NodePool's template
    // labels, which select the fleet's key.
    let pool = unique_name("restart-fleet");
    let fleet_key = format!("fleet-{pool}");
    let fleet_node = nodes.create(
        "gpu-fleet",
        &[
            (gpu_node.as_str(), "true"),
            (CONFIG_LABEL, fleet_key.as_str()),
        ],
        &annotations,
    );
    let Some(readers) = READERS
        .iter()
        .map(|asset| Reader::create(asset, &ns.0, &gpu_node))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let all = [plain.as_str(), server.as_str(), fleet_node.as_str()];
    let at_start = wait_for_readers(&ns.0, &readers, &all);

    let config_restarting = |restart: bool,
                             default_replicas: u32,
                             server_replicas: u32,
                             fleet_replicas: u32| {
        cluster_sharing(&format!(
            "  strategy = \"time_slicing\"\n  replicas = {default_replicas}\n  manage_cluster_policy = false\n  restart_device_plugin = {restart}\n"
        )) + &format!(
            "resource \"gpufleet_node_sharing\" \"server\" {{\n  name      = \"server\"\n  node_name = \"{server}\"\n  strategy  = \"time_slicing\"\n  replicas  = {server_replicas}\n}}\n"
        ) + &fleet(
            "pool",
            &pool,
            &format!(
                "  accelerators      = [\"L4\"]\n  accelerator_count = {{ min = 1, max = 1 }}\n  gpu_sharing       = {{ strategy = \"time_slicing\", replicas = {fleet_replicas} }}\n"
            ),
        )
    };
    let config = |default_replicas, server_replicas, fleet_replicas| {
        config_restarting(true, default_replicas, server_replicas, fleet_replicas)
    };
    let mut ws = Workspace::new(cli);
    ws.config_with_provider(&ns.provider(), &config(4, 2, 2));
    ws.apply();
    // Every node's configuration came into being: all restarted.
    let first = wait_for_readers(&ns.0, &readers, &all);
    assert_restarted(cli, "first apply", &at_start, &first, &all);

    // Only the cluster default changes: only the node using it restarts.
    ws.config_with_provider(&ns.provider(), &config(8, 2, 2));
    ws.apply();
    let second = wait_for_readers(&ns.0, &readers, &all);
    assert_restarted(cli, "default changed", &first, &second, &[&plain]);

    // Only the server's changes.
    ws.config_with_provider(&ns.provider(), &config(8, 3, 2));
    ws.apply();
    let third = wait_for_readers(&ns.0, &readers, &all);
    assert_restarted(cli, "node sharing changed", &second, &third, &[&server]);

    // Only the fleet's changes.
    ws.config_with_provider(&ns.provider(), &config(8, 3, 4));
    ws.apply();
    let fourth = wait_for_readers(&ns.0, &readers, &all);
    assert_restarted(cli, "fleet changed", &third, &fourth, &[&fleet_node]);

    // Nothing changes: an apply leaves every reader alone. A restart is a
    // pod DELETE inside the apply, recorded by the API server before the
    // apply returns (a deletionTimestamp, or the pod gone), so right after
    // it every pod must still be the same and none going.
    ws.apply();
    ws.assert_plan_empty();
    assert_eq!(
        reader_pods(&ns.0, &readers),
        fourth,
        "{}: (DaemonSet, node) → (uid, being deleted) after an apply that changed nothing",
        cli.name
    );

    // With `restart_device_plugin = false` the default changes and nothing
    // restarts, checked right after the apply as above.
    ws.config_with_provider(&ns.provider(), &config_restarting(false, 16, 3, 4));
    ws.apply();
    assert_eq!(
        yaml(&keys(&ns.0).unwrap()["default"])["sharing"]["timeSlicing"]["resources"][0]["replicas"],
        16
    );
    assert_eq!(
        reader_pods(&ns.0, &readers),
        fourth,
        "{}: (DaemonSet, node) → (uid, being deleted) after a change with restart_device_plugin = false",
        cli.name
    );
    ws.destroy();
}

/// The pods of the GPU Operator's device plugin, MPS control daemon and GPU
/// Feature Discovery are restarted exactly on the nodes whose configuration
/// changed (the cluster default, a node-sharing key, a fleet's key), and
/// left alone otherwise, and when `restart_device_plugin` is false.
#[test]
fn device_plugin_restarted_exactly_when_its_config_changed() {
    // Its sharing is read by the device plugin only without another
    // test's ClusterPolicy (which would read no gpufleet ConfigMap).
    let Some(_no_operator) = common::exclusive::no_gpu_operator("the device plugin restarts")
    else {
        return;
    };
    each_cli(restart_test);
}

/// What NVIDIA allows applies, though gpufleet once refused it: time
/// slicing beyond 48 (the device plugin has no upper bound), MPS on Pascal
/// (with a plan warning citing NVIDIA's MPS documentation) and a MIG fleet
/// with `all-disabled` time-sliced (whole GPUs shared); a second plan is
/// empty and destroy removes the keys.
#[test]
fn what_nvidia_allows_applies() {
    // Plans check its MIG or MPS sharing against the ClusterPolicy.
    let Some(_no_operator) = common::exclusive::no_gpu_operator("what NVIDIA allows, applied")
    else {
        return;
    };
    each_cli(|cli| {
        let ns = OperatorNamespace::new("sharing-allowed");
        let (pascal, whole) = (unique_name("pascal"), unique_name("mig-off"));
        let body = cluster_sharing(
            "  strategy = \"time_slicing\"\n  replicas = 64\n  manage_cluster_policy = false\n",
        ) + &fleet(
            "pascal",
            &pascal,
            "  accelerators = [\"P100\"]\n  gpu_sharing  = { strategy = \"mps\", replicas = 16 }\n",
        ) + &fleet(
            "whole",
            &whole,
            "  accelerators      = [\"H100\"]\n  accelerator_count = { min = 8, max = 8 }\n  gpu_sharing       = { strategy = \"mig\", mig_layout = \"all-disabled\", replicas = 4 }\n",
        );
        let mut ws = Workspace::new(cli);
        ws.config_with_provider(&ns.provider(), &body);
        let run = ws.apply();
        let said: String = (run.stdout + &run.stderr)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            said.contains("MPS before Volta")
                && said.contains("Multi-Process Service documentation"),
            "{}: no warning about MPS on Pascal:\n{said}",
            cli.name
        );
        let live = keys(&ns.0).expect("the ConfigMap exists");
        let replicas = |key: &str, block: &str| {
            let config = yaml(&live[key]);
            (
                config["sharing"][block]["resources"][0]["name"].clone(),
                config["sharing"][block]["resources"][0]["replicas"].clone(),
            )
        };
        assert_eq!(
            replicas("default", "timeSlicing"),
            (json!("nvidia.com/gpu"), json!(64))
        );
        assert_eq!(
            replicas(&format!("fleet-{pascal}"), "mps"),
            (json!("nvidia.com/gpu"), json!(16))
        );
        assert_eq!(
            replicas(&format!("fleet-{whole}"), "timeSlicing"),
            (json!("nvidia.com/gpu"), json!(4))
        );
        let fleet = ws.resource_values("gpufleet_fleet.whole");
        assert_eq!(fleet["gpu_resource"], "nvidia.com/gpu", "{fleet}");
        assert_eq!(fleet["gpus_per_node_advertised"], 32, "{fleet}");
        ws.assert_plan_empty();
        destroy_leaves_only_the_unshared_default(&mut ws, &ns);
    });
}

/// Every combination the device plugin or the GPU cannot run fails
/// `validate` (no cluster needed), naming the attribute and the model, each
/// error on its resource. Terraform cannot point inside an object
/// expression, so a fleet's `gpu_sharing` errors quote the resource and
/// name the path themselves; top-level attributes are quoted at their line.
#[test]
fn bad_combinations_fail_at_plan_time() {
    let cases = [
        (
            "[\"L4\"]",
            "{ strategy = \"mig\", mig_layout = \"all-1g.10gb\" }",
            "`gpu_sharing.strategy`: L4 has no MIG",
        ),
        (
            "[\"H200\"]",
            "{ strategy = \"mig\", mig_layout = \"all-1g.10gb\" }",
            "`gpu_sharing.mig_layout`: H200 has no layout `all-1g.10gb`; its layouts are",
        ),
        (
            "[\"H100\", \"H200\"]",
            "{ strategy = \"mig\", mig_layout = \"all-1g.10gb\" }",
            "`gpu_sharing.mig_layout`: H200 has no layout `all-1g.10gb`",
        ),
        (
            "[\"L4\"]",
            "{ strategy = \"time_slicing\", replicas = 1 }",
            "gpu_sharing.replicas: 1 is below 2",
        ),
        (
            "[\"L4\"]",
            "{ strategy = \"mps\", replicas = 49 }",
            "`gpu_sharing.replicas`: 49 is more MPS clients than NVIDIA's MPS control daemon serves per GPU: at most 48",
        ),
        (
            "[\"V100-16GB\"]",
            "{ strategy = \"mps\", replicas = 20 }",
            "`gpu_sharing.replicas`: 20 is more MPS clients than V100-16GB serves per GPU: at most 16",
        ),
        (
            "null",
            "{ strategy = \"mig\", mig_layout = \"all-1g.10gb\" }",
            "`gpu_sharing.strategy`: MIG depends on the GPU model, and the fleet sets no `accelerators`",
        ),
        (
            "[\"H200-NVL\"]",
            "{ strategy = \"mig\", mig_layout = \"all-1g.35gb\" }",
            "`gpu_sharing.mig_layout`: the GPU Operator's default mig-manager configuration (assets/state-mig-manager/0400_configmap.yaml) restricts `all-1g.35gb` to other PCI devices, so the H200-NVL (0x233B10DE) would keep",
        ),
    ];
    let mut body = String::new();
    for (i, (accelerators, sharing, _)) in cases.iter().enumerate() {
        body += &fleet(
            &format!("f{i}"),
            &format!("f{i}"),
            &format!("  accelerators = {accelerators}\n  gpu_sharing  = {sharing}\n"),
        );
    }
    body +=
        "resource \"gpufleet_gpu_sharing\" \"many\" {\n  strategy = \"mps\"\n  replicas = 49\n}\n";
    body += "resource \"gpufleet_gpu_sharing\" \"mig\" {\n  strategy = \"mig\"\n}\n";
    // The model that covers both H200 parts: a warning, not an error.
    body += &fleet(
        "h200",
        "h200",
        "  accelerators = [\"H200\"]\n  gpu_sharing  = { strategy = \"mig\", mig_layout = \"all-1g.35gb\" }\n",
    );
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(&body);
        let out = ws.validate_fails();
        let blocks: Vec<String> = out
            .split("Error: ")
            .skip(1)
            .map(|b| b.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        let find = |resource: &str, message: &str| {
            blocks
                .iter()
                .find(|b| b.contains(&format!("with {resource},")) && b.contains(message))
                .unwrap_or_else(|| {
                    panic!("{}: no error {message:?} on {resource}:\n{out}", cli.name)
                })
                .clone()
        };
        for (i, (_, _, message)) in cases.iter().enumerate() {
            let block = find(&format!("gpufleet_fleet.f{i}"), message);
            assert!(
                block.contains(&format!("resource \"gpufleet_fleet\" \"f{i}\"")),
                "{block}"
            );
        }
        assert!(
            find("gpufleet_gpu_sharing.many", "49 is more MPS clients than")
                .contains("replicas = 49")
        );
        let block = find(
            "gpufleet_gpu_sharing.mig",
            "\"mig\" is not one of \"none\", \"time_slicing\", \"mps\"",
        );
        assert!(block.contains("strategy = \"mig\""), "{block}");
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("Warning: MIG layout not applied to every part")
                && flat.contains("applies `all-1g.35gb` only to \"H200-SXM\" by PCI device ID"),
            "{}: no part warning for the H200 fleet:\n{out}",
            cli.name
        );
        assert_eq!(
            blocks.len(),
            cases.len() + 2,
            "{}: unexpected errors:\n{out}",
            cli.name
        );
    });
}

/// The catalog data source lists, per model, the MIG layouts with what each
/// GPU advertises in them, the MPS client cap and the resource names, and per
/// part the layouts mig-manager applies to it: `all-1g.35gb` to the H200 SXM
/// only, as the fleet's validation holds it to.
#[test]
fn accelerators_list_what_sharing_needs() {
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(
            "data \"gpufleet_accelerators\" \"h200\" {\n  names = [\"H200\"]\n}\n\noutput \"h200\" {\n  value = data.gpufleet_accelerators.h200.accelerators[0]\n}\n",
        );
        ws.apply();
        let h200 = ws.state()["values"]["outputs"]["h200"]["value"].clone();
        assert_eq!(h200["max_mps_clients"], 48);
        let layouts = h200["mig_layouts"].as_array().unwrap();
        assert!(
            layouts.contains(
                &json!({"name": "all-1g.18gb", "resources": {"nvidia.com/mig-1g.18gb": 7}})
            ),
            "{layouts:?}"
        );
        assert!(layouts.contains(&json!({"name": "all-balanced", "resources": {
            "nvidia.com/mig-1g.18gb": 2, "nvidia.com/mig-2g.35gb": 1, "nvidia.com/mig-3g.71gb": 1}})));
        assert!(!layouts.iter().any(|l| l["name"] == "all-1g.10gb"));
        let all_1g_35gb =
            json!({"name": "all-1g.35gb", "resources": {"nvidia.com/mig-1g.35gb": 4}});
        assert!(!layouts.contains(&all_1g_35gb), "{layouts:?}");
        let parts = h200["parts"].as_array().unwrap();
        let part = |name: &str| {
            let part = parts.iter().find(|p| p["name"] == name).unwrap();
            part["mig_layouts"].as_array().unwrap().clone()
        };
        assert!(part("H200-SXM").contains(&all_1g_35gb), "{parts:?}");
        assert_eq!(&part("H200-NVL"), layouts, "{}", cli.name);
        assert!(
            h200["resource_names"]
                .as_array()
                .unwrap()
                .contains(&json!("nvidia.com/gpu.shared"))
        );
        assert_eq!(
            h200["mig_profiles"][0]["resource"],
            "nvidia.com/mig-1g.18gb"
        );
    });
}

/// Planning warns, not fails, where sharing meets training: a fleet with
/// no `gpu_sharing` in a cluster whose default key shares (read from the
/// cluster, so it tells once the default is applied, whatever else the
/// run plans), and a fleet tainted for training that shares its GPUs.
#[test]
fn training_caveats_are_plan_warnings() {
    // Plans check its MIG or MPS sharing against the ClusterPolicy.
    let _no_policy = common::exclusive::no_cluster_policy();
    each_cli(|cli| {
        let ns = OperatorNamespace::new("sharing-caveats");
        // Not the cluster's ClusterPolicy to point: it may be someone else's.
        let default = cluster_sharing(
            "  strategy = \"time_slicing\"\n  replicas = 4\n  manage_cluster_policy = false\n",
        );
        let mut ws = Workspace::new(cli);
        ws.config_with_provider(&ns.provider(), &default);
        ws.apply();
        let body = default
            + &fleet(
                "training",
                &unique_name("training"),
                common::fixtures::TRAINING,
            )
            + &fleet(
                "shared_training",
                &unique_name("shared-training"),
                "  accelerators = [\"H100\"]\n  taints       = [{ key = \"workload\", value = \"training\", effect = \"NoSchedule\" }]\n  gpu_sharing  = { strategy = \"mps\", replicas = 4 }\n",
            );
        ws.config_with_provider(&ns.provider(), &body);
        let plan = ws.plan();
        assert!(plan.has_changes);
        let out = plan.text;
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("Warning: Fleet gets the cluster-wide GPU sharing"),
            "{}:\n{out}",
            cli.name
        );
        assert!(
            flat.contains("sets no `gpu_sharing`, so its nodes take the cluster-wide default under key `default` of")
                && flat.contains("(time_slicing × 4)"),
            "{out}"
        );
        assert_eq!(
            flat.matches("Warning: Fleet gets the cluster-wide GPU sharing")
                .count(),
            1,
            "{out}"
        );
        assert!(
            flat.contains("Warning: GPU sharing on a training fleet"),
            "{out}"
        );
    });
}
