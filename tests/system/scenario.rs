//! The seed scenario (common::scenario, which `make demo` runs too) with
//! every CLI, and what the scenario relies on of Karpenter: that GPU
//! requirements select instance types. Needs a cluster started with
//! `testbed/cluster.sh up --karpenter --kueue` (the whole scenario's
//! training teams queue through Kueue; `--karpenter=aws` for the scenario
//! on EC2's instance types, which has no queues).

use std::collections::BTreeSet;

use common::fixtures::Guard;
use common::scenario::lookups::{
    GPU, INSTANCE_TYPE, POOL, is_running, karpenter_failure, label, node_of, nodes_of_pool,
    wait_for,
};
use common::scenario::{Audience, Cloud, Length, Scenario, Sharing, karpenter_offers_ec2_types};
use common::terraform::{Workspace, clis, each_cli};
use common::{block_on, kube_client, kubeconfig, unique_name};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, PostParams};

// ------------------------------------------------------------------ the scenario

/// The whole scenario with the first CLI and the seed's time slicing; then
/// the shorter run (apply, placement, an empty second plan, destroy) with
/// the inference fleet under MPS and under MIG, on the other CLI first so
/// every CLI plays it. Running it all with every CLI would add about three
/// minutes to every `make test` for no behaviour the first run has not
/// shown: what differs between the CLIs is their side of the protocol, and
/// what differs between the sharing modes is the inference node, which the
/// short run covers.
#[test]
fn training_and_inference_side_by_side() {
    // It starts from the GPU Operator's ClusterPolicy as Helm installs it.
    let _only_policy = common::exclusive::own_cluster_policy();
    let (full, others) = clis().split_first().expect("a CLI");
    let short_runs = others
        .iter()
        .chain(clis().iter().cycle())
        .zip([Sharing::Mps, Sharing::Mig]);
    block_on(async {
        let (kubeconfig, provider) = (kubeconfig(), common::provider_kubeconfig());
        Scenario::new(full, &kubeconfig, Audience::Test(Length::Full))
            .await
            .with_provider_kubeconfig(&provider)
            .play()
            .await;
        for (cli, sharing) in short_runs {
            Scenario::new(cli, &kubeconfig, Audience::Test(Length::Short))
                .await
                .with_provider_kubeconfig(&provider)
                .with_sharing(sharing)
                .play()
                .await;
        }
    });
}

/// The scenario on EC2's instance types, its fleets written under
/// `label_scheme = "aws"`: the training fleet gets p5.48xlarge, the spot
/// training fleet of A100s p4d or p4de spot nodes, inference (time-sliced
/// x4, on-demand) one g6 or gr6 node for its four replicas, the CPU fleet
/// m7i. The whole run with the last CLI (the cfke run's whole one has the
/// first) and the short one with each other.
#[test]
#[ignore = "make test runs it on a cluster of its own whose Karpenter offers EC2's instance types (`testbed/cluster.sh up --karpenter=aws`)"]
fn training_and_inference_on_ec2() {
    if !karpenter_offers_ec2_types("the scenario on EC2's instance types") {
        return;
    }
    let _only_policy = common::exclusive::own_cluster_policy();
    let (full, others) = clis().split_last().expect("a CLI");
    let runs =
        std::iter::once((full, Length::Full)).chain(others.iter().map(|cli| (cli, Length::Short)));
    block_on(async {
        let (kubeconfig, provider) = (kubeconfig(), common::provider_kubeconfig());
        for (cli, length) in runs {
            Scenario::new(cli, &kubeconfig, Audience::Test(length))
                .await
                .with_provider_kubeconfig(&provider)
                .on(Cloud::Ec2)
                .play()
                .await;
        }
    });
}

