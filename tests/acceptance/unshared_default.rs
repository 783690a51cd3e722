//! The device-plugin ConfigMap outlives its last key while a device plugin
//! may read it (issue 33, item 6). NVIDIA's device plugin does not start
//! without the ConfigMap it is configured with, nor without its default
//! key, so that every GPU node would advertise no GPU, fleets that never
//! shared included. The simulated device plugin reads the provider's
//! ConfigMap in `gpu-operator` as the standalone chart installed as
//! gpufleet's warning says (`config.default=default`), or as the GPU
//! Operator's ClusterPolicy names it. In each case the last sharing fleet
//! goes, Karpenter launches a whole-GPU fleet's node for a pod asking for
//! `nvidia.com/gpu`, and the real scheduler binds the pod there on the GPU
//! the node advertises.

use std::collections::BTreeMap;

use common::fixtures::{Guard, HelmClusterPolicy, fleet, fleet_nodes_gone, one_pod_on_fleet};
use common::terraform::{Workspace, each_cli};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use serde_json::json;

const NAMESPACE: &str = "gpu-operator";
const CONFIG_MAP: &str = "gpufleet-device-plugin";
/// Who holds the `default` key that shares nothing.
const PLACEHOLDER: &str = "gpufleet-unshared-default";
/// What `gpufleet_gpu_sharing { strategy = "none" }` writes.
const UNSHARED: &str = "version: v1\nflags:\n  migStrategy: none\n";
const TAINT: &str = "gpufleet.test/unshared-default";

/// The ConfigMap's keys and the managers that hold each; `None` when it
/// does not exist.
fn live_keys() -> Option<BTreeMap<String, (String, Vec<String>)>> {
    block_on(async {
        let map = Api::<ConfigMap>::namespaced(kube_client().await, NAMESPACE)
            .get_opt(CONFIG_MAP)
            .await
            .unwrap()?;
        let managed = map.metadata.managed_fields.unwrap_or_default();
        Some(
            map.data
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| {
                    let holders = managed
                        .iter()
                        .filter(|m| {
                            m.fields_v1
                                .as_ref()
                                .is_some_and(|f| !f.0["f:data"][format!("f:{key}")].is_null())
                        })
                        .filter_map(|m| m.manager.clone())
                        .collect();
                    (key, (value, holders))
                })
                .collect(),
        )
    })
}

/// The ConfigMap holds the placeholder under `default`, and `fleet_key`
/// beside it or not.
fn assert_placeholder(cli: &str, fleet_key: &str, beside: bool) {
    let keys = live_keys().unwrap_or_else(|| panic!("{cli}: the ConfigMap is gone"));
    let (value, holders) = &keys["default"];
    assert_eq!(
        (value.as_str(), holders.as_slice()),
        (UNSHARED, [PLACEHOLDER.to_string()].as_slice()),
        "{cli}: {keys:?}"
    );
    assert_eq!(keys.contains_key(fleet_key), beside, "{cli}: {keys:?}");
}

/// Two fleets of one GPU per node, each tainted for the test: `shared`
/// time-sliced 2 ways, `whole` without `gpu_sharing`.
fn fleets(shared: &str, whole: &str) -> (String, String) {
    let body = |name: &str, sharing: &str| {
        format!(
            "  accelerators      = [\"L4\"]\n  accelerator_count = {{ min = 1, max = 1 }}\n  taints            = [{{ key = \"{TAINT}\", value = \"{name}\", effect = \"NoSchedule\" }}]\n{sharing}"
        )
    };
    (
        fleet(
            "shared",
            shared,
            &body(
                shared,
                "  gpu_sharing       = { strategy = \"time_slicing\", replicas = 2 }\n",
            ),
        ),
        fleet("whole", whole, &body(whole, "")),
    )
}

/// A pod asking for one `nvidia.com/gpu` on fleet `whole` (in a namespace
/// of that name, which the caller removes): Karpenter launches the node,
/// the scheduler binds the pod once the node advertises its GPU.
async fn whole_gpu_pod_is_scheduled(cli: &str, whole: &str) {
    let client = kube_client().await;
    let (node, allocatable) = one_pod_on_fleet(&client, whole, TAINT, "nvidia.com/gpu").await;
    assert_eq!(
        allocatable.get("nvidia.com/gpu").map(String::as_str),
        Some("1"),
        "{cli}: {node}"
    );
}

