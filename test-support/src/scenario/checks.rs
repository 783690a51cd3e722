//! What the scenario asserts of the cluster beyond a single step: where
//! pods may run, what a fleet node is, what Karpenter planned, what the
//! scheduler ruled out, and that destroy left nothing.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Secret};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};

use super::fleets::Fleet;
use super::lookups::{
    POOL, all_pods, events, fleet_node_claims, gpus, label, live_node_pool, node_claims, node_map,
    node_of, nodes_of_pool, pod, unschedulable,
};
use super::{NAMESPACES, SERVER, Scenario, TRAINING_GPU_LIMIT};

/// Where Karpenter records a node's capacity type (`on-demand` or `spot`).
const CAPACITY_TYPE: &str = "karpenter.sh/capacity-type";

/// How Karpenter's Nominated events name the NodeClaim it planned a pod on:
/// "Pod should schedule on: nodeclaim/NAME" (", node/NAME" once it has one;
/// karpenter, pkg/controllers/provisioning/scheduling/events.go,
/// NominatePodEvent, published as it creates the NodeClaim for pending pods
/// and for pods it places on one in flight).
const NOMINATED_ON_CLAIM: &str = "Pod should schedule on: nodeclaim/";

/// What kube-scheduler's DefaultPreemption plugin says of a pod whose
/// preemptionPolicy is Never, whatever the cluster looks like (kubernetes,
/// pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go:
/// PodEligibleToPreemptOthers, prefixed "preemption: " by PostFilter).
pub(crate) const NEVER_PREEMPTS: &str = "preemption: not eligible due to preemptionPolicy=Never.";

/// The scheduler nominates a node only for a pod that preempts.
pub(crate) fn assert_no_nomination(pod: &Pod) {
    let nominated = pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref());
    assert!(
        nominated.is_none(),
        "{} was nominated to {nominated:?}: it would preempt",
        pod.metadata.name.as_deref().unwrap()
    );
}

impl Scenario {
    /// A node Karpenter created for `fleet`, of an instance type and
    /// capacity type the fleet allows.
    pub(crate) fn assert_fleet_node(&self, node: &Node, fleet: &str) {
        let name = node.metadata.name.as_deref().unwrap();
        assert_eq!(
            label(node, POOL),
            Some(fleet),
            "{name} is not a {fleet} node"
        );
        let fleet = self.fleets().into_iter().find(|f| f.name == fleet).unwrap();
        let instance_type = label(node, super::lookups::INSTANCE_TYPE).unwrap_or_default();
        assert!(
            fleet.allows(instance_type),
            "{name} of fleet {} is a {instance_type}, not of {:?}",
            fleet.name,
            fleet.types
        );
        if let Some(capacity_type) = fleet.capacity_type {
            assert_eq!(
                label(node, CAPACITY_TYPE),
                Some(capacity_type),
                "{name} of fleet {}",
                fleet.name
            );
        }
    }

    /// hparam-search, a training Job that checkpoints, runs on a spot node
    /// of the spot training fleet: 8 A100s.
    pub(crate) async fn spot_training_placed(&self) {
        let search = self.wait_running("hparam-search").await;
        let node = &node_map(&self.client).await[node_of(&search).unwrap()];
        self.assert_fleet_node(node, "training-spot");
        assert_eq!(gpus(node), 8);
    }

