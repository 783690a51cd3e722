//! The fault suite, on a control plane of its own (GPUFLEET_FAULT_CLUSTER_DIR,
//! which scripts/test.sh starts beside the test cluster), since it kills
//! and restarts its components: kube-apiserver SIGKILLed in the middle of an
//! apply, etcd stopped and started again, Ctrl-C while the API server is
//! down, and an API server that throttles (429) an apply run with
//! `-parallelism=50`. Each run applies every kind of object gpufleet writes
//! but a node join's: priority classes, NodePools, node taints, and GPU
//! sharing's device-plugin ConfigMap keys, NodeOverlays, node labels and the
//! GPU Operator ClusterPolicy's device-plugin fields.
//! After each: no object lost, duplicated or left unmanaged, state equal to
//! the cluster, a second plan empty, and destroy leaves nothing. Beside
//! them, an apply of priority classes that meets a restarted API server
//! still loading its RBAC rules must succeed, and kube-apiserver is killed
//! in the middle of one taint's writes to 200 nodes, which the provider
//! makes several at a time. On Kueue (the fault cluster runs it), a
//! queue's apply meets kube-apiserver killed between its ClusterQueue and
//! its LocalQueues, and its ClusterQueue removed by hand is put back.
//!
//! The short runs (20 resources) are part of `make test`; the 200-resource
//! runs, and a fault-free apply to compare them with, are `#[ignore]`d and
//! run by `make test-long`. Each run prints one `fault figures:` line.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::fixtures::{
    class, cluster_policies, fleet, helm_cluster_policy, node_overlays, node_pools,
};
use common::terraform::{Cli, Workspace, clis, provider_block_for};
use common::{block_on, repo_root, unique_name};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};

/// The runs take turns: each may kill a component the others use.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const RUN_LABEL: &str = "example.com/fault-run";
const TAINT_KEY: &str = "fault.example.com/run";
/// The node label a `gpufleet_node_sharing` writes.
const CONFIG_LABEL: &str = "nvidia.com/device-plugin.config";
/// The provider's default `gpu_operator_namespace`, which cluster.sh creates
/// and grants the provider's Role in; each run has a ConfigMap of its own
/// there (the provider's `device_plugin_config_map`, named after the run).
const OPERATOR_NAMESPACE: &str = "gpu-operator";
/// The API Priority and Fairness objects of the throttled run: the
/// provider's user gets a priority level of its own with the smallest share
/// of the API server's concurrency, nothing borrowed and no queue, so the
/// API server answers 429 whenever more than a few of its requests are in
/// flight; everyone else is served as before.
const THROTTLE: &str = "gpufleet-fault-throttle";
/// Who the provider is in every run: the user bound only to docs/rbac.yaml's
/// roles (testbed/cluster.sh, kubeconfig-provider).
const PROVIDER_USER: &str = "gpufleet-provider";

/// The fault cluster and its controls (testbed/cluster.sh).
#[derive(Clone)]
struct FaultCluster {
    dir: PathBuf,
    kubeconfig: String,
}

impl FaultCluster {
    /// The fault cluster, once `cluster.sh up` has finished starting it
    /// (scripts/test.sh starts it while the other tests run); `None` (a
    /// skip) when there is none.
    fn get() -> Option<Self> {
        let Some(dir) = std::env::var_os("GPUFLEET_FAULT_CLUSTER_DIR").map(PathBuf::from) else {
            common::skipped(
                "the fault suite",
                "GPUFLEET_FAULT_CLUSTER_DIR names no cluster of its own (scripts/test.sh starts one with `GPUFLEET_CLUSTER_DIR=target/fault-cluster testbed/cluster.sh up`)",
            );
            return None;
        };
        let started = Instant::now();
        while !dir.join("env").exists() {
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "no fault cluster at {} after 3 minutes (`up` writes its env file when ready)",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        Some(Self {
            kubeconfig: dir.join("kubeconfig").to_string_lossy().into_owned(),
            dir,
        })
    }

    /// Runs `cluster.sh args`; `apiserver_flags` replaces kube-apiserver's
    /// extra flags when it (re)starts.
    fn control(&self, args: &[&str], apiserver_flags: Option<&str>) {
        let mut command = Command::new("bash");
        command
            .arg(repo_root().join("testbed/cluster.sh"))
            .args(args)
            .env("GPUFLEET_CLUSTER_DIR", &self.dir);
        if let Some(flags) = apiserver_flags {
            command.env("GPUFLEET_APISERVER_FLAGS", flags);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "cluster.sh {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn kill(&self, component: &str, signal: &str) {
        self.control(&["kill", component, signal], None);
    }

    fn start(&self, component: &str) {
        self.control(&["start", component], None);
    }

    /// Whatever an earlier run left stopped runs again, with kube-apiserver
    /// on the flags of `up` and no throttle left over.
    fn restore(&self) {
        let status = Command::new("bash")
            .arg(repo_root().join("testbed/cluster.sh"))
            .arg("status")
            .env("GPUFLEET_CLUSTER_DIR", &self.dir)
            .output()
            .unwrap();
        let status = String::from_utf8_lossy(&status.stdout).into_owned();
        for component in [
            "etcd",
            "kube-apiserver",
            "kube-scheduler",
            "kube-controller-manager",
        ] {
            if status.contains(&format!("{component}: stopped")) {
                self.start(component);
            }
        }
        let env = std::fs::read_to_string(self.dir.join("env")).unwrap();
        if !env.contains("apiserver_flags=''") {
            self.control(&["restart", "kube-apiserver"], Some(""));
        }
        drop(Throttle(self.kubeconfig.clone()));
    }

    /// The provider's kubeconfig: the least-privilege user's.
    fn provider_kubeconfig(&self) -> String {
        self.dir
            .join("kubeconfig-provider")
            .to_string_lossy()
            .into_owned()
    }

    async fn client(&self) -> kube::Client {
        client_of(&self.kubeconfig).await
    }

    /// Sends `signal` to etcd itself: `cluster.sh kill` waits for the
    /// cluster's lock, which a `cluster.sh start` waiting on etcd holds.
    fn signal_etcd(&self, signal: &str) {
        let pid = std::fs::read_to_string(self.dir.join("etcd.pid")).unwrap();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), pid.trim()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{signal} etcd");
    }

    /// Requests of the throttled run's flow the API server has rejected
    /// since it started (APF's own counter, labelled with the flow schema).
    fn throttled(&self) -> u64 {
        block_on(async {
            let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
            let metrics = self.client().await.request_text(request).await.unwrap();
            metrics
                .lines()
                .filter(|l| {
                    l.starts_with("apiserver_flowcontrol_rejected_requests_total{")
                        && l.contains(&format!("flow_schema=\"{THROTTLE}\""))
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>() as u64
        })
    }

    /// Whether APF has taken the throttle's priority level into its
    /// configuration (it reads the objects asynchronously).
    fn throttle_in_force(&self) -> bool {
        block_on(async {
            let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
            let metrics = self.client().await.request_text(request).await.unwrap();
            metrics.lines().any(|l| {
                l.starts_with("apiserver_flowcontrol_nominal_limit_seats{")
                    && l.contains(&format!("priority_level=\"{THROTTLE}\""))
            })
        })
    }
}

/// The throttle, while it lives: a PriorityLevelConfiguration and a
/// FlowSchema that puts every request of the provider's user in it
/// (flowcontrol.apiserver.k8s.io/v1). Its share of 1 against the default
/// levels' 245 (k8s.io/apiserver, pkg/apis/flowcontrol/bootstrap/default.go)
/// leaves it ceil(600 × 1/246) = 3 of the server's 600 seats
/// (pkg/util/flowcontrol/apf_controller.go), and
/// `borrowingLimitPercent: 0` keeps it from borrowing more.
struct Throttle(String);

impl Throttle {
    fn install(cluster: &FaultCluster) -> Self {
        let level = serde_json::json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": { "name": THROTTLE },
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 1,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": { "type": "Reject" },
                },
            },
        });
        let schema = serde_json::json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": { "name": THROTTLE },
            "spec": {
                "priorityLevelConfiguration": { "name": THROTTLE },
                // Before every suggested schema but the exempt ones.
                "matchingPrecedence": 100,
                "distinguisherMethod": { "type": "ByUser" },
                "rules": [{
                    "subjects": [{ "kind": "User", "user": { "name": PROVIDER_USER } }],
                    "resourceRules": [{
                        "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                        "clusterScope": true, "namespaces": ["*"],
                    }],
                    "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
                }],
            },
        });
        block_on(async {
            let client = cluster.client().await;
            let pp = PostParams::default();
            Api::<PriorityLevelConfiguration>::all(client.clone())
                .create(&pp, &serde_json::from_value(level).unwrap())
                .await
                .unwrap();
            Api::<FlowSchema>::all(client)
                .create(&pp, &serde_json::from_value(schema).unwrap())
                .await
                .unwrap();
        });
        let throttle = Self(cluster.kubeconfig.clone());
        let started = Instant::now();
        while !cluster.throttle_in_force() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "APF did not take up the throttle's priority level within a minute"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        throttle
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let kubeconfig = self.0.clone();
        block_on(async move {
            let cluster = FaultCluster {
                dir: PathBuf::new(),
                kubeconfig,
            };
            let client = cluster.client().await;
            let dp = DeleteParams::default();
            let _ = Api::<FlowSchema>::all(client.clone())
                .delete(THROTTLE, &dp)
                .await;
            let _ = Api::<PriorityLevelConfiguration>::all(client)
                .delete(THROTTLE, &dp)
                .await;
        });
    }
}

