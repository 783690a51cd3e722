//! The simulated device plugin (testbed/stand-ins/simulated-device-plugin.rs,
//! started by `cluster.sh up --karpenter`) advertises on nodes what NVIDIA's
//! device plugin would under their configuration, and nothing where the
//! plugin refuses to start: each case is a Node object with the labels a
//! fleet's node carries and a key of the device-plugin ConfigMap. It sets a
//! ClusterPolicy, which every node's plugin follows, so it holds the
//! cluster's one ClusterPolicy to itself (`common::exclusive`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::fixtures::cluster_policies;
use common::{block_on, kube_client, kubeconfig, skipped, unique_name};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const NAMESPACE: &str = "gpu-operator";
const CONFIG_MAP: &str = "gpufleet-device-plugin";
const MANAGER: &str = "gpufleet-test-simulated-device-plugin";

fn log_path() -> std::path::PathBuf {
    std::path::Path::new(&kubeconfig())
        .with_file_name("logs")
        .join("simulated-device-plugin.log")
}

/// Our keys of the ConfigMap, released (and the nodes deleted) at the end.
struct Fixture {
    client: Client,
    keys: BTreeMap<String, String>,
    nodes: Vec<String>,
    policy: Option<String>,
}

impl Fixture {
    async fn write_keys(&self) {
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
            "data": self.keys,
        });
        Api::<ConfigMap>::namespaced(self.client.clone(), NAMESPACE)
            .patch(
                CONFIG_MAP,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(object),
            )
            .await
            .unwrap();
    }

    /// A node with `labels` and, as kwok gives it, the instance type's
    /// whole GPUs.
    async fn node(&mut self, prefix: &str, labels: &[(&str, &str)]) -> String {
        let name = unique_name(prefix);
        let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
        let gpus = labels
            .iter()
            .find(|(k, _)| k.ends_with("-count"))
            .map_or("0", |(_, v)| v);
        let api = Api::<Node>::all(self.client.clone());
        let node: Node =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        api.create(&PostParams::default(), &node).await.unwrap();
        self.nodes.push(name.clone());
        let status = json!({"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus});
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"capacity": status, "allocatable": status}})),
        )
        .await
        .unwrap();
        name
    }

    /// Waits until `node`'s nvidia.com resources are `expected`, in both
    /// capacity and allocatable.
    async fn advertises(&self, node: &str, expected: &[(&str, &str)]) {
        let expected: BTreeMap<String, String> = expected
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let api = Api::<Node>::all(self.client.clone());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = api.get(node).await.unwrap().status.unwrap_or_default();
            let of = |field: Option<
                BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
            >|
             -> BTreeMap<String, String> {
                field
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(k, _)| k.starts_with("nvidia.com/"))
                    .map(|(k, v)| (k, v.0))
                    .collect()
            };
            let (capacity, allocatable) = (of(status.capacity), of(status.allocatable));
            if capacity == expected && allocatable == expected {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{node}: capacity {capacity:?}, allocatable {allocatable:?}, expected {expected:?}; log:\n{}",
                std::fs::read_to_string(log_path()).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The stand-in's log says `text` about `node`.
    fn logged(&self, node: &str, text: &str) {
        let log = std::fs::read_to_string(log_path()).unwrap();
        assert!(
            log.lines().any(|l| l.contains(node) && l.contains(text)),
            "{node}: no {text:?} in the log:\n{log}"
        );
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let nodes = std::mem::take(&mut self.nodes);
        let policy = self.policy.take();
        // Dropped inside the test's runtime (also on a failed assertion):
        // clean up from a thread of its own.
        let cleanup = move || {
            block_on(async {
                // A client of its own: the test's runs on the blocked runtime.
                let client = kube_client().await;
                let api = Api::<Node>::all(client.clone());
                for name in &nodes {
                    let _ = api.delete(name, &DeleteParams::default()).await;
                }
                if let Some(name) = policy {
                    let _ = cluster_policies(&client)
                        .delete(&name, &DeleteParams::default())
                        .await;
                }
                let release = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
                });
                let _ = Api::<ConfigMap>::namespaced(client, NAMESPACE)
                    .patch(
                        CONFIG_MAP,
                        &PatchParams::apply(MANAGER).force(),
                        &Patch::Apply(release),
                    )
                    .await;
            })
        };
        let _ = std::thread::spawn(cleanup).join();
    }
}