    /// Where pods are allowed, by the taints they tolerate: training pods on
    /// training nodes (the fleets' or the tainted server), inference pods on
    /// inference nodes (overflow inference also on training nodes), pods
    /// tolerating neither on the general fleet, which has no GPU node; and
    /// every fleet node of the types its fleet allows.
    pub(crate) async fn assert_estates(&self) {
        let nodes = node_map(&self.client).await;
        let fleets: Vec<&str> = self.fleets().iter().map(|f| f.name).collect();
        for node in nodes.values() {
            if let Some(fleet) = label(node, POOL)
                && fleets.contains(&fleet)
            {
                self.assert_fleet_node(node, fleet);
            }
        }
        let training_gpus: i64 = nodes
            .values()
            .filter(|n| label(n, POOL) == Some("training"))
            .map(gpus)
            .sum();
        assert!(training_gpus <= TRAINING_GPU_LIMIT, "{training_gpus} GPUs");
        for pod in all_pods(&self.client).await {
            let Some(node_name) = node_of(&pod) else {
                continue;
            };
            // A pod still being deleted may outlive its node: Karpenter
            // removes an empty node without waiting for pods already
            // terminating, and such a pod runs nowhere.
            let Some(node) = nodes.get(node_name) else {
                assert!(
                    pod.metadata.deletion_timestamp.is_some(),
                    "{:?} runs on {node_name}, which is gone",
                    pod.metadata.name
                );
                continue;
            };
            let estate = workload_taint(node)
                .or_else(|| (label(node, POOL) == Some("general")).then_some("general"))
                .unwrap_or("none");
            let tolerated: BTreeSet<&str> = pod
                .spec
                .as_ref()
                .and_then(|s| s.tolerations.as_ref())
                .into_iter()
                .flatten()
                .filter(|t| t.key.as_deref() == Some("workload"))
                .filter_map(|t| t.value.as_deref())
                .collect();
            let allowed: &[&str] = match tolerated.iter().copied().collect::<Vec<_>>()[..] {
                [] => &["general"],
                ["training"] => &["training"],
                ["inference"] => &["inference"],
                _ => &["training", "inference"],
            };
            let name = pod.metadata.name.as_deref().unwrap();
            assert!(
                allowed.contains(&estate),
                "{name} (tolerates {tolerated:?}) is on {node_name} ({estate})"
            );
            if tolerated.is_empty() {
                assert_eq!(
                    gpus(node),
                    0,
                    "{name} tolerates no GPU taint, but {node_name} has GPUs"
                );
            }
        }
    }

    pub(crate) async fn assert_unplaced(&self, app: &str) {
        for pod in super::lookups::pods(&self.client, app).await {
            assert!(node_of(&pod).is_none(), "{app} must find no node");
        }
    }

    /// Karpenter's own record of what it planned for `pods`: every one was
    /// nominated, all to one NodeClaim, of `fleet`. Not a count of
    /// NodeClaims at some moment, which would also count any node launched
    /// while the simulated device plugin had not yet advertised the first
    /// one's shares.
    pub(crate) async fn assert_planned_on_one_claim(&self, pods: &[Pod], fleet: &str) {
        let uids: BTreeSet<&str> = pods
            .iter()
            .map(|p| p.metadata.uid.as_deref().unwrap())
            .collect();
        let nominated = self
            .wait("Karpenter's nominations", 60, async || {
                let mut claims: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                for event in events(&self.client).await {
                    let (Some(uid), Some(message)) = (
                        event.involved_object.uid.as_deref(),
                        event.message.as_deref(),
                    ) else {
                        continue;
                    };
                    if event.reason.as_deref() != Some("Nominated") || !uids.contains(uid) {
                        continue;
                    }
                    if let Some(rest) = message.strip_prefix(NOMINATED_ON_CLAIM) {
                        let claim = rest.split(',').next().unwrap().to_string();
                        claims.entry(uid.to_string()).or_default().insert(claim);
                    }
                }
                (claims.len() == uids.len()).then_some(claims)
            })
            .await;
        let claims: BTreeSet<&String> = nominated.values().flatten().collect();
        assert_eq!(
            claims.len(),
            1,
            "Karpenter planned the pods on several NodeClaims: {nominated:?}"
        );
        let claim = node_claims(&self.client)
            .get(claims.first().unwrap())
            .await
            .unwrap();
        assert_eq!(
            claim
                .metadata
                .labels
                .unwrap_or_default()
                .get(POOL)
                .map(String::as_str),
            Some(fleet),
            "the NodeClaim the pods were nominated to"
        );
    }

    /// The scheduler tried `name`, found no node, and ruled preemption out
    /// for the pod's own policy: not a moment that passed without a
    /// preemption but the scheduler's record that it will not preempt.
    pub(crate) async fn assert_never_preempts(&self, name: &str) {
        let verdict = self
            .wait(&format!("{name} unschedulable"), 60, async || {
                unschedulable(&pod(&self.client, name).await?)
            })
            .await;
        assert!(
            verdict.contains(NEVER_PREEMPTS),
            "{name}: the scheduler did not rule out preemption by policy: {verdict}"
        );
    }