/// A configuration of `total` resources of one run: two fifths priority
/// classes, three tenths fleets (half of them with `gpu_sharing`: a key of
/// the device-plugin ConfigMap and a NodeOverlay each), the cluster-wide
/// `gpufleet_gpu_sharing` (key `default`), and taints each on a node of its
/// own, half as many `gpufleet_node_sharing`s labelling the first of those
/// nodes (a key and a node label each). The cluster default points a
/// ClusterPolicy of the run's own, made as the GPU Operator's Helm chart
/// makes it: the fault cluster has the CRD (cluster.sh installs it) but
/// runs no operator to make one.
struct Fleetwide {
    run: String,
    classes: usize,
    fleets: usize,
    /// The first fleets, which have `gpu_sharing`.
    shared_fleets: usize,
    /// On the first nodes, one each.
    node_sharings: usize,
    nodes: Vec<String>,
}

impl Fleetwide {
    fn new(cluster: &FaultCluster, total: usize) -> Self {
        let run = unique_name("fault");
        let classes = total * 2 / 5;
        let fleets = total * 3 / 10;
        let rest = total - classes - fleets - 1;
        let node_sharings = rest / 2;
        let nodes: Vec<String> = (0..rest - node_sharings)
            .map(|i| format!("{run}-node-{i}"))
            .collect();
        block_on(async {
            let client = cluster.client().await;
            // The only ClusterPolicy on the cluster, as on one with the
            // operator: a run that failed may have left its own.
            let policies = cluster_policies(&client);
            let _ = policies
                .delete_collection(&DeleteParams::default(), &ListParams::default())
                .await;
            let policy = format!("{run}-policy");
            common::helm::install_cluster_policy(&client, &helm_cluster_policy(&policy, None))
                .await;
            let api = Api::<Node>::all(client);
            for name in &nodes {
                let node: Node = serde_json::from_value(serde_json::json!({
                    "metadata": { "name": name, "labels": { RUN_LABEL: run } },
                }))
                .unwrap();
                api.create(&PostParams::default(), &node).await.unwrap();
            }
        });
        Self {
            run,
            classes,
            fleets,
            shared_fleets: fleets / 2,
            node_sharings,
            nodes,
        }
    }

    fn resources(&self) -> usize {
        self.classes + self.fleets + 1 + self.node_sharings + self.nodes.len()
    }

    fn names(&self, kind: &str, count: usize) -> BTreeSet<String> {
        (0..count)
            .map(|i| format!("{}-{kind}-{i}", self.run))
            .collect()
    }

    fn configured(&self) -> Objects {
        let shared_fleets: Vec<String> = self
            .names("fleet", self.fleets)
            .into_iter()
            .take(self.shared_fleets)
            .collect();
        let node_sharings = (0..self.node_sharings).map(|i| format!("node-share{i}"));
        Objects {
            classes: self.names("pc", self.classes),
            pools: self.names("fleet", self.fleets),
            tainted_nodes: self.nodes.iter().cloned().collect(),
            config_keys: std::iter::once("default".to_string())
                .chain(shared_fleets.iter().map(|f| format!("fleet-{f}")))
                .chain(node_sharings)
                .collect(),
            overlays: shared_fleets
                .iter()
                .map(|f| format!("{f}-1-gpus"))
                .collect(),
            shared_nodes: self.nodes[..self.node_sharings].iter().cloned().collect(),
            pointed_policies: BTreeSet::from([format!("{}-policy", self.run)]),
        }
    }

    /// The configuration: the first third of the objects (priority classes,
    /// which are half of them) at once, the rest only once `gate` exists, so that a fault injected between the two
    /// surely falls in the middle of the apply however fast the machine is.
    fn config(&self, kubeconfig: &str, gate: &std::path::Path) -> String {
        let labels = format!("{{ \"{RUN_LABEL}\" = \"{}\" }}", self.run);
        let ungated = self.resources() / 3;
        // The sharing fleets and node sharings also wait for the
        // gpufleet_gpu_sharing that points the ClusterPolicy at their keys,
        // as the docs say: before, the device plugin reads none, and their
        // apply refuses to write.
        let depends = |i: usize, after: &[&str]| {
            let mut on: Vec<&str> = after.to_vec();
            if i >= ungated {
                on.push("terraform_data.gate");
            }
            if on.is_empty() {
                String::new()
            } else {
                format!("  depends_on = [{}]\n", on.join(", "))
            }
        };
        let gated = |i: usize| depends(i, &[]);
        const POINTED: &[&str] = &["gpufleet_gpu_sharing.default"];
        // The gate waits for the ungated objects, so that even at
        // -parallelism=1 it never holds up what must come before it.
        let before_gate: Vec<String> = (0..ungated)
            .map(|i| format!("gpufleet_priority_class.pc{i}"))
            .collect();
        let mut body = provider_block_for(
            kubeconfig,
            &format!("  device_plugin_config_map = \"{}\"\n", self.run),
        );
        body += &format!(
            "resource \"terraform_data\" \"gate\" {{\n  depends_on = [{}]\n  provisioner \"local-exec\" {{\n    command = \"i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -lt 9000 ] || exit 1; sleep 0.1; done\"\n  }}\n}}\n",
            before_gate.join(", "),
            gate.display()
        );
        for (i, name) in self.names("pc", self.classes).iter().enumerate() {
            body += &class(
                &format!("pc{i}"),
                name,
                i as i64,
                &format!("  labels = {labels}\n{}", gated(i)),
            );
        }
        for (i, name) in self.names("fleet", self.fleets).iter().enumerate() {
            // One GPU per node: one NodeOverlay, which selects the NodePool
            // alone (kwok's instance types carry no GPU-count label).
            let (sharing, after) = if i < self.shared_fleets {
                (
                    "  accelerator_count = { min = 1, max = 1 }\n  gpu_sharing = { strategy = \"time_slicing\", replicas = 2 }\n",
                    POINTED,
                )
            } else {
                ("", &[][..])
            };
            body += &fleet(
                &format!("fleet{i}"),
                name,
                &format!(
                    "  accelerators = [\"L4\"]\n  node_pool_labels = {labels}\n{sharing}{}",
                    depends(self.classes + i, after)
                ),
            );
        }
        // Pointing the run's ClusterPolicy ([`Fleetwide::new`]) at the key.
        let mut next = self.classes + self.fleets;
        body += &format!(
            "resource \"gpufleet_gpu_sharing\" \"default\" {{\n  strategy = \"time_slicing\"\n  replicas = 4\n{}}}\n",
            gated(next)
        );
        next += 1;
        for (i, node) in self.nodes[..self.node_sharings].iter().enumerate() {
            body += &format!(
                "resource \"gpufleet_node_sharing\" \"share{i}\" {{\n  name      = \"share{i}\"\n  node_name = \"{node}\"\n  strategy  = \"time_slicing\"\n  replicas  = 3\n{}}}\n",
                depends(next, POINTED)
            );
            next += 1;
        }
        for (i, node) in self.nodes.iter().enumerate() {
            body += &format!(
                "resource \"gpufleet_node_taint\" \"taint{i}\" {{\n  node_name = \"{node}\"\n  taints = [{{ key = \"{TAINT_KEY}\", value = \"{}\", effect = \"NoSchedule\" }}]\n{}}}\n",
                self.run,
                gated(next + i)
            );
        }
        body
    }

