//! Configuration snippets and live-object lookups the acceptance tests share.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use serde_json::json;

use crate::{block_on, kube_client, kubeconfig, repo_root, unique_name};

pub fn class(resource: &str, name: &str, value: i64, extra: &str) -> String {
    format!(
        "resource \"gpufleet_priority_class\" \"{resource}\" {{\n  name  = \"{name}\"\n  value = {value}\n{extra}}}\n"
    )
}

/// A fleet on kwok's node class, as the test cluster has it.
pub fn fleet(resource: &str, name: &str, body: &str) -> String {
    format!(
        "resource \"gpufleet_fleet\" \"{resource}\" {{\n  name       = \"{name}\"\n  node_class = {{ group = \"karpenter.kwok.sh\", kind = \"KWOKNodeClass\", name = \"default\" }}\n{body}}}\n"
    )
}

/// The seed's training fleet: 8×H100 nodes, tainted for training, 64 GPUs.
pub const TRAINING: &str = r#"  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  taints            = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  limits            = { gpus = 64 }
"#;

/// The seed's inference fleet: L4 nodes, tainted for inference.
pub const INFERENCE: &str = r#"  accelerators = ["L4"]
  taints       = [{ key = "workload", value = "inference", effect = "NoSchedule" }]
"#;

pub fn live_priority_class(name: &str) -> Option<PriorityClass> {
    block_on(async {
        Api::<PriorityClass>::all(kube_client().await)
            .get_opt(name)
            .await
            .unwrap()
    })
}