    /// No node or NodeClaim of the fleets is left (Karpenter removes them
    /// once their NodePools go).
    pub(crate) async fn wait_fleets_gone(&self) {
        self.wait("the fleets' nodes and NodeClaims to go", 120, async || {
            let mut left = 0;
            for Fleet { name, .. } in self.fleets() {
                left += nodes_of_pool(&self.client, name).await.len()
                    + fleet_node_claims(&self.client, name).await;
            }
            (left == 0).then_some(())
        })
        .await;
    }

    /// Destroy left no NodePool, priority class, node, NodeClaim,
    /// device-plugin key or join token of the scenario's, and the joined
    /// server keeps the taints it registered with.
    pub(crate) async fn assert_destroyed(&self, token_id: &str) {
        let client = &self.client;
        let fleets = self.fleets();
        for Fleet { name, .. } in &fleets {
            assert!(
                live_node_pool(client, name).await.is_none(),
                "NodePool {name} left behind"
            );
        }
        for class in ["online-inference", "batch-training"] {
            let live = Api::<PriorityClass>::all(client.clone())
                .get_opt(class)
                .await
                .unwrap();
            assert!(live.is_none(), "PriorityClass {class} left behind");
        }
        // The fences of the fleets and classes: a policy and a binding each.
        let fences: Vec<String> = fleets
            .iter()
            .map(|f| format!("gpufleet-fleet-{}", f.name))
            .chain(["online-inference", "batch-training"].map(|c| format!("gpufleet-class-{c}")))
            .collect();
        for plural in [
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
        ] {
            let kind = if plural.ends_with("bindings") {
                "ValidatingAdmissionPolicyBinding"
            } else {
                "ValidatingAdmissionPolicy"
            };
            let resource = ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
                plural,
            );
            let left: Vec<String> = Api::<DynamicObject>::all_with(client.clone(), &resource)
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|o| o.metadata.name)
                .filter(|n| fences.contains(n))
                .collect();
            assert!(left.is_empty(), "{plural} left behind: {left:?}");
        }
        self.wait_fleets_gone().await;
        let device_plugin = Api::<ConfigMap>::namespaced(client.clone(), "gpu-operator")
            .get_opt("gpufleet-device-plugin")
            .await
            .unwrap();
        let keys: Vec<String> = device_plugin
            .and_then(|c| c.data)
            .into_iter()
            .flat_map(|d| d.into_keys())
            .collect();
        assert!(
            !keys.contains(&"fleet-inference".to_string()),
            "the inference fleet's device-plugin key left behind: {keys:?}"
        );
        // The NodeOverlays the inference fleet's sharing made (`<fleet>-<n>-gpus`).
        let overlays: Vec<String> = crate::fixtures::node_overlays(client)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .filter(|name| {
                fleets
                    .iter()
                    .any(|fleet| name.starts_with(&format!("{}-", fleet.name)))
            })
            .collect();
        assert!(
            overlays.is_empty(),
            "the fleets' NodeOverlays left behind: {overlays:?}"
        );
        let server = Api::<Node>::all(client.clone()).get(SERVER).await.unwrap();
        let taints: Vec<String> = server
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .map(|t| format!("{}={}:{}", t.key, t.value.unwrap_or_default(), t.effect))
            .collect();
        assert_eq!(
            taints,
            [
                "workload=training:NoSchedule",
                "example.com/maintenance-window=sunday:PreferNoSchedule"
            ],
            "the joined server keeps the taints it registered with"
        );
        // Destroy revokes the join token.
        let secret = Api::<Secret>::namespaced(client.clone(), "kube-system")
            .get_opt(&format!("bootstrap-token-{token_id}"))
            .await
            .unwrap();
        assert!(secret.is_none(), "the join token outlives destroy");
        for namespace in NAMESPACES {
            assert!(
                Api::<Namespace>::all(client.clone())
                    .get_opt(namespace)
                    .await
                    .unwrap()
                    .is_none(),
                "namespace {namespace} outlives destroy"
            );
        }
    }
}

/// The value of the node's `workload` taint, the one the example's fleets
/// and the joined server carry: which kind of work the node is for.
fn workload_taint(node: &Node) -> Option<&str> {
    node.spec
        .as_ref()?
        .taints
        .as_ref()?
        .iter()
        .find(|t| t.key == "workload" && t.effect == "NoSchedule")?
        .value
        .as_deref()
}