    /// The run's objects on the cluster.
    fn live(&self, cluster: &FaultCluster) -> Objects {
        block_on(async {
            let client = cluster.client().await;
            let selector = ListParams::default().labels(&format!("{RUN_LABEL}={}", self.run));
            let names = |items: Vec<_>| -> BTreeSet<String> {
                items
                    .into_iter()
                    .filter_map(|m: kube::api::ObjectMeta| m.name)
                    .collect()
            };
            let classes = Api::<PriorityClass>::all(client.clone())
                .list(&selector)
                .await
                .unwrap();
            let pools = Api::<DynamicObject>::all_with(client.clone(), &node_pools("karpenter.sh"))
                .list(&selector)
                .await
                .unwrap();
            let nodes = Api::<Node>::all(client.clone())
                .list(&selector)
                .await
                .unwrap();
            let config_map = Api::<ConfigMap>::namespaced(client.clone(), OPERATOR_NAMESPACE)
                .get_opt(&self.run)
                .await
                .unwrap();
            let overlays = node_overlays(&client)
                .list(&ListParams::default())
                .await
                .unwrap();
            let policies = cluster_policies(&client)
                .list(&ListParams::default())
                .await
                .unwrap();
            let run_prefix = format!("{}-", self.run);
            let nodes_with = |has: &dyn Fn(&Node) -> bool| -> BTreeSet<String> {
                nodes
                    .items
                    .iter()
                    .filter(|n| has(n))
                    .filter_map(|n| n.metadata.name.clone())
                    .collect()
            };
            Objects {
                classes: names(classes.items.into_iter().map(|c| c.metadata).collect()),
                pools: names(pools.items.into_iter().map(|p| p.metadata).collect()),
                tainted_nodes: nodes_with(&|n| {
                    n.spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_some_and(|t| t.iter().any(|t| t.key == TAINT_KEY))
                }),
                config_keys: config_map
                    .and_then(|c| c.data)
                    .unwrap_or_default()
                    .into_keys()
                    .collect(),
                overlays: names(overlays.items.into_iter().map(|o| o.metadata).collect())
                    .into_iter()
                    .filter(|n| n.starts_with(&run_prefix))
                    .collect(),
                shared_nodes: nodes_with(&|n| {
                    n.metadata
                        .labels
                        .as_ref()
                        .is_some_and(|l| l.contains_key(CONFIG_LABEL))
                }),
                pointed_policies: policies
                    .items
                    .into_iter()
                    .filter(|p| {
                        p.data["spec"]["devicePlugin"]["config"]["name"] == self.run.as_str()
                    })
                    .filter_map(|p| p.metadata.name)
                    .collect(),
            }
        })
    }

    /// The device-plugin config fields of the run's ClusterPolicy.
    fn policy_config(&self, cluster: &FaultCluster) -> serde_json::Value {
        block_on(async {
            let policy = cluster_policies(&cluster.client().await)
                .get(&format!("{}-policy", self.run))
                .await
                .unwrap();
            policy.data["spec"]["devicePlugin"]["config"].clone()
        })
    }

    /// Removes the run's nodes and ClusterPolicy, and its ConfigMap should
    /// destroy have left it empty.
    fn clean_up(&self, cluster: &FaultCluster) {
        block_on(async {
            let client = cluster.client().await;
            let api = Api::<Node>::all(client.clone());
            for name in &self.nodes {
                let _ = api.delete(name, &DeleteParams::default()).await;
            }
            let _ = Api::<ConfigMap>::namespaced(client.clone(), OPERATOR_NAMESPACE)
                .delete(&self.run, &DeleteParams::default())
                .await;
            let _ = cluster_policies(&client)
                .delete(&format!("{}-policy", self.run), &DeleteParams::default())
                .await;
        });
    }
}

/// Objects by kind, from the cluster or from state.
#[derive(Clone, Debug, Default, PartialEq)]
struct Objects {
    classes: BTreeSet<String>,
    pools: BTreeSet<String>,
    tainted_nodes: BTreeSet<String>,
    /// Keys of the run's device-plugin ConfigMap.
    config_keys: BTreeSet<String>,
    overlays: BTreeSet<String>,
    /// Nodes carrying a `gpufleet_node_sharing`'s label.
    shared_nodes: BTreeSet<String>,
    /// ClusterPolicies whose device plugin reads the run's ConfigMap.
    pointed_policies: BTreeSet<String>,
}

