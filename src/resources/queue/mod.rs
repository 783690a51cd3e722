//! `gpufleet_queue`: a Kueue ClusterQueue (kueue.x-k8s.io/v1beta2) whose
//! quotas are fleets, and a LocalQueue of the same name in each namespace it
//! serves, so a job carries only the label `kueue.x-k8s.io/queue-name`.
//!
//! - `model`: the state, and the ClusterQueue built from it and read back.
//! - `checks`: what Kueue refuses (refused here too, naming its rule), and
//!   the plan-time warnings against the fleets as the cluster has them.
//! - `local_queues`: the LocalQueues, written beside the ClusterQueue.
//! - `kueue`: Kueue's kinds, label and finalizer, shared with the fleet's
//!   flavor.
//!
//! Each quota is one flavor of one resource group: a fleet offered to Kueue
//! (`kueue_flavor = true` on the fleet). The group covers every quota's GPU
//! resource, `cpu`, `memory` and the other resources any quota names, in one
//! order, as Kueue requires of each flavor; a quota gives 0 of what it does
//! not name, except `cpu` and `memory`, which it leaves uncapped unless set,
//! so that a pod's ordinary requests never make a job inadmissible.

mod checks;
pub mod kueue;
mod local_queues;
mod model;

use async_trait::async_trait;
use kube::api::DynamicObject;

pub use model::Model;

use crate::cluster::api::{Kind, Objects};
use crate::cluster::names::{
    dns1123_label, non_negative_quantity, qualified_name, resource_quantities,
};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::timeouts::Timeouts;
use crate::framework::validators::{Validator, each, integer_between, not_empty, one_of};
use crate::framework::{PlanChange, Warnings};
use crate::kit::Cluster;
use crate::kit::object::AppliedObject;
use crate::kit::permissions::{LISTED_OBJECT_VERBS, Permission};
use crate::protocol::schema::Nesting;
use crate::protocol::{Diagnostic, Diagnostics, Value};
use kueue::{CLUSTER_QUEUE, Held};

/// The `gpufleet_queue` resource.
pub struct Queue;

/// What it needs of the API: its ClusterQueues (as any applied object, and
/// `list` for `terraform query` and for the plan's sum of quotas per fleet),
/// its LocalQueues in the namespaces it serves, the fleets' flavors and
/// NodePools to check quotas against, and the Workloads admitted to a queue
/// it deletes, to name them while Kueue keeps it.
pub const PERMISSIONS: &[Permission] = &[
    Permission::cluster("kueue.x-k8s.io", "clusterqueues", LISTED_OBJECT_VERBS),
    Permission::cluster(
        "kueue.x-k8s.io",
        "localqueues",
        crate::kit::permissions::APPLIED_OBJECT_VERBS,
    ),
    Permission::cluster("kueue.x-k8s.io", "resourceflavors", &["get"]),
    Permission::cluster("karpenter.sh", "nodepools", &["get"]),
    Permission::cluster("kueue.x-k8s.io", "workloads", &["list"]),
];

/// Kueue's defaults (`clusterqueue_types.go`), planned so they never show
/// as diffs.
const QUEUEING_STRATEGIES: &[&str] = &["BestEffortFIFO", "StrictFIFO"];
const WITHIN_QUEUE: &[&str] = &["Never", "LowerPriority", "LowerOrNewerEqualPriority"];
const RECLAIM_WITHIN_COHORT: &[&str] = &["Never", "LowerPriority", "Any"];
const BORROW_WITHIN_COHORT: &[&str] = &["Never", "LowerPriority"];
/// Kueue's limit on flavors in a resource group (`clusterqueue_types.go`,
/// `flavors` MaxItems=64).
const MAX_QUOTAS: usize = 64;

fn at_most_quotas() -> Validator {
    Validator::new(format!("At most {MAX_QUOTAS} quotas."), |v| {
        match v.elements() {
            Some(quotas) if quotas.len() > MAX_QUOTAS => Err(format!(
                "{} quotas: Kueue takes at most {MAX_QUOTAS} flavors in a resource group (kubernetes-sigs/kueue, apis/kueue/v1beta2/clusterqueue_types.go)",
                quotas.len()
            )),
            _ => Ok(()),
        }
    })
}

#[async_trait]
impl AppliedObject for Queue {
    type Model = Model;
    type Object = DynamicObject;
    type Resolved = ();
    const NAME: &'static str = "queue";
    const KIND: Kind = CLUSTER_QUEUE;
    const IMPORT_ID: &'static str = "ClusterQueue name";
    const LISTABLE: bool = true;