/// No GPU Operator: the standalone chart may read the ConfigMap. The
/// placeholder `default` is written beside the first fleet key and stays
/// when the last one goes; a whole-GPU fleet's pod then gets a node that
/// advertises its GPU. The placeholder is no `gpufleet_gpu_sharing`: an
/// import finds nothing; one created takes the key over (its import then
/// verifies), and its destroy puts the placeholder back. Destroying
/// everything leaves the placeholder alone, which a device plugin may
/// still read.
#[test]
fn standalone_plugin_keeps_its_default_after_the_last_sharing_fleet() {
    let Some(_no_operator) = common::exclusive::no_gpu_operator("the standalone plugin's default")
    else {
        return;
    };
    each_cli(|cli| {
        let (shared, whole) = (unique_name("unshared-s"), unique_name("unshared-w"));
        let _guard = (
            Guard::node_pools(&[&shared, &whole]),
            Guard::of::<Namespace>(&[&whole]),
        );
        let (shared_fleet, whole_fleet) = fleets(&shared, &whole);
        let shared_key = format!("fleet-{shared}");
        let mut ws = Workspace::new(cli);
        ws.config(&(shared_fleet + &whole_fleet));
        ws.apply();
        assert_placeholder(cli.name, &shared_key, true);

        // The last sharing fleet goes: the ConfigMap stays, unshared.
        ws.config(&whole_fleet);
        ws.apply();
        assert_placeholder(cli.name, &shared_key, false);
        block_on(whole_gpu_pod_is_scheduled(cli.name, &whole));

        let cluster_sharing =
            |body: &str| format!("resource \"gpufleet_gpu_sharing\" \"default\" {{\n{body}}}\n");
        ws.config(&(whole_fleet.clone() + &cluster_sharing("  strategy = \"none\"\n")));
        let import = ws.run(&[
            "import",
            "-no-color",
            "-input=false",
            "gpufleet_gpu_sharing.default",
            "default",
        ]);
        assert!(
            !import.success
                && (import.stdout.clone() + &import.stderr).contains("non-existent remote object"),
            "{}: the placeholder imported:\n{}\n{}",
            cli.name,
            import.stdout,
            import.stderr
        );
        let time_sliced = cluster_sharing(
            "  strategy = \"time_slicing\"\n  replicas = 2\n  manage_cluster_policy = false\n",
        );
        ws.config(&(whole_fleet.clone() + &time_sliced));
        ws.apply();
        let keys = live_keys().unwrap();
        assert_eq!(
            keys["default"].1,
            ["gpufleet-sharing-default"],
            "{}: {keys:?}",
            cli.name
        );
        ws.assert_import_verifies(
            &[
                ("gpufleet_gpu_sharing.default", "default"),
                ("gpufleet_fleet.whole", &whole),
            ],
            common::terraform::ImportBy::Command,
            &[],
        );
        ws.config(&whole_fleet);
        ws.apply();
        assert_placeholder(cli.name, &shared_key, false);

        block_on(async {
            Api::<Namespace>::all(kube_client().await)
                .delete(&whole, &Default::default())
                .await
                .unwrap();
        });
        ws.destroy();
        assert_placeholder(cli.name, &shared_key, false);
        block_on(async { fleet_nodes_gone(&kube_client().await, &whole).await });
    });
}

/// The GPU Operator, its ClusterPolicy pointed at the ConfigMap by its own
/// Helm values (no `gpufleet_gpu_sharing`): the ConfigMap stays with the
/// placeholder when the last sharing fleet goes, and a whole-GPU fleet's
/// pod gets a node that advertises its GPU. Pointed elsewhere, nothing
/// reads the ConfigMap, and the last key takes it away.
#[test]
fn operator_pointed_at_the_config_map_keeps_it() {
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli| {
        let helm = HelmClusterPolicy::install(None);
        // A `helm upgrade` with `devicePlugin.config` in its values.
        let helm_values = |name: &str, default: &str| {
            helm.edit(
                "helm",
                json!({"devicePlugin": {"config": {"name": name, "default": default}}}),
            );
        };
        helm_values(CONFIG_MAP, "default");
        let (shared, whole) = (unique_name("unshared-s"), unique_name("unshared-w"));
        let _guard = (
            Guard::node_pools(&[&shared, &whole]),
            Guard::of::<Namespace>(&[&whole]),
        );
        let (shared_fleet, whole_fleet) = fleets(&shared, &whole);
        let shared_key = format!("fleet-{shared}");
        let mut ws = Workspace::new(cli);
        ws.config(&(shared_fleet.clone() + &whole_fleet));
        ws.apply();
        assert_placeholder(cli.name, &shared_key, true);
        ws.config(&whole_fleet);
        ws.apply();
        assert_placeholder(cli.name, &shared_key, false);
        block_on(whole_gpu_pod_is_scheduled(cli.name, &whole));
        block_on(async {
            Api::<Namespace>::all(kube_client().await)
                .delete(&whole, &Default::default())
                .await
                .unwrap();
        });

        // Helm's own values again once a sharing fleet is there (one whose
        // sharing nothing reads could not be written): the operator no
        // longer reads our map, and the last key's release takes it away.
        ws.config(&(shared_fleet + &whole_fleet));
        ws.apply();
        helm_values("", "");
        ws.config(&whole_fleet);
        ws.apply();
        assert_eq!(live_keys(), None, "{}: nothing reads it", cli.name);
        ws.destroy();
        block_on(async { fleet_nodes_gone(&kube_client().await, &whole).await });
        drop(helm);
    });
}