impl Objects {
    fn by_kind(&self) -> [(&'static str, &BTreeSet<String>); 7] {
        [
            ("PriorityClass", &self.classes),
            ("NodePool", &self.pools),
            ("tainted Node", &self.tainted_nodes),
            ("device-plugin ConfigMap key", &self.config_keys),
            ("NodeOverlay", &self.overlays),
            ("Node labelled for sharing", &self.shared_nodes),
            (
                "ClusterPolicy pointed at the ConfigMap",
                &self.pointed_policies,
            ),
        ]
    }

    fn len(&self) -> usize {
        self.by_kind().iter().map(|(_, names)| names.len()).sum()
    }

    /// What a resource of `resource_type` with state `values` holds, and
    /// the one object that identifies it.
    fn of_resource(resource_type: &str, values: &serde_json::Value) -> (Self, String) {
        let text = |v: &serde_json::Value| v.as_str().unwrap().to_string();
        let mut held = Objects::default();
        let identity = match resource_type {
            "gpufleet_priority_class" => {
                let name = text(&values["name"]);
                held.classes.insert(name.clone());
                format!("PriorityClass {name}")
            }
            "gpufleet_node_taint" => {
                let node = text(&values["node_name"]);
                held.tainted_nodes.insert(node.clone());
                format!("taint on Node {node}")
            }
            "gpufleet_fleet" => {
                let name = text(&values["name"]);
                if !values["gpu_sharing"].is_null() {
                    held.config_keys.insert(format!("fleet-{name}"));
                }
                held.overlays.extend(
                    values["node_overlays"]
                        .as_object()
                        .into_iter()
                        .flat_map(|o| o.keys().cloned()),
                );
                held.pools.insert(name.clone());
                format!("NodePool {name}")
            }
            "gpufleet_gpu_sharing" => {
                held.config_keys.insert("default".into());
                held.pointed_policies
                    .extend(values["cluster_policy"].as_str().map(String::from));
                "key default".into()
            }
            "gpufleet_node_sharing" => {
                let key = format!("node-{}", text(&values["name"]));
                held.config_keys.insert(key.clone());
                held.shared_nodes
                    .extend(values["nodes"].as_array().into_iter().flatten().map(text));
                format!("key {key}")
            }
            other => panic!("unexpected {other} in state"),
        };
        (held, identity)
    }

    fn extend(&mut self, other: Objects) {
        self.classes.extend(other.classes);
        self.pools.extend(other.pools);
        self.tainted_nodes.extend(other.tainted_nodes);
        self.config_keys.extend(other.config_keys);
        self.overlays.extend(other.overlays);
        self.shared_nodes.extend(other.shared_nodes);
        self.pointed_policies.extend(other.pointed_policies);
    }

    /// What `self` has that `other` lacks, as `kind name` lines.
    fn beyond(&self, other: &Objects) -> Vec<String> {
        self.by_kind()
            .into_iter()
            .zip(other.by_kind())
            .flat_map(|((kind, a), (_, b))| a.difference(b).map(move |n| format!("{kind} {n}")))
            .collect()
    }
}

/// What state holds: every object, and the ones of resources Terraform
/// marked tainted (a failed create it keeps to replace). Each resource is
/// under one address.
fn in_state(ws: &Workspace) -> (Objects, Objects) {
    let state = ws.state();
    let resources = state["values"]["root_module"]["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let (mut all, mut tainted) = (Objects::default(), Objects::default());
    let mut identities = BTreeSet::new();
    for r in &resources {
        let kind = r["type"].as_str().unwrap();
        if kind == "terraform_data" {
            continue;
        }
        let (held, identity) = Objects::of_resource(kind, &r["values"]);
        assert!(
            identities.insert(identity.clone()),
            "{identity} appears under two addresses in state"
        );
        if r["tainted"] == true {
            tainted.extend(held.clone());
        }
        all.extend(held);
    }
    (all, tainted)
}

/// How many calls the provider retried, by cause, from its log.
#[derive(Debug, Default)]
struct Retries {
    total: usize,
    by_cause: std::collections::BTreeMap<String, usize>,
}

fn retries(log: &std::path::Path) -> Retries {
    let mut counted = Retries::default();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let Some(rest) = line.split_once("gpufleet: retry: ").map(|(_, r)| r) else {
            continue;
        };
        let cause = rest
            .split(" failed: ")
            .nth(1)
            .and_then(|c| c.split(';').next())
            .unwrap_or("?");
        counted.total += 1;
        *counted.by_cause.entry(cause.to_string()).or_default() += 1;
    }
    counted
}

fn apply_command(ws: &mut Workspace, parallelism: u32, log: &std::path::Path) -> Command {
    ws.init();
    ws.holds_objects();
    let parallelism = format!("-parallelism={parallelism}");
    let mut command = ws.command(&[
        "apply",
        "-auto-approve",
        "-no-color",
        "-input=false",
        &parallelism,
    ]);
    // To files, not pipes: nobody reads a pipe while the test waits for
    // objects, and 200 resources print enough to fill one and stall the CLI.
    let output = |name: &str| std::fs::File::create(ws.path().join(name)).unwrap();
    command
        .env("TF_LOG_PROVIDER", "WARN")
        .env("TF_LOG_PATH", log)
        .stdout(output("apply.stdout"))
        .stderr(output("apply.stderr"));
    command
}

/// Waits for the apply started by [`apply_command`] in `ws` and returns what
/// it printed.
fn finish(mut child: Child, ws: &Workspace, limit: Duration) -> Output {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < limit,
            "the CLI did not finish within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let printed = |name: &str| std::fs::read(ws.path().join(name)).unwrap();
    Output {
        status,
        stdout: printed("apply.stdout"),
        stderr: printed("apply.stderr"),
    }
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// SIGKILL kube-apiserver mid-apply, start it again 2 s later.
    KillApiServer,
    /// Stop etcd (SIGTERM) mid-apply, start it again 2 s later.
    StopEtcd,
    /// SIGKILL kube-apiserver mid-apply, then Ctrl-C the CLI while the
    /// provider waits for it; start it again once the CLI has stopped.
    InterruptDuringOutage,
    /// The provider's user throttled by APF for the whole apply.
    Throttle,
}

/// Applies a fresh configuration of `total` resources with `cli`, injects
/// `fault` (none for the comparison run), converges, checks and prints the
/// figures.
fn run(cli: &Cli, total: usize, fault: Option<Fault>, outage: Duration) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cluster) = FaultCluster::get() else {
        return;
    };
    cluster.restore();
    let fleetwide = Fleetwide::new(&cluster, total);
    let configured = fleetwide.configured();
    assert_eq!(fleetwide.resources(), total);

    // The provider acts as the user bound only to docs/rbac.yaml, as in
    // every other suite; the throttled run throttles that user alone.
    let kubeconfig = cluster.provider_kubeconfig();
    let throttle = (fault == Some(Fault::Throttle)).then(|| Throttle::install(&cluster));
    let throttled_before = cluster.throttled();

    let mut ws = Workspace::new(cli);
    let gate = ws.path().join("gate-open");
    ws.config_raw(&fleetwide.config(&kubeconfig, &gate));
    let log = ws.path().join("provider.log");
    let open_gate = || std::fs::write(&gate, "").unwrap();
    if matches!(fault, None | Some(Fault::Throttle)) {
        open_gate();
    }
    // The throttled run as the issue asks; the interrupted one a write at a
    // time, so that Ctrl-C finds writes still queued behind the one waiting.
    let parallelism = match fault {
        Some(Fault::Throttle) => 50,
        Some(Fault::InterruptDuringOutage) => 1,
        _ => 10,
    };
    let started = Instant::now();
    let mut apply = apply_command(&mut ws, parallelism, &log).spawn().unwrap();
    let mut stopped_in = None;
    let mut injected = 0;
    let mut written_before_fault = None;
    let output = match fault {
        None | Some(Fault::Throttle) => finish(apply, &ws, Duration::from_secs(900)),
        Some(fault) => {
            written_before_fault = Some(wait_for_objects(
                &fleetwide,
                &cluster,
                total / 3,
                &mut apply,
            ));
            injected += 1;
            match fault {
                Fault::KillApiServer => {
                    cluster.kill("kube-apiserver", "KILL");
                    open_gate();
                    std::thread::sleep(outage);
                    cluster.start("kube-apiserver");
                    finish(apply, &ws, Duration::from_secs(900))
                }
                Fault::StopEtcd => {
                    cluster.kill("etcd", "TERM");
                    open_gate();
                    std::thread::sleep(outage);
                    cluster.start("etcd");
                    finish(apply, &ws, Duration::from_secs(900))
                }
                Fault::InterruptDuringOutage => {
                    cluster.kill("kube-apiserver", "KILL");
                    open_gate();
                    std::thread::sleep(outage);
                    let sent = Instant::now();
                    assert!(
                        Command::new("kill")
                            .args(["-INT", &apply.id().to_string()])
                            .status()
                            .unwrap()
                            .success()
                    );
                    let output = finish(apply, &ws, Duration::from_secs(60));
                    stopped_in = Some(sent.elapsed());
                    cluster.start("kube-apiserver");
                    output
                }
                Fault::Throttle => unreachable!(),
            }
        }
    };
    let apply_time = started.elapsed();
    let first_apply_ok = output.status.success();
    if fault.is_none() || fault == Some(Fault::Throttle) {
        assert!(
            first_apply_ok,
            "{}: apply failed:\n{}",
            cli.name,
            text(&output)
        );
    }
    if fault == Some(Fault::InterruptDuringOutage) {
        assert!(
            !first_apply_ok,
            "the interrupted apply succeeded:\n{}",
            text(&output)
        );
    }
    let retried = retries(&log);

    // Nothing on the cluster that state does not hold; nothing in state
    // (other than a tainted create kept to be replaced) that the cluster
    // does not hold.
    let (held, tainted) = in_state(&ws);
    let live = fleetwide.live(&cluster);
    let unmanaged = live.beyond(&held);
    assert!(
        unmanaged.is_empty(),
        "{}: objects on the cluster that state does not track after the {fault:?} apply: {unmanaged:?}\n{}",
        cli.name,
        text(&output)
    );
    let kept_to_replace = tainted.beyond(&Objects::default());
    let missing: Vec<String> = held
        .beyond(&live)
        .into_iter()
        .filter(|o| !kept_to_replace.contains(o))
        .collect();
    assert!(
        missing.is_empty(),
        "{}: state holds objects the cluster lacks: {missing:?}",
        cli.name
    );

    // The next apply converges: everything configured exists once, state
    // equals the cluster, and the plan after it is empty.
    let converge_started = Instant::now();
    if !(first_apply_ok && fault.is_none()) {
        ws.apply();
    }
    let converge_time = converge_started.elapsed();
    let (held, _) = in_state(&ws);
    let live = fleetwide.live(&cluster);
    let lost = configured.beyond(&live);
    assert!(lost.is_empty(), "{}: lost: {lost:?}", cli.name);
    assert_eq!(
        live, configured,
        "{}: the cluster is not what was configured",
        cli.name
    );
    assert_eq!(held, live, "{}: state is not the cluster", cli.name);
    ws.assert_plan_empty();
    // The counter starts again with the API server, so it only counts
    // across a run that does not restart it.
    let throttled = throttle
        .is_some()
        .then(|| cluster.throttled().saturating_sub(throttled_before));
    drop(throttle);

    ws.destroy();
    let left = fleetwide.live(&cluster);
    // As the Helm chart had it: it renders no device-plugin config.
    let policy_config = fleetwide.policy_config(&cluster);
    fleetwide.clean_up(&cluster);
    assert_eq!(left.len(), 0, "destroy left {left:?}");
    assert_eq!(
        policy_config,
        serde_json::Value::Null,
        "destroy did not give the ClusterPolicy's fields back"
    );

    let figures = serde_json::json!({
        "cli": cli.name,
        "fault": fault.map_or("none".to_string(), |f| format!("{f:?}")),
        "resources": total,
        "objects": configured.len(),
        "faults_injected": injected,
        "outage_seconds": (injected > 0).then(|| round(outage)),
        "objects_written_before_fault": written_before_fault,
        "first_apply_succeeded": first_apply_ok,
        "first_apply_seconds": round(apply_time),
        "stopped_after_sigint_seconds": stopped_in.map(round),
        "tainted_after_first_apply": tainted.len(),
        "converge_apply_seconds": round(converge_time),
        "retries": retried.total,
        "retries_by_cause": retried.by_cause,
        "answered_429": throttled,
        "lost": lost.len(),
        "unmanaged": unmanaged.len(),
        "parallelism": parallelism,
    });
    eprintln!("fault figures: {figures}");
    if fault == Some(Fault::Throttle) {
        assert!(
            throttled > Some(0),
            "the API server never throttled the apply"
        );
        assert!(
            retried
                .by_cause
                .get("throttled (429)")
                .copied()
                .unwrap_or(0)
                > 0,
            "no 429 was retried: {retried:?}"
        );
    }
    if let Some(written) = written_before_fault {
        assert!(
            written < configured.len(),
            "{fault:?} came after the apply had written everything"
        );
    }
    // A killed API server refuses connections; a stopped etcd may only
    // slow the API server's answers down.
    if matches!(
        fault,
        Some(Fault::KillApiServer | Fault::InterruptDuringOutage)
    ) {
        assert!(retried.total > 0, "{fault:?}: the provider retried nothing");
    }
}