    fn schema(&self) -> ObjectSchema {
        let gpus = || integer_between(0, i64::from(i32::MAX), "");
        ObjectSchema::new(
            "A Kueue ClusterQueue with GPU quotas on fleets (each offered to Kueue with `kueue_flavor = true`), and a LocalQueue of the same name in each namespace it serves: a job carries only the label in `queue_label`, and Kueue holds it (suspended: no pod, no node) until the queue's quota, or what its cohort lends, admits it onto a fleet.",
            vec![
                Attr::string("id").derived_from(&["name"]).describe("The ClusterQueue name."),
                Attr::string("name")
                    .required()
                    .requires_replace()
                    .validate(dns1123_label())
                    .describe("Name of the ClusterQueue and of its LocalQueues (a label value: jobs name it in `kueue.x-k8s.io/queue-name`)."),
                Attr::string_set("namespaces")
                    .required()
                    .validate(not_empty())
                    .validate(each(dns1123_label()))
                    .describe("Namespaces whose jobs the queue takes: its `namespaceSelector` names them, and each gets a LocalQueue `name`. The namespaces must exist."),
                Attr::nested(
                    "quotas",
                    Nesting::List,
                    vec![
                        Attr::string("fleet")
                            .required()
                            .validate(dns1123_label())
                            .describe("The fleet (its flavor), e.g. `gpufleet_fleet.training.name`; the fleet needs `kueue_flavor = true`."),
                        Attr::string("gpu_resource")
                            .required()
                            .validate(qualified_name())
                            .describe("The resource the fleet's GPUs are advertised as: `gpufleet_fleet.training.gpu_resource` (`nvidia.com/gpu`, or a MIG or shared resource)."),
                        Attr::number("gpus")
                            .required()
                            .validate(gpus())
                            .describe("Nominal quota of `gpu_resource` on the fleet: what the queue's jobs may use without borrowing, and what it lends to its cohort while idle."),
                        Attr::number("borrowing_limit")
                            .optional()
                            .validate(gpus())
                            .describe("Most `gpu_resource` the queue borrows from its cohort beyond `gpus` on this fleet; unset, no limit. Needs `cohort`."),
                        Attr::number("lending_limit")
                            .optional()
                            .validate(gpus())
                            .describe("Most of its `gpus` the queue lends to its cohort; unset, all it does not use. At most `gpus`; needs `cohort`."),
                        Attr::string("cpu")
                            .optional()
                            .validate(non_negative_quantity())
                            .describe("Nominal quota of `cpu` on the fleet. Unset, the queue does not cap it (it covers `cpu` with more than any fleet launches), since Kueue admits no job requesting a resource its queue does not cover."),
                        Attr::string("memory")
                            .optional()
                            .validate(non_negative_quantity())
                            .describe("Nominal quota of `memory` on the fleet; unset, not capped (as `cpu`)."),
                        Attr::string_map("resources")
                            .optional()
                            .validate(resource_quantities())
                            .describe("Nominal quotas of other resources the fleet's pods request, such as its `interconnect_resources` (`vpc.amazonaws.com/efa`). A resource one quota names is covered on every fleet of the queue, with 0 where not named."),
                    ],
                )
                .required()
                .validate(not_empty())
                .validate(at_most_quotas())
                .describe("GPU quotas, one per fleet; Kueue tries the fleets in this order."),
                Attr::string("cohort")
                    .optional()
                    .validate(dns1123_label())
                    .describe("The cohort: queues in one cohort lend each other their unused quota (`lending_limit`, `borrowing_limit`) and reclaim it (`preemption.reclaim_within_cohort`)."),
                Attr::string("queueing_strategy")
                    .default(Value::string(QUEUEING_STRATEGIES[0]))
                    .validate(one_of(QUEUEING_STRATEGIES))
                    .describe("`BestEffortFIFO` (a job that does not fit lets later, smaller ones pass) or `StrictFIFO` (it blocks them)."),
                Attr::string("fair_sharing_weight")
                    .optional()
                    .validate(non_negative_quantity())
                    .describe("The queue's share under Kueue's fair sharing (`fairSharing.weight`, Kueue's default 1); matters only when Kueue's configuration enables fair sharing."),
                Attr::nested(
                    "preemption",
                    Nesting::Single,
                    vec![
                        Attr::string("within_queue")
                            .default(Value::string(WITHIN_QUEUE[0]))
                            .validate(one_of(WITHIN_QUEUE))
                            .describe("Whether a pending job may evict the queue's own jobs of lower priority (`withinClusterQueue`)."),
                        Attr::string("reclaim_within_cohort")
                            .default(Value::string(RECLAIM_WITHIN_COHORT[0]))
                            .validate(one_of(RECLAIM_WITHIN_COHORT))
                            .describe("Whether a job within the queue's own quota may evict jobs of other queues of the cohort that borrowed it (`Any`: whatever their priority)."),
                        Attr::string("borrow_within_cohort")
                            .default(Value::string(BORROW_WITHIN_COHORT[0]))
                            .validate(one_of(BORROW_WITHIN_COHORT))
                            .describe("Whether a job that must borrow may evict lower-priority jobs of other queues of the cohort (`borrowWithinCohort.policy`); not with `reclaim_within_cohort = \"Never\"`."),
                        Attr::number("borrow_max_priority_threshold")
                            .optional()
                            .validate(integer_between(i64::from(i32::MIN), i64::from(i32::MAX), ""))
                            .describe("Only jobs at or below this priority may be evicted by a borrowing job (`borrowWithinCohort.maxPriorityThreshold`)."),
                    ],
                )
                .optional()
                .describe("Kueue's preemption policies; unset, Kueue's default: `Never` for all three."),
                Attr::string_map("queue_label")
                    .derived_from(&["name"])
                    .describe("What a job writes to use the queue: `{ \"kueue.x-k8s.io/queue-name\" = name }`, as a label of the Job."),
            ],
        )
    }

