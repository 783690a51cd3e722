//! The queue's LocalQueues: one named as the queue in each namespace it
//! serves, pointing at its ClusterQueue, so that a job there names only the
//! queue (`kueue.x-k8s.io/queue-name`). A LocalQueue has no finalizer.

use kube::api::DynamicObject;
use serde_json::json;

use super::kueue::LOCAL_QUEUE;
use super::model::Model;
use crate::cluster::FIELD_MANAGER;
use crate::cluster::retry::Deadline;
use crate::kit::Cluster;
use crate::protocol::Diagnostics;

fn local_queue(name: &str, namespace: &str) -> DynamicObject {
    let mut object = DynamicObject::new(name, &LOCAL_QUEUE.api_resource()).within(namespace);
    object.data = json!({"spec": {"clusterQueue": name}});
    object
}

/// Writes a LocalQueue in each namespace `state` serves, and removes those
/// of the namespaces `prior` served and `state` does not.
pub(super) async fn write(
    cluster: &Cluster,
    prior: Option<&Model>,
    state: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    for namespace in &state.namespaces {
        let queues = cluster
            .kubernetes
            .custom_namespaced(LOCAL_QUEUE, namespace)
            .await?;
        queues
            .named(&state.name)
            .apply(
                &local_queue(&state.name, namespace),
                FIELD_MANAGER,
                deadline,
            )
            .await?;
    }
    let dropped: Vec<String> = prior
        .iter()
        .flat_map(|p| &p.namespaces)
        .filter(|n| !state.namespaces.contains(n))
        .cloned()
        .collect();
    delete(cluster, &state.name, &dropped, deadline).await
}

/// Leaves out of `state.namespaces` (as the ClusterQueue's selector gave
/// them) those without the queue's LocalQueue, so that a LocalQueue removed
/// by hand shows as drift.
pub(super) async fn read(
    cluster: &Cluster,
    state: &mut Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let mut served = Vec::new();
    for namespace in &state.namespaces {
        let queues = cluster
            .kubernetes
            .custom_namespaced(LOCAL_QUEUE, namespace)
            .await?;
        let live = queues.named(&state.name).get(deadline).await?;
        if live.is_some_and(|q| q.data["spec"]["clusterQueue"] == state.name.as_str()) {
            served.push(namespace.clone());
        }
    }
    state.namespaces = served;
    Ok(())
}

/// Removes the LocalQueues `name` in `namespaces`.
pub(super) async fn delete(
    cluster: &Cluster,
    name: &str,
    namespaces: &[String],
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    for namespace in namespaces {
        let queues = cluster
            .kubernetes
            .custom_namespaced(LOCAL_QUEUE, namespace)
            .await?;
        queues.named(name).delete(deadline).await?;
    }
    Ok(())
}