async fn client_of(kubeconfig: &str) -> kube::Client {
    gpufleet::protocol::tls::install_crypto_provider();
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// What the API server answers the provider's user now (the HTTP status of
/// a LIST it may make), or `None` without an answer.
async fn answer_to(client: &kube::Client) -> Option<u16> {
    let classes = Api::<PriorityClass>::all(client.clone());
    let one = ListParams::default().limit(1);
    let listed = tokio::time::timeout(Duration::from_millis(500), classes.list(&one));
    match listed.await {
        Ok(Ok(_)) => Some(200),
        Ok(Err(kube::Error::Api(status))) => Some(status.code),
        _ => None,
    }
}

/// etcd paused until dropped, however the test ends.
struct PausedEtcd<'a>(&'a FaultCluster);

impl Drop for PausedEtcd<'_> {
    fn drop(&mut self) {
        self.0.signal_etcd("CONT");
    }
}

/// An apply whose writes reach kube-apiserver right after it started
/// again, as the least-privilege provider user. Until its RBAC informers
/// have loaded the roles and bindings, the API server denies every request
/// of that user (403) as if it had no rights; the provider must take such
/// a denial as passing (`cluster::retry::RBAC_LOAD_WINDOW`). The API server
/// is killed while the CLI waits at a gate and started again; at its first
/// answer to the test's own probe as that user, a 403, etcd is paused
/// (SIGSTOP), which holds the informers' first LIST back as a loaded etcd
/// would (on this testbed the window is otherwise about 0.1 s), and the
/// gate opens. etcd goes on once the provider has logged a denied attempt,
/// and the apply must succeed. Both CLIs, one after the other.
#[test]
fn an_apply_right_after_an_api_server_restart() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cluster) = FaultCluster::get() else {
        return;
    };
    cluster.restore();
    let kubeconfig = cluster.provider_kubeconfig();
    for cli in clis() {
        let run = unique_name("rbac-load");
        let mut ws = Workspace::new(cli);
        let gate = ws.path().join("gate-open");
        let log = ws.path().join("provider.log");
        let mut body = provider_block_for(&kubeconfig, "");
        body += &format!(
            "resource \"terraform_data\" \"gate\" {{\n  provisioner \"local-exec\" {{\n    command = \"i=0; while [ ! -e '{}' ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.02; done\"\n  }}\n}}\n",
            gate.display()
        );
        let names: Vec<String> = (0..5).map(|i| format!("{run}-{i}")).collect();
        for (i, name) in names.iter().enumerate() {
            body += &class(
                &format!("pc{i}"),
                name,
                i as i64,
                "  depends_on = [terraform_data.gate]\n",
            );
        }
        ws.config_raw(&body);
        let apply = apply_command(&mut ws, 10, &log).spawn().unwrap();

        let (paused, starting) = block_on(async {
            let probe = client_of(&kubeconfig).await;
            for _ in 0..3 {
                cluster.kill("kube-apiserver", "KILL");
                let starting = std::thread::spawn({
                    let cluster = cluster.clone();
                    move || cluster.start("kube-apiserver")
                });
                let started = Instant::now();
                let first = loop {
                    if let Some(code) = answer_to(&probe).await {
                        break code;
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(60),
                        "kube-apiserver did not answer within a minute of its start"
                    );
                    tokio::time::sleep(Duration::from_millis(10)).await;
                };
                if first == 403 {
                    cluster.signal_etcd("STOP");
                    return (PausedEtcd(&cluster), starting);
                }
                // The rules were loaded before the probe's first answer.
                starting.join().unwrap();
            }
            panic!(
                "three restarts of kube-apiserver answered the provider's user at once: no denial to meet"
            );
        });
        std::fs::write(&gate, "").unwrap();
        let waiting = Instant::now();
        let denied = || {
            retries(&log)
                .by_cause
                .get("forbidden (403)")
                .copied()
                .unwrap_or(0)
        };
        while denied() == 0 && waiting.elapsed() < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(paused);
        starting.join().unwrap();
        let output = finish(apply, &ws, Duration::from_secs(300));
        let retried = retries(&log);
        eprintln!(
            "fault figures: {}",
            serde_json::json!({
                "cli": cli.name,
                "fault": "apply right after an API server restart",
                "first_apply_succeeded": output.status.success(),
                "retries_by_cause": retried.by_cause,
            })
        );
        assert!(
            output.status.success(),
            "{}: the apply after the restart failed:\n{}",
            cli.name,
            text(&output)
        );
        // Whether the apply's own requests met the denial depends on how
        // fast this machine's informers load (the fault figures above say);
        // the retry of a denial is the retry policy's unit tests'.
        let live = block_on(async {
            let classes = Api::<PriorityClass>::all(cluster.client().await);
            let mut live = Vec::new();
            for name in &names {
                live.extend(
                    classes
                        .get_opt(name)
                        .await
                        .unwrap()
                        .and_then(|c| c.metadata.name),
                );
            }
            live
        });
        assert_eq!(live, names, "{}", cli.name);
        ws.assert_plan_empty();
        ws.destroy();
    }
}