    fn timeouts(model: &Model) -> Option<&Timeouts> {
        model.timeouts.as_ref()
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        checks::validate(config, diagnostics);
    }

    fn derive(&self, model: &mut Model) {
        model.derive();
    }

    async fn modify_plan(
        &self,
        cluster: &Cluster,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        checks::against_fleets(cluster, change.config, diagnostics).await;
    }

    async fn objects<'c>(
        &self,
        cluster: &'c Cluster,
    ) -> Result<Objects<'c, DynamicObject>, GaveUp> {
        cluster.kubernetes.custom(CLUSTER_QUEUE).await
    }

    fn object_name(model: &Model) -> &str {
        &model.name
    }

    fn resolve(&self, _: &Cluster, _: &Model) {}

    fn to_object(&self, _: &(), model: &Model) -> Result<DynamicObject, Diagnostics> {
        Ok(model.cluster_queue())
    }

    fn state_from(
        &self,
        _: &Cluster,
        live: DynamicObject,
        prior: &Model,
        importing: bool,
    ) -> Result<Model, Diagnostics> {
        Model::from_live(&live, prior, importing)
    }

    fn imported(&self, name: &str) -> Model {
        Model {
            name: name.to_string(),
            ..Default::default()
        }
    }

    async fn write_companions(
        &self,
        cluster: &Cluster,
        _: &(),
        prior: Option<&Model>,
        state: &mut Model,
        deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        local_queues::write(cluster, prior, state, deadline).await?;
        Ok(Warnings::default())
    }

    async fn read_companions(
        &self,
        cluster: &Cluster,
        state: &mut Model,
        _prior: &Model,
        _importing: bool,
        deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        local_queues::read(cluster, state, deadline).await
    }

    async fn delete_companions(
        &self,
        cluster: &Cluster,
        prior: &Model,
        deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        // Kueue keeps the ClusterQueue while workloads hold its quota: say
        // which, then wait for them.
        let held = Held::Queue(&prior.name);
        let holders = held.holders(cluster, deadline).await?;
        // The LocalQueues first (no job enters any more): once the workloads
        // let go, the ClusterQueue may vanish between two runs, leaving
        // nothing in state to remove them by.
        local_queues::delete(cluster, &prior.name, &prior.namespaces, deadline).await?;
        let queues = self.objects(cluster).await?;
        kueue::wait_gone(cluster, &queues, held, &prior.name, deadline).await?;
        let mut warnings = Warnings::default();
        if !holders.is_empty() {
            warnings.push(Diagnostic::warning(
                "Waited for admitted workloads",
                format!(
                    "Kueue kept ClusterQueue {:?} until the workloads admitted to it let go of its quota: {}.",
                    prior.name,
                    holders.join(", ")
                ),
            ));
        }
        Ok(warnings)
    }
}

#[cfg(test)]
mod tests;
