//! A MIG fleet under the GPU Operator's ClusterPolicy, whose
//! `spec.mig.strategy` every node's device plugin runs with: the provider's
//! own ConfigMap (the one the simulated device plugin reads), Karpenter
//! launching the fleet's node, the real scheduler placing a pod on its MIG
//! devices. It holds the cluster's one ClusterPolicy (`common::exclusive`).

use common::fixtures::{Guard, HelmClusterPolicy, cluster_policies, fleet};
use common::scenario::lookups::wait_for;
use common::terraform::{Workspace, each_cli};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::json;

const MIG_DEVICE: &str = "nvidia.com/mig-1g.10gb";

fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An H100 fleet partitioned `all-1g.10gb`, with no cluster-wide MIG
/// strategy declared, over a ClusterPolicy that Helm made with
/// `mig.strategy = single`: unmanaged, the plan fails with the fix (and
/// for `all-balanced`, which NVIDIA's plugin refuses under `single`, and
/// for a node sharing's MIG layout); once a
/// `gpufleet_gpu_sharing` manages the ClusterPolicy, applying the fleet sets
/// `mixed` (the plan says so), its node advertises `nvidia.com/mig-1g.10gb`
/// ×56, a pod asking for the fleet's `gpu_resource` is scheduled there, an
/// MPS fleet is then refused at plan with NVIDIA's reason, and destroy
/// gives `single` back to Helm.
#[test]
fn mig_fleet_gets_the_mixed_strategy_it_needs() {
    let _only_policy = common::exclusive::own_cluster_policy();
    each_cli(|cli| {
        let helm = HelmClusterPolicy::install(Some("single"));
        let policy = helm.0.clone();
        block_on(async {
            let client = kube_client().await;
            let policies = cluster_policies(&client);
            let name = unique_name("mig-fleet");
            let _guard = (
                Guard::node_pools(&[&name]),
                Guard::of::<Namespace>(&[&name]),
            );
            let taint = format!(
                "  taints = [{{ key = \"gpufleet.test/mig\", value = \"{name}\", effect = \"NoSchedule\" }}]\n"
            );
            let mig_fleet = fleet(
                "mig",
                &name,
                &format!(
                    "  accelerators      = [\"H100\"]\n  accelerator_count = {{ min = 8, max = 8 }}\n  gpu_sharing       = {{ strategy = \"mig\", mig_layout = \"all-1g.10gb\" }}\n{taint}"
                ),
            );
            let sharing =
                "resource \"gpufleet_gpu_sharing\" \"default\" {\n  strategy = \"none\"\n}\n";

            // Unmanaged: NVIDIA's plugin would advertise each MIG device as
            // a whole GPU, and refuses mixed layouts altogether.
            let balanced = fleet(
                "balanced",
                &unique_name("balanced-fleet"),
                "  accelerators = [\"H100\"]\n  gpu_sharing  = { strategy = \"mig\", mig_layout = \"all-balanced\" }\n",
            );
            let node_sharing = format!(
                "resource \"gpufleet_node_sharing\" \"dgx\" {{\n  name       = \"{}\"\n  node_name  = \"dgx-1\"\n  strategy   = \"mig\"\n  mig_layout = \"all-1g.10gb\"\n}}\n",
                unique_name("dgx")
            );
            let mut ws = Workspace::new(cli);
            ws.config(&(mig_fleet.clone() + &balanced + &node_sharing));
            let out = flat(&ws.apply_fails());
            assert!(
                out.split("Error: ")
                    .any(|b| b.starts_with("MIG needs the mixed MIG strategy")
                        && b.contains("with gpufleet_node_sharing.dgx,")
                        && b.contains("mig_layout = \"all-1g.10gb\"")),
                "{}: no error on the node sharing: {out}",
                cli.name
            );
            let balanced_error = out
                .split("Error: ")
                .find(|b| b.contains("with gpufleet_fleet.balanced,"))
                .unwrap_or_else(|| panic!("{}: no error on the balanced fleet: {out}", cli.name));
            assert!(
                balanced_error.starts_with("MIG needs the mixed MIG strategy")
                    && balanced_error
                        .contains("would advertise nothing (the device plugin refuses to start)")
                    && balanced_error.contains("gpu_sharing.mig_layout"),
                "{balanced_error}"
            );
            assert!(
                out.contains("Error: MIG needs the mixed MIG strategy")
                    && out.contains(&format!("runs every node's device plugin with `spec.mig.strategy = \"single\"`, under which its nodes would advertise 7 × `nvidia.com/gpu` per GPU instead of the 7 × `{MIG_DEVICE}` per GPU"))
                    && out.contains("declare a gpufleet_gpu_sharing with `manage_cluster_policy = true`"),
                "{}: {out}",
                cli.name
            );
            assert!(out.contains("with gpufleet_fleet.mig"), "{out}");
            assert!(
                common::fixtures::node_pool_api()
                    .await
                    .get_opt(&name)
                    .await
                    .unwrap()
                    .is_none()
            );

            // Managed: the fleet's apply sets `mixed`.
            ws.config(sharing);
            ws.apply();
            ws.config(&(sharing.to_string() + &mig_fleet));
            let plan = ws.plan();
            assert!(
                flat(&plan.text).contains("Warning: gpufleet sets the mixed MIG strategy"),
                "{}: {}",
                cli.name,
                plan.text
            );
            ws.apply();
            let live = policies.get(&policy).await.unwrap();
            assert_eq!(live.data["spec"]["mig"]["strategy"], "mixed");
            let values = ws.resource_values("gpufleet_fleet.mig");
            assert_eq!(values["gpu_resource"], MIG_DEVICE);
            assert_eq!(values["gpus_per_node_advertised"], 56);
            ws.assert_plan_empty();

            // Karpenter launches the node, the stand-in advertises what
            // NVIDIA's plugin would under `mixed`, the scheduler binds.
            let namespace: Namespace =
                serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &namespace)
                .await
                .unwrap();
            let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "inference"}, "spec": {
                "nodeSelector": {"karpenter.sh/nodepool": name},
                "tolerations": [{"key": "gpufleet.test/mig", "operator": "Equal", "value": name, "effect": "NoSchedule"}],
                "containers": [{"name": "c", "image": "registry.example/c:1",
                    "resources": {"limits": {MIG_DEVICE: "1"}}}],
            }}))
            .unwrap();
            let pods = Api::<Pod>::namespaced(client.clone(), &name);
            pods.create(&PostParams::default(), &pod).await.unwrap();
            let node = wait_for(&client, "the MIG pod's node", 120, async || {
                pods.get("inference").await.unwrap().spec?.node_name
            })
            .await;
            let nodes = Api::<Node>::all(client.clone());
            let allocatable = nodes
                .get(&node)
                .await
                .unwrap()
                .status
                .and_then(|s| s.allocatable)
                .unwrap_or_default();
            let of = |resource: &str| allocatable.get(resource).map(|q| q.0.clone());
            assert_eq!(
                (of(MIG_DEVICE), of("nvidia.com/gpu")),
                (Some("56".into()), Some("0".into())),
                "{}: {node}",
                cli.name
            );

            // Under `mixed` NVIDIA's plugin refuses MPS: so does the plan.
            let mps_fleet = fleet(
                "mps",
                &unique_name("mps-fleet"),
                "  accelerators = [\"L4\"]\n  gpu_sharing  = { strategy = \"mps\", replicas = 4 }\n",
            );
            ws.config(&(sharing.to_string() + &mig_fleet + &mps_fleet));
            let out = flat(&ws.apply_fails());
            assert!(
                out.contains("Error: MPS with the mixed MIG strategy")
                    && out.contains("using --mig-strategy=mixed is not supported with MPS")
                    && out.contains("with gpufleet_fleet.mps"),
                "{}: {out}",
                cli.name
            );

            Api::<Namespace>::all(client.clone())
                .delete(&name, &DeleteParams::default())
                .await
                .unwrap();
            ws.config(&(sharing.to_string() + &mig_fleet));
            ws.destroy();
            let live = policies.get(&policy).await.unwrap();
            assert_eq!(
                live.data["spec"]["mig"]["strategy"], "single",
                "{}",
                cli.name
            );
            let of_pool = ListParams::default().labels(&format!("karpenter.sh/nodepool={name}"));
            wait_for(&client, "the fleet's node to go with it", 120, async || {
                nodes
                    .list(&of_pool)
                    .await
                    .unwrap()
                    .items
                    .is_empty()
                    .then_some(())
            })
            .await;
        });
        drop(helm);
    });
}