fn round(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// Waits until the apply has written `count` objects; returns how many it has.
fn wait_for_objects(
    fleetwide: &Fleetwide,
    cluster: &FaultCluster,
    count: usize,
    apply: &mut Child,
) -> usize {
    let started = Instant::now();
    loop {
        let written = fleetwide.live(cluster).len();
        if written >= count {
            return written;
        }
        if let Some(status) = apply.try_wait().unwrap() {
            panic!("the apply ended ({status}) with {written} of {count} objects written");
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the apply did not write {count} objects in 5 minutes"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn cli(name: &str) -> &'static Cli {
    clis()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| &clis()[0])
}

/// The short runs in `make test`: each fault once, with one CLI each (both
/// CLIs meet Ctrl-C and lost answers in tests/system/partial_failure.rs), and
/// outages of 2 s.
const SHORT: usize = 20;
const SHORT_OUTAGE: Duration = Duration::from_secs(2);

#[test]
fn api_server_killed_mid_apply() {
    run(
        cli("terraform"),
        SHORT,
        Some(Fault::KillApiServer),
        SHORT_OUTAGE,
    );
}

#[test]
fn etcd_stopped_mid_apply() {
    run(cli("tofu"), SHORT, Some(Fault::StopEtcd), SHORT_OUTAGE);
}

#[test]
fn ctrl_c_while_the_api_server_is_down() {
    run(
        cli("tofu"),
        SHORT,
        Some(Fault::InterruptDuringOutage),
        SHORT_OUTAGE,
    );
}

#[test]
fn throttled_apply_with_parallelism_50() {
    run(cli("terraform"), SHORT, Some(Fault::Throttle), SHORT_OUTAGE);
}

/// The long runs (`make test-long`): 200 resources, outages of 20 s, with
/// terraform, one test per fault and a fault-free apply to compare with
/// (the short runs above meet both CLIs).
const LONG: usize = 200;
const LONG_OUTAGE: Duration = Duration::from_secs(20);

#[test]
#[ignore = "long: make test-long"]
fn long_no_fault_200() {
    run(cli("terraform"), LONG, None, LONG_OUTAGE);
}

#[test]
#[ignore = "long: make test-long"]
fn long_api_server_killed_200() {
    run(
        cli("terraform"),
        LONG,
        Some(Fault::KillApiServer),
        LONG_OUTAGE,
    );
}

#[test]
#[ignore = "long: make test-long"]
fn long_etcd_stopped_200() {
    run(cli("terraform"), LONG, Some(Fault::StopEtcd), LONG_OUTAGE);
}

#[test]
#[ignore = "long: make test-long"]
fn long_ctrl_c_while_the_api_server_is_down_200() {
    run(
        cli("terraform"),
        LONG,
        Some(Fault::InterruptDuringOutage),
        LONG_OUTAGE,
    );
}

#[test]
#[ignore = "long: make test-long"]
fn long_throttled_with_parallelism_50_200() {
    run(cli("terraform"), LONG, Some(Fault::Throttle), LONG_OUTAGE);
}

/// kube-apiserver flags of an API server without ValidatingAdmissionPolicy
/// v1, as before Kubernetes 1.30: the API off, and with it the admission
/// plugin (whose informers would otherwise never sync and refuse every
/// request).
const WITHOUT_ADMISSION_POLICIES: &str = "--runtime-config=admissionregistration.k8s.io/v1/validatingadmissionpolicies=false,admissionregistration.k8s.io/v1/validatingadmissionpolicybindings=false --disable-admission-plugins=ValidatingAdmissionPolicy";

/// The docs' claim that a namespace fence needs Kubernetes 1.30: on an API
/// server that does not serve ValidatingAdmissionPolicy v1, a fenced
/// fleet's and class's plan warn, and their apply fails naming the version
/// needed with nothing written, with both CLIs.
#[test]
fn a_namespace_fence_needs_kubernetes_1_30() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cluster) = FaultCluster::get() else {
        return;
    };
    cluster.restore();
    cluster.control(
        &["restart", "kube-apiserver"],
        Some(WITHOUT_ADMISSION_POLICIES),
    );
    for cli in clis() {
        let name = unique_name("fence-old");
        let fenced = "  allowed_namespaces = [\"training\"]\n";
        let mut ws = Workspace::new(cli);
        ws.config_raw(
            &(provider_block_for(&cluster.provider_kubeconfig(), "")
                + &class("c", &name, 1, fenced)
                + &fleet("f", &name, fenced)),
        );
        // The CLIs show one of the two alike warnings.
        let plan = ws.plan();
        assert!(
            plan.text.contains("Namespace fence needs Kubernetes 1.30"),
            "{}: {}",
            cli.name,
            plan.text
        );
        let error = ws.apply_fails();
        for what in [
            format!("priority class {name:?}"),
            format!("fleet {name:?}"),
        ] {
            assert!(
                error.contains(&what) && error.contains("GA since Kubernetes 1.30"),
                "{}: no error for {what}: {error}",
                cli.name
            );
        }
        block_on(async {
            let client = cluster.client().await;
            let classes = Api::<PriorityClass>::all(client.clone());
            let pools = Api::<DynamicObject>::all_with(client, &node_pools("karpenter.sh"));
            assert!(classes.get_opt(&name).await.unwrap().is_none());
            assert!(pools.get_opt(&name).await.unwrap().is_none());
        });
    }
    cluster.restore();
}

/// The nodes one taint goes over when kube-apiserver is killed in the
/// middle of its writes: a dozen rounds of the writes the provider has in
/// flight at once (`kit::node_target::IN_FLIGHT`).
const NODES_UNDER_ONE_TAINT: usize = 200;
/// Another tool's taint on each of those nodes, which must survive.
const FOREIGN_TAINT: &str = "other.example.com/keep";

/// A run's nodes on the fault cluster, deleted however the test ends.
struct RunNodes {
    cluster: FaultCluster,
    names: Vec<String>,
}

impl RunNodes {
    /// `count` nodes labelled with the run, each with [`FOREIGN_TAINT`].
    fn new(cluster: &FaultCluster, run: &str, count: usize) -> Self {
        let names: Vec<String> = (0..count).map(|i| format!("{run}-node-{i}")).collect();
        block_on(async {
            let api = Api::<Node>::all(cluster.client().await);
            for name in &names {
                let node: Node = serde_json::from_value(serde_json::json!({
                    "metadata": { "name": name, "labels": { RUN_LABEL: run } },
                    "spec": { "taints": [{ "key": FOREIGN_TAINT, "value": "v", "effect": "NoSchedule" }] },
                }))
                .unwrap();
                api.create(&PostParams::default(), &node).await.unwrap();
            }
        });
        Self {
            cluster: cluster.clone(),
            names,
        }
    }

    /// Each node's taints as `key=value`, ours and the other tool's.
    fn taints(&self, run: &str) -> std::collections::BTreeMap<String, Vec<String>> {
        block_on(async {
            let selector = ListParams::default().labels(&format!("{RUN_LABEL}={run}"));
            let nodes = Api::<Node>::all(self.cluster.client().await)
                .list(&selector)
                .await
                .unwrap();
            nodes
                .items
                .into_iter()
                .map(|node| {
                    let taints = node
                        .spec
                        .and_then(|s| s.taints)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|t| format!("{}={}", t.key, t.value.unwrap_or_default()))
                        .collect();
                    (node.metadata.name.unwrap_or_default(), taints)
                })
                .collect()
        })
    }

    /// The nodes carrying our taint.
    fn tainted(&self, run: &str) -> BTreeSet<String> {
        self.taints(run)
            .into_iter()
            .filter(|(_, taints)| taints.iter().any(|t| t.starts_with(TAINT_KEY)))
            .map(|(name, _)| name)
            .collect()
    }
}

