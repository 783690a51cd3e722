//! What the scenario reads of the cluster: nodes, pods, events and
//! NodeClaims, and the waits for them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};

use super::NAMESPACES;
use super::narrator::{Narrator, report};

pub const POOL: &str = "karpenter.sh/nodepool";
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
pub const GPU: &str = "nvidia.com/gpu";

pub fn label<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The node's `nvidia.com/gpu` capacity: GPUs, or their shares under sharing.
pub fn gpus(node: &Node) -> i64 {
    advertised(node).0
}

/// The node's `nvidia.com/gpu` (capacity, allocatable).
pub fn advertised(node: &Node) -> (i64, i64) {
    advertised_as(node, GPU)
}

/// The node's `resource` (capacity, allocatable).
pub fn advertised_as(node: &Node, resource: &str) -> (i64, i64) {
    let status = node.status.as_ref();
    let of = |list: Option<&BTreeMap<String, Quantity>>| {
        list.and_then(|l| l.get(resource))
            .map_or(0, |q| q.0.parse().unwrap())
    };
    (
        of(status.and_then(|s| s.capacity.as_ref())),
        of(status.and_then(|s| s.allocatable.as_ref())),
    )
}

/// What the first container of `pod` limits `resource` to.
pub(crate) fn limit(pod: &Pod, resource: &str) -> Option<String> {
    let container = pod.spec.as_ref()?.containers.first()?;
    let limits = container.resources.as_ref()?.limits.as_ref()?;
    limits.get(resource).map(|q| q.0.clone())
}

pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

pub fn is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

pub async fn node_map(client: &Client) -> BTreeMap<String, Node> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| (n.metadata.name.clone().unwrap(), n))
        .collect()
}

/// The nodes Karpenter made for the NodePool `pool`.
pub async fn nodes_of_pool(client: &Client, pool: &str) -> Vec<Node> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default().labels(&format!("{POOL}={pool}")))
        .await
        .unwrap()
        .items
}

pub(crate) fn node_claims(client: &Client) -> Api<DynamicObject> {
    let claims = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("karpenter.sh", "v1", "NodeClaim"),
        "nodeclaims",
    );
    Api::<DynamicObject>::all_with(client.clone(), &claims)
}

pub(crate) async fn fleet_node_claims(client: &Client, fleet: &str) -> usize {
    node_claims(client)
        .list(&ListParams::default().labels(&format!("{POOL}={fleet}")))
        .await
        .unwrap()
        .items
        .len()
}

pub(crate) async fn live_node_pool(client: &Client, name: &str) -> Option<DynamicObject> {
    Api::<DynamicObject>::all_with(client.clone(), &crate::fixtures::node_pools("karpenter.sh"))
        .get_opt(name)
        .await
        .unwrap()
}

/// The pods of one workload (label `app`), in the scenario's namespaces.
pub(crate) async fn pods(client: &Client, app: &str) -> Vec<Pod> {
    pods_matching(client, &ListParams::default().labels(&format!("app={app}"))).await
}

pub(crate) async fn all_pods(client: &Client) -> Vec<Pod> {
    pods_matching(client, &ListParams::default()).await
}

async fn pods_matching(client: &Client, params: &ListParams) -> Vec<Pod> {
    let mut pods = Vec::new();
    for namespace in NAMESPACES {
        let list = Api::<Pod>::namespaced(client.clone(), namespace)
            .list(params)
            .await
            .unwrap();
        pods.extend(list.items);
    }
    pods
}

/// The pod `name` of whichever of the scenario's namespaces has it.
pub(crate) async fn pod(client: &Client, name: &str) -> Option<Pod> {
    for namespace in NAMESPACES {
        let pod = Api::<Pod>::namespaced(client.clone(), namespace)
            .get_opt(name)
            .await
            .unwrap();
        if pod.is_some() {
            return pod;
        }
    }
    None
}

/// The events of the scenario's namespaces.
pub(crate) async fn events(client: &Client) -> Vec<Event> {
    let mut events = Vec::new();
    for namespace in NAMESPACES {
        events.extend(events_in(client, namespace).await);
    }
    events
}

pub(crate) async fn events_in(client: &Client, namespace: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

/// Whether Karpenter wrote `event`: its FailedScheduling events say why it
/// found no node for a pod.
pub(crate) fn by_karpenter(event: &Event) -> bool {
    event.source.as_ref().and_then(|s| s.component.as_deref()) == Some("karpenter")
}

/// Karpenter's FailedScheduling message for a pod of `namespace`, if any.
pub async fn karpenter_failure(client: &Client, namespace: &str, pod: &str) -> Option<String> {
    events_in(client, namespace)
        .await
        .into_iter()
        .find(|e| {
            e.involved_object.name.as_deref() == Some(pod)
                && e.reason.as_deref() == Some("FailedScheduling")
                && by_karpenter(e)
                && e.message.is_some()
        })
        .and_then(|e| e.message)
}

/// The scheduler's verdict on a pod it tried and found no node for, which
/// is also when it decides about preemption: the Unschedulable PodScheduled
/// condition's message, which ends with the preemption plugin's verdict.
pub(crate) fn unschedulable(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable"))?
        .message
        .clone()
}

/// Polls `probe` until it yields a value; on timeout fails with what the
/// cluster looks like.
pub async fn wait_for<T>(
    client: &Client,
    what: &str,
    seconds: u64,
    probe: impl AsyncFnMut() -> Option<T>,
) -> T {
    wait_showing(client, None, what, seconds, probe).await
}

/// [`wait_for`], showing the cluster's progress meanwhile when `story`
/// tells it live.
pub(crate) async fn wait_showing<T>(
    client: &Client,
    story: Option<&Narrator>,
    what: &str,
    seconds: u64,
    mut probe: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(value) = probe().await {
            if let Some(story) = story {
                story.progress(client).await;
            }
            return value;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {seconds}s waiting for {what}\n{}",
                report(client).await
            );
        }
        if let Some(story) = story {
            story.progress(client).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