#[test]
fn advertises_what_nvidias_plugin_would() {
    let _only_policy = common::exclusive::own_cluster_policy();
    if !log_path().exists() {
        skipped(
            "the simulated device plugin tests",
            "the cluster runs no simulated device plugin (`cluster.sh up --karpenter` starts it)",
        );
        return;
    }
    block_on(async {
        let client = kube_client().await;
        assert!(
            cluster_policies(&client)
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty(),
            "another ClusterPolicy would decide for the plugin"
        );
        let key = |name: &str| unique_name(&format!("sim-{name}"));
        let (ts, renamed, mixed, single, mps_mixed, mig_ts) = (
            key("ts"),
            key("renamed"),
            key("mixed"),
            key("single"),
            key("mps-mixed"),
            key("mig-ts"),
        );
        let sharing = |block: &str, resource: &str, replicas: u32, rename: bool| {
            format!(
                "  {block}:\n    renameByDefault: {rename}\n    resources:\n    - name: {resource}\n      replicas: {replicas}\n"
            )
        };
        let mut fixture = Fixture {
            client: client.clone(),
            keys: BTreeMap::from([
                (
                    ts.clone(),
                    format!(
                        "version: v1\nflags:\n  migStrategy: none\nsharing:\n{}",
                        sharing("timeSlicing", "nvidia.com/gpu", 3, false)
                    ),
                ),
                (
                    renamed.clone(),
                    format!(
                        "version: v1\nsharing:\n{}",
                        sharing("timeSlicing", "nvidia.com/gpu", 3, true)
                    ),
                ),
                (
                    mixed.clone(),
                    "version: v1\nflags:\n  migStrategy: mixed\n".into(),
                ),
                (
                    single.clone(),
                    "version: v1\nflags:\n  migStrategy: single\n".into(),
                ),
                (
                    mps_mixed.clone(),
                    format!(
                        "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n{}",
                        sharing("mps", "nvidia.com/gpu", 4, false)
                    ),
                ),
                (
                    mig_ts.clone(),
                    format!(
                        "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n{}",
                        sharing("timeSlicing", "nvidia.com/mig-1g.10gb", 2, false)
                    ),
                ),
            ]),
            nodes: Vec::new(),
            policy: None,
        };
        fixture.write_keys().await;
        let config = gpufleet::resources::sharing::CONFIG_LABEL;
        let mig = gpufleet::resources::sharing::MIG_CONFIG_LABEL;
        let cfke_h100 = |count| {
            [
                ("cfke.io/accelerator-name", "H100"),
                ("cfke.io/accelerator-count", count),
                ("cfke.io/accelerator-memory", "80"),
            ]
        };

        // Every label scheme's GPU count.
        let aws = fixture
            .node(
                "sim-aws",
                &[
                    ("karpenter.k8s.aws/instance-gpu-name", "h100"),
                    ("karpenter.k8s.aws/instance-gpu-count", "4"),
                    ("karpenter.k8s.aws/instance-gpu-memory", "81920"),
                    (config, &ts),
                ],
            )
            .await;
        fixture.advertises(&aws, &[("nvidia.com/gpu", "12")]).await;
        // EC2's fractional L4 (g6f.large, as karpenter-provider-aws labels
        // it: GPU count 0): its part of the L4 is one GPU to the plugin.
        let g6f = fixture
            .node(
                "sim-g6f",
                &[
                    ("karpenter.k8s.aws/instance-gpu-name", "l4"),
                    ("karpenter.k8s.aws/instance-gpu-count", "0"),
                    ("karpenter.k8s.aws/instance-gpu-memory", "2861"),
                    (config, &ts),
                ],
            )
            .await;
        fixture.advertises(&g6f, &[("nvidia.com/gpu", "3")]).await;
        let azure = fixture
            .node(
                "sim-azure",
                &[
                    ("karpenter.azure.com/sku-gpu-name", "H100"),
                    ("karpenter.azure.com/sku-gpu-count", "2"),
                    (config, &renamed),
                ],
            )
            .await;
        fixture
            .advertises(
                &azure,
                &[("nvidia.com/gpu", "0"), ("nvidia.com/gpu.shared", "6")],
            )
            .await;

        // MIG devices under NVIDIA's names: mixed, single, time-sliced.
        let mut labels = cfke_h100("8").to_vec();
        labels.extend([(mig, "all-1g.10gb"), (config, &mixed)]);
        let h100_mixed = fixture.node("sim-mixed", &labels).await;
        fixture
            .advertises(
                &h100_mixed,
                &[("nvidia.com/gpu", "0"), ("nvidia.com/mig-1g.10gb", "56")],
            )
            .await;
        let mut labels = cfke_h100("8").to_vec();
        labels.extend([(mig, "all-1g.10gb"), (config, &single)]);
        let h100_single = fixture.node("sim-single", &labels).await;
        fixture
            .advertises(&h100_single, &[("nvidia.com/gpu", "56")])
            .await;
        let mut labels = cfke_h100("2").to_vec();
        labels.extend([(mig, "all-1g.10gb"), (config, &mig_ts)]);
        let h100_mig_ts = fixture.node("sim-mig-ts", &labels).await;
        fixture
            .advertises(
                &h100_mig_ts,
                &[("nvidia.com/gpu", "0"), ("nvidia.com/mig-1g.10gb", "28")],
            )
            .await;

        // What the plugin refuses to start with: nothing advertised.
        let mut labels = cfke_h100("8").to_vec();
        labels.extend([(mig, "all-balanced"), (config, &single)]);
        let balanced_single = fixture.node("sim-balanced", &labels).await;
        fixture
            .advertises(&balanced_single, &[("nvidia.com/gpu", "0")])
            .await;
        fixture.logged(
            &balanced_single,
            "more than one MIG device type present on node",
        );
        let mut labels = cfke_h100("8").to_vec();
        labels.extend([(mig, "all-enabled"), (config, &single)]);
        let enabled_single = fixture.node("sim-enabled", &labels).await;
        fixture
            .advertises(&enabled_single, &[("nvidia.com/gpu", "0")])
            .await;
        fixture.logged(&enabled_single, "has no MIG devices configured");
        let mut labels = cfke_h100("2").to_vec();
        labels.push((config, &mps_mixed));
        let mps = fixture.node("sim-mps-mixed", &labels).await;
        fixture.advertises(&mps, &[("nvidia.com/gpu", "0")]).await;
        fixture.logged(&mps, "using --mig-strategy=mixed is not supported with MPS");
        let missing = fixture
            .node(
                "sim-missing",
                &[
                    ("cfke.io/accelerator-name", "L4"),
                    ("cfke.io/accelerator-count", "1"),
                    (config, "sim-no-such-key"),
                ],
            )
            .await;
        fixture
            .advertises(&missing, &[("nvidia.com/gpu", "0")])
            .await;
        fixture.logged(&missing, "specified config sim-no-such-key does not exist");

        // The GPU Operator's ClusterPolicy: its default key for nodes
        // without the label, its MIG strategy over the file's.
        let policy = unique_name("sim-policy");
        cluster_policies(&client)
            .patch(
                &policy,
                &PatchParams::apply(MANAGER),
                &Patch::Apply(json!({
                    "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                    "metadata": {"name": policy},
                    // The Helm chart's required sections, as the operator's install makes them.
                    "spec": {
                        "operator": {"defaultRuntime": "containerd"},
                        "daemonsets": {"priorityClassName": "system-node-critical"},
                        "driver": {"enabled": true},
                        "toolkit": {"enabled": true},
                        "devicePlugin": {"enabled": true, "config": {"name": CONFIG_MAP, "default": ts}},
                        "dcgm": {"enabled": true},
                        "dcgmExporter": {"enabled": true},
                        "gfd": {"enabled": true},
                        "nodeStatusExporter": {"enabled": false},
                        "mig": {"strategy": "single"},
                    },
                })),
            )
            .await
            .unwrap();
        fixture.policy = Some(policy.clone());
        let unlabelled = fixture
            .node(
                "sim-unlabelled",
                &[
                    ("cfke.io/accelerator-name", "L4"),
                    ("cfke.io/accelerator-count", "1"),
                ],
            )
            .await;
        fixture
            .advertises(&unlabelled, &[("nvidia.com/gpu", "3")])
            .await;
        fixture
            .advertises(
                &h100_mixed,
                &[("nvidia.com/gpu", "56"), ("nvidia.com/mig-1g.10gb", "0")],
            )
            .await;
        fixture.advertises(&mps, &[("nvidia.com/gpu", "8")]).await;
        let mut labels = cfke_h100("2").to_vec();
        labels.extend([(mig, "all-1g.10gb"), (config, &mps_mixed)]);
        let mps_on_mig = fixture.node("sim-mps-mig", &labels).await;
        fixture
            .advertises(&mps_on_mig, &[("nvidia.com/gpu", "0")])
            .await;
        fixture.logged(
            &mps_on_mig,
            "sharing using MPS is not supported for MIG devices",
        );
        cluster_policies(&client)
            .delete(&policy, &DeleteParams::default())
            .await
            .unwrap();
        fixture.policy = None;
        fixture
            .advertises(
                &h100_mixed,
                &[("nvidia.com/gpu", "0"), ("nvidia.com/mig-1g.10gb", "56")],
            )
            .await;
    });
}