/// `kubectl apply` of a YAML stream, as a user would.
pub fn kubectl_apply(yaml: &str) {
    let mut child = Command::new(repo_root().join("target/tools/bin/kubectl"))
        .args(["--kubeconfig", &kubeconfig(), "apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl (built by testbed/build.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl apply failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// NodePools of an API group (`karpenter.sh`, or a missing one in tests of that case).
pub fn node_pools(group: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", "NodePool"), "nodepools")
}

pub async fn node_pool_api() -> Api<DynamicObject> {
    Api::all_with(kube_client().await, &node_pools("karpenter.sh"))
}

pub fn live_node_pool(name: &str) -> Option<DynamicObject> {
    block_on(async { node_pool_api().await.get_opt(name).await.unwrap() })
}

/// Cluster-scoped objects a test made or may leave behind, deleted when the
/// guard goes however the test ends. A deletion that fails says what is left
/// and how to remove it, and fails a test that passed so far.
pub struct Guard {
    resource: ApiResource,
    names: Vec<String>,
}

impl Guard {
    pub fn of<K: kube::Resource<DynamicType = ()>>(names: &[&str]) -> Self {
        Self {
            resource: ApiResource::erase::<K>(&()),
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    /// NodePools (a custom resource, so not a [`kube::Resource`] of its own).
    pub fn node_pools(names: &[&str]) -> Self {
        Self {
            resource: node_pools("karpenter.sh"),
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    /// Objects of a custom kind (Kueue's ClusterQueues: [`kueue`]).
    pub fn custom(resource: ApiResource, names: &[&str]) -> Self {
        Self {
            resource,
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    pub fn add(&mut self, name: &str) {
        self.names.push(name.to_string());
    }

    /// Deletes `name` now (a missing object is fine); the guard keeps
    /// watching nothing else for it.
    pub fn delete(&mut self, name: &str) {
        self.names.retain(|n| n != name);
        if let Err(e) = self.try_delete(name) {
            panic!("{e}");
        }
    }

    /// On a thread of its own, so that it works from async tests too.
    fn try_delete(&self, name: &str) -> Result<(), String> {
        let resource = &self.resource;
        let delete = || {
            block_on(async move {
                let api: Api<DynamicObject> = Api::all_with(kube_client().await, resource);
                match api.delete(name, &DeleteParams::default()).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                    Err(e) => Err(format!(
                        "cleanup: could not delete {} {name}: {e}; remove it with `kubectl delete {} {name}`",
                        resource.kind, resource.plural
                    )),
                }
            })
        };
        std::thread::scope(|scope| scope.spawn(delete).join()).unwrap_or_else(|_| {
            Err(format!(
                "cleanup: deleting {} {name} panicked",
                resource.kind
            ))
        })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let failures: Vec<String> = self
            .names
            .iter()
            .filter_map(|name| self.try_delete(name).err())
            .collect();
        if failures.is_empty() {
            return;
        }
        let message = failures.join("\n");
        if std::thread::panicking() {
            let _ = writeln!(std::io::stderr(), "{message}");
        } else {
            panic!("{message}");
        }
    }
}

/// Karpenter's NodeOverlays (karpenter.sh/v1alpha1), cluster-wide.
pub fn node_overlays(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("karpenter.sh", "v1alpha1", "NodeOverlay"),
        "nodeoverlays",
    );
    Api::all_with(client.clone(), &resource)
}

/// The GPU Operator's ClusterPolicies (nvidia.com/v1), cluster-wide.
pub fn cluster_policies(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("nvidia.com", "v1", "ClusterPolicy"),
        "clusterpolicies",
    );
    Api::all_with(client.clone(), &resource)
}

/// The GPU Operator's ClusterPolicy as its Helm chart renders it
/// ([`crate::helm::cluster_policy`]), named `name`: the chart gives every
/// install the same name, and tests side by side need names of their own.
pub fn helm_cluster_policy(name: &str, mig_strategy: Option<&str>) -> serde_json::Value {
    let mut object = crate::helm::cluster_policy(mig_strategy);
    object["metadata"]["name"] = json!(name);
    object
}

/// The names of the ClusterPolicies on the cluster.
pub async fn cluster_policy_names(client: &kube::Client) -> Vec<String> {
    cluster_policies(client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|policy| policy.metadata.name)
        .collect()
}

/// A unique name for a test's own ClusterPolicy that sorts before the
/// chart's `cluster-policy` and any other name but a digit's: gpufleet and
/// the simulated device plugin take the first by name for the operator's.
pub fn first_cluster_policy_name() -> String {
    // Names begin with a letter or a digit; digits sort first.
    unique_name("0-cluster-policy")
}

/// The GPU Operator's ClusterPolicy as `helm install` leaves it
/// ([`helm_cluster_policy`], written as [`crate::helm`] says), deleted when
/// the test ends. Its methods block: call them outside the test's runtime.
pub struct HelmClusterPolicy(
    /// Its name.
    pub String,
    /// The release's manifest of it, which `helm upgrade` patches from.
    serde_json::Value,
);

impl HelmClusterPolicy {
    /// Installs it with the chart's values and `mig_strategy` (`""` clears
    /// the chart's `single`, so the operator sets none), under a name
    /// that sorts before every other ClusterPolicy's: gpufleet and the
    /// simulated device plugin take the first by name for the operator's, so
    /// on a cluster that already has one (any cluster with the GPU Operator,
    /// whose chart names it `cluster-policy`) the test's own is the one that
    /// counts. Hold `common::exclusive::own_cluster_policy` while it lives.
    pub fn install(mig_strategy: Option<&str>) -> Self {
        let name = first_cluster_policy_name();
        let object = helm_cluster_policy(&name, mig_strategy);
        let first = block_on(async {
            let client = kube_client().await;
            crate::helm::install_cluster_policy(&client, &object).await;
            cluster_policy_names(&client).await.into_iter().min()
        });
        let policy = Self(name, object);
        assert_eq!(
            first.as_ref(),
            Some(&policy.0),
            "ClusterPolicy {first:?} sorts before the test's own, so gpufleet would take it for the operator's"
        );
        policy
    }

    /// A `helm upgrade` with the MIG strategy in its values: Helm patches
    /// what changed in the chart's rendering, and only that.
    pub fn helm_upgrade(&mut self, mig_strategy: &str) {
        let object = helm_cluster_policy(&self.0, Some(mig_strategy));
        block_on(async {
            crate::helm::upgrade_cluster_policy(&kube_client().await, &self.1, &object).await
        });
        self.1 = object;
    }

    /// Another writer (field manager `manager`) applies `spec`, a part of
    /// the spec, taking its fields over.
    pub fn edit(&self, manager: &str, spec: serde_json::Value) {
        let object = serde_json::json!({
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": self.0},
            "spec": spec,
        });
        block_on(async {
            cluster_policies(&kube_client().await)
                .patch(
                    &self.0,
                    &PatchParams::apply(manager).force(),
                    &Patch::Apply(object),
                )
                .await
                .unwrap();
        });
    }

    pub fn live(&self) -> DynamicObject {
        block_on(async {
            cluster_policies(&kube_client().await)
                .get(&self.0)
                .await
                .unwrap()
        })
    }

    /// The managers of the live object and the spec fields each owns, as
    /// dotted paths (`devicePlugin.config.name`).
    pub fn owners(&self) -> BTreeMap<String, Vec<String>> {
        fn leaves(prefix: &str, fields: &serde_json::Value, out: &mut Vec<String>) {
            for (k, v) in fields.as_object().into_iter().flatten() {
                let Some(name) = k.strip_prefix("f:") else {
                    continue;
                };
                let path = if prefix.is_empty() {
                    name.to_string()
                } else {
                    format!("{prefix}.{name}")
                };
                if v.as_object()
                    .is_some_and(|o| o.keys().any(|k| k.starts_with("f:")))
                {
                    leaves(&path, v, out);
                } else {
                    out.push(path);
                }
            }
        }
        let mut owners = BTreeMap::new();
        for entry in self.live().metadata.managed_fields.unwrap_or_default() {
            let fields = serde_json::to_value(entry.fields_v1.unwrap()).unwrap();
            let mut paths = Vec::new();
            leaves("", &fields["f:spec"], &mut paths);
            // A manager's Apply and Update entries together.
            let owned: &mut Vec<String> = owners.entry(entry.manager.unwrap()).or_default();
            owned.extend(paths);
            owned.sort();
            owned.dedup();
        }
        owners
    }
}

impl Drop for HelmClusterPolicy {
    fn drop(&mut self) {
        let name = self.0.clone();
        // Also dropped inside a test's runtime (on a failed assertion):
        // deleted from a thread of its own.
        let delete = move || {
            block_on(async {
                let _ = cluster_policies(&kube_client().await)
                    .delete(&name, &DeleteParams::default())
                    .await;
            })
        };
        let _ = std::thread::spawn(delete).join();
    }
}

/// A namespace of the test's own for the provider's `gpu_operator_namespace`,
/// with the provider's Role granted in it (so tests never share a
/// device-plugin ConfigMap), deleted when it ends.
pub struct OperatorNamespace(pub String);

impl OperatorNamespace {
    pub fn new(prefix: &str) -> Self {
        let name = unique_name(prefix);
        block_on(async {
            let ns: Namespace =
                serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
            Api::<Namespace>::all(kube_client().await)
                .create(&PostParams::default(), &ns)
                .await
                .unwrap();
            // The provider may run bound only to docs/rbac.yaml's roles.
            crate::bind_operator_role(&name).await;
        });
        Self(name)
    }

    /// The provider block's settings for this namespace.
    pub fn provider(&self) -> String {
        format!("  gpu_operator_namespace = \"{}\"\n", self.0)
    }
}

impl Drop for OperatorNamespace {
    fn drop(&mut self) {
        block_on(async {
            let _ = Api::<Namespace>::all(kube_client().await)
                .delete(&self.0, &DeleteParams::default())
                .await;
        });
    }
}

/// A pod requesting one `resource` on fleet `fleet`, tolerating its
/// `taint_key=fleet` taint, in a namespace named after the fleet (which the
/// caller removes): Karpenter launches a node for it and the scheduler binds
/// it once the node advertises the resource. The node and its allocatable
/// resources.
pub async fn one_pod_on_fleet(
    client: &kube::Client,
    fleet: &str,
    taint_key: &str,
    resource: &str,
) -> (String, BTreeMap<String, String>) {
    use k8s_openapi::api::core::v1::{Node, Pod};
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": fleet}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "one"}, "spec": {
        "nodeSelector": {"karpenter.sh/nodepool": fleet},
        "tolerations": [{"key": taint_key, "operator": "Equal", "value": fleet, "effect": "NoSchedule"}],
        "containers": [{"name": "c", "image": "registry.example/c:1",
            "resources": {"limits": {resource: "1"}}}],
    }}))
    .unwrap();
    let pods = Api::<Pod>::namespaced(client.clone(), fleet);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let what = format!("the node of a pod requesting {resource} on fleet {fleet}");
    let node = crate::scenario::lookups::wait_for(client, &what, 120, async || {
        pods.get("one").await.unwrap().spec?.node_name
    })
    .await;
    let allocatable = Api::<Node>::all(client.clone())
        .get(&node)
        .await
        .unwrap()
        .status
        .and_then(|s| s.allocatable)
        .unwrap_or_default()
        .into_iter()
        .map(|(r, q)| (r, q.0))
        .collect();
    (node, allocatable)
}

/// Waits until Karpenter has removed the nodes of fleet `fleet`.
pub async fn fleet_nodes_gone(client: &kube::Client, fleet: &str) {
    use k8s_openapi::api::core::v1::Node;
    let nodes = Api::<Node>::all(client.clone());
    let of_pool = ListParams::default().labels(&format!("karpenter.sh/nodepool={fleet}"));
    let what = format!("the nodes of fleet {fleet} to go");
    crate::scenario::lookups::wait_for(client, &what, 120, async || {
        nodes
            .list(&of_pool)
            .await
            .unwrap()
            .items
            .is_empty()
            .then_some(())
    })
    .await;
}

/// A kind of Kueue's (kueue.x-k8s.io/v1beta2, the version
/// `cluster.sh up --kueue` serves).
pub fn kueue(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind),
        plural,
    )
}