impl Drop for RunNodes {
    fn drop(&mut self) {
        block_on(async {
            let api = Api::<Node>::all(self.cluster.client().await);
            for name in &self.names {
                let _ = api.delete(name, &DeleteParams::default()).await;
            }
        });
    }
}

/// Starts `apply` once a watch on the run's nodes is open, and SIGKILLs
/// kube-apiserver (its pid, not `cluster.sh`, which would take longer than
/// the writes) at the first node that carries our taint. Returns the
/// started CLI and how many nodes the watch had seen tainted by then.
fn kill_at_first_taint(cluster: &FaultCluster, run: &str, apply: &mut Command) -> (Child, usize) {
    block_on(async {
        let api = Api::<Node>::all(cluster.client().await);
        let selector = format!("{RUN_LABEL}={run}");
        let listed = api
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap();
        let version = listed.metadata.resource_version.unwrap_or_default();
        let mut events = Box::pin(
            api.watch(&WatchParams::default().labels(&selector), &version)
                .await
                .unwrap(),
        );
        let mut child = apply.spawn().unwrap();
        let started = Instant::now();
        loop {
            let next = tokio::time::timeout(Duration::from_secs(1), events.next()).await;
            if let Ok(Some(Ok(WatchEvent::Modified(node)))) = next
                && node
                    .spec
                    .and_then(|s| s.taints)
                    .is_some_and(|t| t.iter().any(|t| t.key == TAINT_KEY))
            {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the apply ended ({status}) before it tainted any node");
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the apply tainted no node in 2 minutes"
            );
        }
        let pid = std::fs::read_to_string(cluster.dir.join("kube-apiserver.pid")).unwrap();
        let killed = Command::new("kill")
            .args(["-KILL", pid.trim()])
            .status()
            .unwrap();
        assert!(killed.success(), "kill -KILL kube-apiserver");
        // What the watch had delivered before the kill, for the figures.
        let mut seen = 1;
        while let Ok(Some(Ok(WatchEvent::Modified(_)))) =
            tokio::time::timeout(Duration::from_millis(1), events.next()).await
        {
            seen += 1;
        }
        (child, seen)
    })
}

/// One `gpufleet_node_taint` over [`NODES_UNDER_ONE_TAINT`] nodes (a
/// selector), which the provider writes several at a time from one LIST,
/// each node also carrying another tool's taint. kube-apiserver is
/// SIGKILLed at the first node tainted and started again 2 s later: the
/// writes in flight and those after them meet refused connections or lost
/// answers and are retried. State must then name exactly the nodes that
/// carry the taint, the apply (or the next) put it once on every node,
/// the other tool's taint must be on every node, the plan empty, and
/// destroy must leave that taint alone. Both CLIs, one after the other.
#[test]
fn api_server_killed_mid_node_writes() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cluster) = FaultCluster::get() else {
        return;
    };
    cluster.restore();
    let kubeconfig = cluster.provider_kubeconfig();
    for cli in clis() {
        let run = unique_name("node-writes");
        let nodes = RunNodes::new(&cluster, &run, NODES_UNDER_ONE_TAINT);
        let all: BTreeSet<String> = nodes.names.iter().cloned().collect();
        let mut ws = Workspace::new(cli);
        ws.config_raw(&(provider_block_for(&kubeconfig, "")
            + &format!(
                "resource \"gpufleet_node_taint\" \"t\" {{\n  node_selector = {{ \"{RUN_LABEL}\" = \"{run}\" }}\n  taints = [{{ key = \"{TAINT_KEY}\", value = \"{run}\", effect = \"NoSchedule\" }}]\n}}\n"
            )));
        let log = ws.path().join("provider.log");
        let started = Instant::now();
        let mut apply = apply_command(&mut ws, 10, &log);
        let (apply, seen_before_kill) = kill_at_first_taint(&cluster, &run, &mut apply);
        std::thread::sleep(SHORT_OUTAGE);
        cluster.start("kube-apiserver");
        let output = finish(apply, &ws, Duration::from_secs(300));
        let apply_time = started.elapsed();
        let retried = retries(&log);
        assert!(
            retried.total > 0,
            "{}: the provider retried nothing: the API server died after the writes\n{}",
            cli.name,
            text(&output)
        );

        // State names exactly the nodes carrying the taint: all of them
        // after a successful apply, else those the apply wrote.
        let in_state = |ws: &Workspace| -> BTreeSet<String> {
            ws.resource_values("gpufleet_node_taint.t")["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| n.as_str().unwrap().to_string())
                .collect()
        };
        let first_apply_ok = output.status.success();
        let first_error = (!first_apply_ok).then(|| {
            let printed = text(&output);
            let error = printed.find("Error: ").map_or("", |at| &printed[at..]);
            error.chars().take(600).collect::<String>()
        });
        let tainted = nodes.tainted(&run);
        if first_apply_ok {
            assert_eq!(tainted, all, "{}: nodes left untainted", cli.name);
        } else {
            ws.apply();
        }
        assert_eq!(in_state(&ws), nodes.tainted(&run), "{}: state", cli.name);
        for (name, taints) in nodes.taints(&run) {
            assert_eq!(
                taints,
                [format!("{FOREIGN_TAINT}=v"), format!("{TAINT_KEY}={run}")],
                "{}: the taints of {name}",
                cli.name
            );
        }
        ws.assert_plan_empty();
        ws.destroy();
        for (name, taints) in nodes.taints(&run) {
            assert_eq!(
                taints,
                [format!("{FOREIGN_TAINT}=v")],
                "{}: the taints of {name} after destroy",
                cli.name
            );
        }
        eprintln!(
            "fault figures: {}",
            serde_json::json!({
                "cli": cli.name,
                "fault": "kube-apiserver killed mid node writes",
                "nodes": NODES_UNDER_ONE_TAINT,
                "tainted_when_killed": seen_before_kill,
                "first_apply_succeeded": first_apply_ok,
                "first_apply_error": first_error,
                "first_apply_seconds": round(apply_time),
                "retries": retried.total,
                "retries_by_cause": retried.by_cause,
            })
        );
    }
}

/// Namespaces a queue serves, in how many LocalQueues it has: enough that
/// kube-apiserver, killed when the ClusterQueue appears, dies in the
/// middle of their writes.
const QUEUE_NAMESPACES: usize = 8;