/// A fleet that lets fractional GPUs in (`accelerator_count = { min = 0,
/// max = 1 }`, under `label_scheme = "aws"`) gets EC2's fractional L4 for a
/// pod requesting one `nvidia.com/gpu`: karpenter-provider-aws plans g6f
/// with none (EC2's GPU count is 0, pkg/providers/instancetype/types.go,
/// nvidiaGPUs), and the provider's NodeOverlay gives it the one GPU NVIDIA's
/// device plugin advertises there, times the replicas when shared: the
/// first CLI's fleet keeps its GPUs dedicated, the next time-slices them
/// ×2. The overlay reads back (second plan empty, import), its deletion
/// shows in the next plan, destroy removes it.
#[test]
#[ignore = "make test runs it on a cluster of its own whose Karpenter offers EC2's instance types (`testbed/cluster.sh up --karpenter=aws`)"]
fn fractional_gpus_on_ec2() {
    if !karpenter_offers_ec2_types("fractional GPUs on EC2's instance types") {
        return;
    }
    let _no_policy = common::exclusive::no_cluster_policy();
    let sharing = [
        (r#"{ strategy = "none" }"#, "1"),
        (r#"{ strategy = "time_slicing", replicas = 2 }"#, "2"),
    ];
    for (cli, (gpu_sharing, gpus)) in clis().iter().zip(sharing.into_iter().cycle()) {
        block_on(async {
            let client = kube_client().await;
            let name = unique_name("fractional");
            let overlays = common::fixtures::node_overlays(&client);
            let overlay = format!("{name}-1-gpus");
            let mut ws = Workspace::new(cli);
            ws.config(&common::fixtures::fleet(
                "fractional",
                &name,
                &format!(
                    r#"  label_scheme      = "aws"
  accelerators      = ["L4"]
  accelerator_count = {{ min = 0, max = 1 }}
  instance_families = ["g6f"]
  gpu_sharing       = {gpu_sharing}
  taints            = [{{ key = "gpufleet.test/select", value = "{name}", effect = "NoSchedule" }}]
"#
                ),
            ));
            ws.apply();
            ws.assert_plan_empty();
            let live = overlays.get(&overlay).await.unwrap();
            assert_eq!(
                live.data["spec"],
                serde_json::json!({
                    "requirements": [{"key": POOL, "operator": "In", "values": [name]}],
                    "capacity": {GPU: gpus},
                }),
                "every node of the fleet shows one GPU, so the NodePool alone selects them"
            );
            ws.assert_import_verifies(
                &[("gpufleet_fleet.fractional", &name)],
                common::terraform::ImportBy::Command,
                &[],
            );

            let mut cleanup = Guard::of::<Namespace>(&[&name]);
            Api::<Namespace>::all(client.clone())
                .create(
                    &PostParams::default(),
                    &json_as(&format!(
                        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#
                    )),
                )
                .await
                .unwrap();
            let pods = Api::<Pod>::namespaced(client.clone(), &name);
            let pod: Pod = json_as(&format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"one-gpu"}},"spec":{{
                    "nodeSelector":{{"{POOL}":"{name}"}},
                    "tolerations":[{{"key":"gpufleet.test/select","operator":"Equal","value":"{name}","effect":"NoSchedule"}}],
                    "containers":[{{"name":"c","image":"registry.example/c:1",
                      "resources":{{"requests":{{"cpu":"1"}},"limits":{{"{GPU}":"1"}}}}}}]}}}}"#
            ));
            pods.create(&PostParams::default(), &pod).await.unwrap();
            let running = wait_for(&client, "the pod on a fractional L4", 120, async || {
                pods.get_opt("one-gpu").await.unwrap().filter(is_running)
            })
            .await;
            let node = Api::<Node>::all(client.clone())
                .get(node_of(&running).unwrap())
                .await
                .unwrap();
            let instance_type = label(&node, INSTANCE_TYPE).unwrap_or_default();
            assert!(
                instance_type.starts_with("g6f."),
                "{}: the fleet admits g6f alone, got {instance_type}",
                cli.name
            );
            // What the stand-in for NVIDIA's device plugin advertises there.
            let allocatable = node.status.and_then(|s| s.allocatable).unwrap_or_default();
            assert_eq!(allocatable.get(GPU).map(|q| q.0.as_str()), Some(gpus));

            // Deleted behind Terraform's back: the next plan puts it back.
            overlays
                .delete(&overlay, &Default::default())
                .await
                .unwrap();
            ws.assert_plan_changes();
            ws.apply();
            assert!(overlays.get_opt(&overlay).await.unwrap().is_some());
            ws.assert_plan_empty();

            cleanup.delete(&name);
            ws.destroy();
            wait_for(
                &client,
                "the fleet's nodes to go with it",
                120,
                async || nodes_of_pool(&client, &name).await.is_empty().then_some(()),
            )
            .await;
            assert!(
                overlays.get_opt(&overlay).await.unwrap().is_none(),
                "destroy leaves no NodeOverlay"
            );
        });
    }
}