/// Whether Kueue runs on the test cluster (`cluster.sh up --kueue`); when
/// not, `test` is reported skipped.
pub fn kueue_running(test: &str) -> bool {
    let installed = block_on(async {
        let api: Api<DynamicObject> =
            Api::all_with(kube_client().await, &kueue("ClusterQueue", "clusterqueues"));
        api.list(&Default::default()).await.is_ok()
    });
    if !installed {
        crate::skipped(
            test,
            "Kueue is not running on the test cluster (cluster.sh up --kueue)",
        );
    }
    installed
}

/// A `gpufleet_queue` `resource` named `name` serving `namespace`, with
/// `quotas` (HCL objects, as [`quota`] writes them) and `extra` lines.
pub fn queue(
    resource: &str,
    name: &str,
    namespace: &str,
    quotas: &[String],
    extra: &str,
) -> String {
    format!(
        "resource \"gpufleet_queue\" \"{resource}\" {{\n  name       = \"{name}\"\n  namespaces = [\"{namespace}\"]\n  quotas     = [{}]\n{extra}}}\n",
        quotas.join(", ")
    )
}

/// A quota of `gpus` on `gpufleet_fleet.<fleet>`, naming the fleet and its
/// GPU resource by reference (so Terraform destroys the queue first), with
/// `extra` attributes (`lending_limit = 8`).
pub fn quota(fleet: &str, gpus: u32, extra: &str) -> String {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    format!(
        "{{ fleet = gpufleet_fleet.{fleet}.name, gpu_resource = gpufleet_fleet.{fleet}.gpu_resource, gpus = {gpus}{extra} }}"
    )
}

