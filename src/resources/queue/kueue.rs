//! What gpufleet needs to know of Kueue (kubernetes-sigs/kueue v0.17.0,
//! `apis/kueue/v1beta2`): its kinds, the label a workload names its queue
//! with, and how its objects go away (its finalizer).

use std::time::Duration;

use kube::api::DynamicObject;

use crate::cluster::api::{Kind, Objects, describe};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::timeouts::Operation;
use crate::kit::Cluster;
use crate::protocol::{Diagnostic, Diagnostics};

/// A kind of node, as Kueue assigns quota to it.
pub const RESOURCE_FLAVOR: Kind = Kind::new(
    "kueue.x-k8s.io/v1beta2",
    "ResourceFlavor",
    "resourceflavors",
);
/// Quotas per flavor, shared in a cohort.
pub const CLUSTER_QUEUE: Kind =
    Kind::new("kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues");
/// A namespace's door to a ClusterQueue.
pub const LOCAL_QUEUE: Kind = Kind::new("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues");
/// One job as Kueue queues and admits it.
pub const WORKLOAD: Kind = Kind::new("kueue.x-k8s.io/v1beta2", "Workload", "workloads");

/// The label a Job names its LocalQueue with (`pkg/controller/constants`).
pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// The finalizer Kueue's webhooks put on ResourceFlavors and ClusterQueues.
pub const RESOURCE_IN_USE: &str = "kueue.x-k8s.io/resource-in-use";
/// At most this many `nodeLabels` and `tolerations` on a ResourceFlavor
/// (`resourceflavor_types.go`, `+kubebuilder:validation:MaxItems=8`).
pub const MAX_FLAVOR_ITEMS: usize = 8;

/// The flavor annotation that says which resource the fleet's nodes
/// advertise their GPUs as, for the queues' plan-time checks.
pub const GPU_RESOURCE_ANNOTATION: &str = "gpufleet/gpu-resource";
/// The flavor annotation that lists (comma-separated) what the fleet's pods
/// request for the interconnect, for the queues' plan-time checks.
pub const INTERCONNECT_ANNOTATION: &str = "gpufleet/interconnect-resources";

/// How often a wait for finalizers looks again.
const POLL: Duration = Duration::from_millis(500);

/// The names of the ClusterQueues in `queues` that list flavor `flavor`
/// in their resource groups.
pub fn queues_listing(queues: &[DynamicObject], flavor: &str) -> Vec<String> {
    queues
        .iter()
        .filter(|queue| {
            queue.data["spec"]["resourceGroups"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|group| group["flavors"].as_array().into_iter().flatten())
                .any(|f| f["name"] == flavor)
        })
        .filter_map(|queue| queue.metadata.name.clone())
        .collect()
}