// ------------------------------------------- Karpenter's instance types select

/// Karpenter compares a NodePool's requirement only with instance types that
/// define its key. The instance types of the test cluster define the GPU
/// labels on every type (the CPU-only one with DoesNotExist), so a fleet of
/// H100s gets an H100 node even for a pod that a cheaper L4 or CPU node
/// would fit, and a pod that needs an L4 there gets nothing.
#[test]
fn gpu_requirements_select_instance_types() {
    // The GPU Operator as Helm installs it: a device plugin that reads no
    // ConfigMap advertises every GPU whole (a standalone one pointed at
    // gpufleet's, as the docs say, would wait for a ConfigMap no
    // configuration here writes).
    let _only_policy = common::exclusive::own_cluster_policy();
    let _helm = common::fixtures::HelmClusterPolicy::install(None);
    each_cli(|cli| {
        block_on(async {
            let client = kube_client().await;
            let name = unique_name("h100-only");
            let taint = format!(
                "[{{ key = \"gpufleet.test/select\", value = \"{name}\", effect = \"NoSchedule\" }}]"
            );
            let mut ws = Workspace::new(cli);
            ws.config(&common::fixtures::fleet(
                "h100",
                &name,
                &format!("  accelerators = [\"H100\"]\n  taints = {taint}\n"),
            ));
            ws.apply();
            ws.assert_plan_empty();

            let mut cleanup = Guard::of::<Namespace>(&[&name]);
            let namespace = Api::<Namespace>::all(client.clone());
            namespace
                .create(
                    &PostParams::default(),
                    &json_as(&format!(
                        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#
                    )),
                )
                .await
                .unwrap();
            let pods = Api::<Pod>::namespaced(client.clone(), &name);
            let pod = |pod: &str, gpus: u32, extra_selector: &str| {
                let limits = if gpus > 0 {
                    format!(r#","limits":{{"{GPU}":"{gpus}"}}"#)
                } else {
                    String::new()
                };
                json_as::<Pod>(&format!(
                    r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{pod}"}},"spec":{{
                        "nodeSelector":{{"{POOL}":"{name}"{extra_selector}}},
                        "tolerations":[{{"key":"gpufleet.test/select","operator":"Equal","value":"{name}","effect":"NoSchedule"}}],
                        "containers":[{{"name":"c","image":"registry.example/c:1",
                          "resources":{{"requests":{{"cpu":"1"}}{limits}}}}}]}}}}"#
                ))
            };
            for p in [
                pod("one-gpu", 1, ""),
                pod("no-gpu", 0, ""),
                pod("wants-l4", 1, r#","cfke.io/accelerator-name":"L4""#),
            ] {
                pods.create(&PostParams::default(), &p).await.unwrap();
            }
            for placed in ["one-gpu", "no-gpu"] {
                let p = wait_for(&client, placed, 120, async || {
                    pods.get_opt(placed).await.unwrap().filter(is_running)
                })
                .await;
                let node = Api::<Node>::all(client.clone())
                    .get(node_of(&p).unwrap())
                    .await
                    .unwrap();
                assert_eq!(
                    label(&node, INSTANCE_TYPE),
                    Some("h100-8gpu"),
                    "{placed}: an H100 fleet must not get a cheaper node"
                );
            }
            let refused = wait_for(&client, "Karpenter's verdict on wants-l4", 60, async || {
                karpenter_failure(&client, &name, "wants-l4").await
            })
            .await;
            assert!(refused.contains("incompatible"), "{refused}");
            assert!(node_of(&pods.get("wants-l4").await.unwrap()).is_none());
            let types: BTreeSet<String> = nodes_of_pool(&client, &name)
                .await
                .iter()
                .filter_map(|n| label(n, INSTANCE_TYPE).map(str::to_string))
                .collect();
            assert_eq!(types, BTreeSet::from(["h100-8gpu".to_string()]));

            cleanup.delete(&name);
            ws.destroy();
            wait_for(
                &client,
                "the fleet's nodes to go with it",
                120,
                async || nodes_of_pool(&client, &name).await.is_empty().then_some(()),
            )
            .await;
        })
    });
}

fn json_as<T: serde::de::DeserializeOwned>(json: &str) -> T {
    serde_json::from_str(json).unwrap()
}