/// A namespace of the test's own (a queue serves it), deleted when dropped.
pub struct TestNamespace(pub String);

impl TestNamespace {
    pub fn new(prefix: &str) -> Self {
        let name = unique_name(prefix);
        block_on(async {
            let ns: Namespace =
                serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
            Api::<Namespace>::all(kube_client().await)
                .create(&PostParams::default(), &ns)
                .await
                .unwrap();
        });
        Self(name)
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        let name = self.0.clone();
        // Also dropped inside a test's runtime (on a failed assertion):
        // deleted from a thread of its own.
        let delete = move || {
            block_on(async {
                let _ = Api::<Namespace>::all(kube_client().await)
                    .delete(&name, &DeleteParams::default())
                    .await;
            })
        };
        let _ = std::thread::spawn(delete).join();
    }
}

/// The pod-template annotations that keep a Job's pod running for an hour
/// on kwok's nodes. kwok's pod-complete stage waits `delay` but never longer
/// than `jitter-delay`, whose default is 5 s (kwok, pkg/utils/lifecycle/
/// lifecycle.go, Stage.Delay), so both are set.
pub const RUNS_FOR_AN_HOUR: [(&str, &str); 2] = [
    ("pod-complete.stage.kwok.x-k8s.io/delay", "1h"),
    ("pod-complete.stage.kwok.x-k8s.io/jitter-delay", "1h"),
];

/// The live Job `namespace/name`.
pub fn live_job(namespace: &str, name: &str) -> k8s_openapi::api::batch::v1::Job {
    block_on(async {
        Api::<k8s_openapi::api::batch::v1::Job>::namespaced(kube_client().await, namespace)
            .get(name)
            .await
            .unwrap()
    })
}

/// Waits up to a minute (Kueue admits, suspends and evicts within seconds)
/// until `check` holds of the live Job, or panics saying it never `what`.
pub fn wait_for_job(
    namespace: &str,
    name: &str,
    what: &str,
    check: impl Fn(&k8s_openapi::api::batch::v1::Job) -> bool,
) -> k8s_openapi::api::batch::v1::Job {
    let start = std::time::Instant::now();
    loop {
        let job = live_job(namespace, name);
        if check(&job) {
            return job;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "job {namespace}/{name} never {what}: {job:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}