/// Kueue's kinds on the fault cluster (`cluster.sh up --kueue`).
fn kueue_api(
    client: &kube::Client,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let resource = common::fixtures::kueue(kind, plural);
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// A run's namespaces on the fault cluster, deleted (with the LocalQueues
/// in them) however the test ends.
struct RunNamespaces {
    cluster: FaultCluster,
    names: Vec<String>,
}

impl RunNamespaces {
    fn new(cluster: &FaultCluster, run: &str, count: usize) -> Self {
        let names: Vec<String> = (0..count).map(|i| format!("{run}-ns-{i}")).collect();
        block_on(async {
            let api = Api::<Namespace>::all(cluster.client().await);
            for name in &names {
                let ns: Namespace =
                    serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
                        .unwrap();
                api.create(&PostParams::default(), &ns).await.unwrap();
            }
        });
        Self {
            cluster: cluster.clone(),
            names,
        }
    }

    /// The namespaces holding the run's LocalQueue `queue`, pointed at its
    /// ClusterQueue.
    fn with_local_queue(&self, queue: &str) -> BTreeSet<String> {
        block_on(async {
            let client = self.cluster.client().await;
            let mut found = BTreeSet::new();
            for ns in &self.names {
                let local = kueue_api(&client, "LocalQueue", "localqueues", Some(ns))
                    .get_opt(queue)
                    .await
                    .unwrap();
                if local.is_some_and(|q| q.data["spec"]["clusterQueue"] == queue) {
                    found.insert(ns.clone());
                }
            }
            found
        })
    }
}

impl Drop for RunNamespaces {
    fn drop(&mut self) {
        block_on(async {
            let api = Api::<Namespace>::all(self.cluster.client().await);
            for name in &self.names {
                let _ = api.delete(name, &DeleteParams::default()).await;
            }
        });
    }
}

/// Starts `apply` once a watch on ClusterQueues is open, and SIGKILLs
/// kube-apiserver (its pid) as soon as ClusterQueue `queue` appears, while
/// the provider writes the LocalQueues after it.
fn kill_at_cluster_queue(cluster: &FaultCluster, queue: &str, apply: &mut Command) -> Child {
    block_on(async {
        let api = kueue_api(
            &cluster.client().await,
            "ClusterQueue",
            "clusterqueues",
            None,
        );
        let fields = format!("metadata.name={queue}");
        let listed = api
            .list(&ListParams::default().fields(&fields))
            .await
            .unwrap();
        let version = listed.metadata.resource_version.unwrap_or_default();
        let mut events = Box::pin(
            api.watch(&WatchParams::default().fields(&fields), &version)
                .await
                .unwrap(),
        );
        let mut child = apply.spawn().unwrap();
        let started = Instant::now();
        loop {
            let next = tokio::time::timeout(Duration::from_secs(1), events.next()).await;
            if let Ok(Some(Ok(WatchEvent::Added(_)))) = next {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the apply ended ({status}) before it wrote the ClusterQueue");
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the apply wrote no ClusterQueue in 2 minutes"
            );
        }
        let pid = std::fs::read_to_string(cluster.dir.join("kube-apiserver.pid")).unwrap();
        let killed = Command::new("kill")
            .args(["-KILL", pid.trim()])
            .status()
            .unwrap();
        assert!(killed.success(), "kill -KILL kube-apiserver");
        child
    })
}

/// How long Kueue may take to release a deleted ClusterQueue: after the
/// runs before kill kube-apiserver, its watches back off for up to a minute
/// or more before they see changes again.
const KUEUE_CATCHES_UP: Duration = Duration::from_secs(180);

/// Waits until Kueue reconciles again: a probe ClusterQueue, deleted, is
/// gone once Kueue has released its finalizer.
fn kueue_reconciles(cluster: &FaultCluster) {
    block_on(async {
        let api = kueue_api(
            &cluster.client().await,
            "ClusterQueue",
            "clusterqueues",
            None,
        );
        let name = unique_name("kueue-probe");
        let probe: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {"resourceGroups": []},
        }))
        .unwrap();
        api.create(&PostParams::default(), &probe).await.unwrap();
        api.delete(&name, &DeleteParams::default()).await.unwrap();
        let started = Instant::now();
        while api.get_opt(&name).await.unwrap().is_some() {
            assert!(
                started.elapsed() < KUEUE_CATCHES_UP,
                "Kueue did not release a deleted ClusterQueue in {KUEUE_CATCHES_UP:?}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
}

/// A fleet offered to Kueue and a `gpufleet_queue` on it serving
/// [`QUEUE_NAMESPACES`] namespaces: kube-apiserver is SIGKILLed when the
/// ClusterQueue appears, while the provider writes its LocalQueues, and
/// started again 2 s later. The apply (or the next) converges: the
/// ClusterQueue and every LocalQueue there, state naming exactly the
/// namespaces that have one, the second plan empty. A ClusterQueue then
/// removed by hand shows in the plan as a queue to create, and the apply
/// puts it back; destroy leaves no ClusterQueue, LocalQueue, flavor or
/// NodePool. Both CLIs, one after the other.
#[test]
fn api_server_killed_mid_queue_apply() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cluster) = FaultCluster::get() else {
        return;
    };
    cluster.restore();
    let kueue_runs = block_on(async {
        kueue_api(
            &cluster.client().await,
            "ClusterQueue",
            "clusterqueues",
            None,
        )
        .list(&ListParams::default().limit(1))
        .await
        .is_ok()
    });
    if !kueue_runs {
        common::skipped(
            "the fault suite's queue run",
            "Kueue does not run on the fault cluster (cluster.sh up --kueue)",
        );
        return;
    }
    kueue_reconciles(&cluster);
    let kubeconfig = cluster.provider_kubeconfig();
    for cli in clis() {
        let run = unique_name("queue-fault");
        let namespaces = RunNamespaces::new(&cluster, &run, QUEUE_NAMESPACES);
        let all: BTreeSet<String> = namespaces.names.iter().cloned().collect();
        let queue_name = format!("{run}-queue");
        let listed: Vec<String> = namespaces.names.iter().map(|n| format!("{n:?}")).collect();
        let mut ws = Workspace::new(cli);
        ws.config_raw(&(provider_block_for(&kubeconfig, "")
            + &fleet("f", &run, "  accelerators = [\"L4\"]\n  kueue_flavor = true\n")
            + &format!(
                "resource \"gpufleet_queue\" \"q\" {{\n  name       = \"{queue_name}\"\n  namespaces = [{}]\n  quotas     = [{}]\n}}\n",
                listed.join(", "),
                common::fixtures::quota("f", 8, "")
            )));
        let log = ws.path().join("provider.log");
        let mut apply = apply_command(&mut ws, 10, &log);
        let apply = kill_at_cluster_queue(&cluster, &queue_name, &mut apply);
        std::thread::sleep(SHORT_OUTAGE);
        cluster.start("kube-apiserver");
        let output = finish(apply, &ws, Duration::from_secs(300));
        let first_apply_ok = output.status.success();
        let written_first = namespaces.with_local_queue(&queue_name);
        if !first_apply_ok {
            ws.apply();
        }
        let in_state = |ws: &Workspace| -> BTreeSet<String> {
            ws.resource_values("gpufleet_queue.q")["namespaces"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| n.as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            namespaces.with_local_queue(&queue_name),
            all,
            "{}: LocalQueues missing\n{}",
            cli.name,
            text(&output)
        );
        assert_eq!(in_state(&ws), all, "{}: state", cli.name);
        ws.assert_plan_empty();

        // The ClusterQueue removed by hand: a queue to create, put back.
        block_on(async {
            kueue_api(
                &cluster.client().await,
                "ClusterQueue",
                "clusterqueues",
                None,
            )
            .delete(&queue_name, &DeleteParams::default())
            .await
            .unwrap();
        });
        let cluster_queue = || {
            block_on(async {
                kueue_api(
                    &cluster.client().await,
                    "ClusterQueue",
                    "clusterqueues",
                    None,
                )
                .get_opt(&queue_name)
                .await
                .unwrap()
            })
        };
        let started = Instant::now();
        while cluster_queue().is_some() {
            assert!(
                started.elapsed() < KUEUE_CATCHES_UP,
                "{}: Kueue kept the unused ClusterQueue",
                cli.name
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        ws.assert_plan_changes()
            .assert_actions("gpufleet_queue.q", &["create"]);
        ws.apply();
        assert!(cluster_queue().is_some(), "{}: not put back", cli.name);
        ws.assert_plan_empty();

        ws.destroy();
        assert!(cluster_queue().is_none(), "{}: ClusterQueue left", cli.name);
        assert!(
            namespaces.with_local_queue(&queue_name).is_empty(),
            "{}: LocalQueues left",
            cli.name
        );
        block_on(async {
            let client = cluster.client().await;
            let flavor = kueue_api(&client, "ResourceFlavor", "resourceflavors", None)
                .get_opt(&run)
                .await
                .unwrap();
            assert!(flavor.is_none(), "{}: flavor left", cli.name);
            let pool = Api::<DynamicObject>::all_with(client, &node_pools("karpenter.sh"))
                .get_opt(&run)
                .await
                .unwrap();
            assert!(pool.is_none(), "{}: NodePool left", cli.name);
        });
        eprintln!(
            "fault figures: {}",
            serde_json::json!({
                "cli": cli.name,
                "fault": "kube-apiserver killed mid queue apply",
                "local_queues": QUEUE_NAMESPACES,
                "local_queues_after_first_apply": written_first.len(),
                "first_apply_succeeded": first_apply_ok,
                "retries": retries(&log).total,
            })
        );
    }
}