/// The Workloads in `workloads` (`namespace/name`) holding quota of
/// ClusterQueue `queue`: those with an admission to it, which is what keeps
/// Kueue from releasing the queue's finalizer
/// (`pkg/controller/core/clusterqueue_controller.go`).
pub fn workloads_admitted_to(workloads: &[DynamicObject], queue: &str) -> Vec<String> {
    workloads
        .iter()
        .filter(|w| w.data["status"]["admission"]["clusterQueue"] == queue)
        .map(|w| {
            format!(
                "{}/{}",
                w.metadata.namespace.as_deref().unwrap_or_default(),
                w.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

/// An object of Kueue's that something may hold.
#[derive(Clone, Copy)]
pub enum Held<'a> {
    /// A ResourceFlavor, held by the ClusterQueues that list it.
    Flavor(&'a str),
    /// A ClusterQueue, held by the Workloads admitted to it.
    Queue(&'a str),
}

impl Held<'_> {
    /// What holds it, and what to do about them.
    fn holders_and_remedy(self) -> (&'static str, &'static str) {
        match self {
            Held::Flavor(_) => (
                "ClusterQueues listing it",
                "Remove the fleet from those queues' quotas, or delete the queues, first.",
            ),
            Held::Queue(_) => (
                "workloads admitted to it",
                "Let their jobs finish, or delete the jobs (Kueue then releases their quota).",
            ),
        }
    }

    /// The object, as messages name it.
    fn describe(self) -> String {
        match self {
            Held::Flavor(name) => describe(RESOURCE_FLAVOR, None, name),
            Held::Queue(name) => describe(CLUSTER_QUEUE, None, name),
        }
    }

    /// The names of what holds it now.
    pub async fn holders(
        self,
        cluster: &Cluster,
        deadline: Deadline,
    ) -> Result<Vec<String>, GaveUp> {
        match self {
            Held::Flavor(flavor) => {
                let queues = cluster.kubernetes.custom(CLUSTER_QUEUE).await?;
                Ok(queues_listing(&queues.list(None, deadline).await?, flavor))
            }
            Held::Queue(queue) => {
                let workloads = cluster.kubernetes.custom(WORKLOAD).await?;
                Ok(workloads_admitted_to(
                    &workloads.list(None, deadline).await?,
                    queue,
                ))
            }
        }
    }
}

/// Deletes `name` and waits, within `deadline`, until it is gone: Kueue
/// keeps it (finalizer [`RESOURCE_IN_USE`]) while something uses it. When
/// the deadline passes first, the error names what holds it; the object
/// stays marked for deletion, and Kueue removes it once released. An API
/// that is not installed has nothing to delete.
pub async fn delete_and_wait(
    cluster: &Cluster,
    objects: &Objects<'_, DynamicObject>,
    held: Held<'_>,
    name: &str,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    match objects.named(name).delete(deadline).await {
        Ok(true) => wait_gone(cluster, objects, held, name, deadline).await,
        // Gone already, or Kueue is not installed (nothing of its is left).
        Ok(false) => Ok(()),
        Err(gave_up) if gave_up.not_installed => Ok(()),
        Err(gave_up) => Err(gave_up.into()),
    }
}

/// Waits, within `deadline`, until `name`, marked for deletion, is gone
/// (see [`delete_and_wait`]).
pub async fn wait_gone(
    cluster: &Cluster,
    objects: &Objects<'_, DynamicObject>,
    held: Held<'_>,
    name: &str,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let named = objects.named(name);
    loop {
        if !deadline.passed() {
            match named.get(deadline).await {
                Ok(None) => return Ok(()),
                Ok(Some(_)) => {}
                // The look itself ran into the deadline: report the holders.
                Err(_) if deadline.passed() => continue,
                Err(gave_up) => return Err(gave_up.into()),
            }
        }
        if deadline.passed() {
            let names = held_by_now(cluster, held).await;
            let (held_by, remedy) = held.holders_and_remedy();
            return Err(Diagnostic::error(
                "Kueue still holds the object",
                format!(
                    "{} is marked for deletion but still there at {}: Kueue keeps it (finalizer `{RESOURCE_IN_USE}`) while there are {held_by}: {names}. {remedy} It goes by itself once released.",
                    named.describe(),
                    deadline.describe(),
                ),
            )
            .into());
        }
        pause(&format!("{} to go", named.describe())).await?;
    }
}

/// Waits, within `deadline`, until nothing holds `held`, before it is
/// deleted: Kueue would keep the object while it is held, so a delete
/// started now could not finish. When the deadline passes first, the error
/// names the holders, then says what was `left` alone (a sentence).
pub async fn wait_released(
    cluster: &Cluster,
    held: Held<'_>,
    left: &str,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    loop {
        if !deadline.passed() {
            match held.holders(cluster, deadline).await {
                Ok(names) if names.is_empty() => return Ok(()),
                Ok(_) => {}
                // Kueue is not installed: nothing of its holds anything.
                Err(gave_up) if gave_up.not_installed => return Ok(()),
                Err(_) if deadline.passed() => continue,
                Err(gave_up) => return Err(gave_up.into()),
            }
        }
        if deadline.passed() {
            let names = held_by_now(cluster, held).await;
            let (held_by, remedy) = held.holders_and_remedy();
            return Err(Diagnostic::error(
                "Kueue would keep the object",
                format!(
                    "{} is still in use at {}: Kueue keeps it (finalizer `{RESOURCE_IN_USE}`) while there are {held_by}: {names}. {left} {remedy}",
                    held.describe(),
                    deadline.describe(),
                ),
            )
            .into());
        }
        pause(&format!("what holds {} to let go", held.describe())).await?;
    }
}

/// What holds `held` now, for an error: their names, quoted.
async fn held_by_now(cluster: &Cluster, held: Held<'_>) -> String {
    match held
        .holders(cluster, Deadline::of(None, Operation::Read))
        .await
    {
        Ok(names) if names.is_empty() => {
            "none found now (Kueue may be stopped or behind)".to_string()
        }
        Ok(names) => names
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        Err(gave_up) => {
            let why = Diagnostics::from(gave_up);
            let why = why.0.first().map(|d| d.summary.clone()).unwrap_or_default();
            format!("they could not be listed ({why})")
        }
    }
}

/// One pause between two looks, unless the CLI asks to stop while
/// `waiting_for` (what the wait is for).
async fn pause(waiting_for: &str) -> Result<(), Diagnostics> {
    tokio::select! {
        biased;
        () = crate::protocol::stop::requested() => Err(Diagnostic::error(
            "Stopped",
            format!("Stopped while waiting for {waiting_for}."),
        )
        .into()),
        () = tokio::time::sleep(POLL) => Ok(()),
    }
}
