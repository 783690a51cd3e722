//! The queue's checks. What Kueue's webhook refuses is refused when the
//! configuration is validated, naming Kueue's rule (kubernetes-sigs/kueue
//! v0.17.0, `pkg/webhooks/clusterqueue_webhook.go`). At plan time, each
//! quota is held against its fleet as the cluster has it (its NodePool's
//! `limits`, its flavor's GPU resource and interconnect) and against the
//! other ClusterQueues on the fleet: warnings with the numbers, except for a
//! resource the fleet's pods request that the queue does not cover, which
//! Kueue would never admit (an error, naming it). A cluster that cannot be
//! read, or a fleet not created yet, is not judged.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;

use super::kueue::{
    CLUSTER_QUEUE, GPU_RESOURCE_ANNOTATION, INTERCONNECT_ANNOTATION, RESOURCE_FLAVOR,
};
use crate::catalog::GPU_RESOURCE;
use crate::cluster::retry::Deadline;
use crate::kit::Cluster;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
use crate::resources::fleet::NODE_POOL;

/// Where Kueue states the rules refused here.
const WEBHOOK: &str = "kubernetes-sigs/kueue v0.17.0, pkg/webhooks/clusterqueue_webhook.go";

fn quota_path(index: usize, attribute: &str) -> AttributePath {
    AttributePath::attr("quotas")
        .join_index(index)
        .join_attr(attribute)
}

/// Kueue's own refusals, before anything is written.
pub(super) fn validate(config: &Value, diagnostics: &mut Diagnostics) {
    let cohort = config.attr("cohort");
    let without_cohort = cohort.is_null();
    let quotas = config.attr("quotas").elements().unwrap_or_default();
    let mut fleets: BTreeMap<&str, usize> = BTreeMap::new();
    let gpu_resources: BTreeSet<&str> = quotas
        .iter()
        .filter_map(|q| q.attr("gpu_resource").as_str())
        .collect();
    for (index, quota) in quotas.iter().enumerate() {
        if let Some(fleet) = quota.attr("fleet").as_str()
            && let Some(first) = fleets.insert(fleet, index)
        {
            diagnostics.error_at(
                quota_path(index, "fleet"),
                "Fleet quoted twice",
                format!(
                    "quotas[{index}] repeats fleet {fleet:?} of quotas[{first}]: a flavor appears once in a ClusterQueue (Kueue refuses the duplicate: {WEBHOOK}, validateResourceGroups). Give the fleet one quota."
                ),
            );
        }
        for limit in ["borrowing_limit", "lending_limit"] {
            if without_cohort && !quota.attr(limit).is_null() {
                diagnostics.error_at(
                    quota_path(index, limit),
                    "Limit without a cohort",
                    format!(
                        "`{limit}` only means something between the queues of a cohort, and Kueue refuses it on a ClusterQueue without one (\"must be nil when cohort is empty\": {WEBHOOK}, validateLimit). Set `cohort`, or leave the limit out."
                    ),
                );
            }
        }
        if let (Some(lend), Some(gpus)) = (
            quota.attr("lending_limit").as_i64(),
            quota.attr("gpus").as_i64(),
        ) && lend > gpus
        {
            diagnostics.error_at(
                quota_path(index, "lending_limit"),
                "Lending more than the quota",
                format!(
                    "`lending_limit` = {lend} is over `gpus` = {gpus}: a queue lends only its own quota, and Kueue refuses it (\"must be less than or equal to the nominalQuota\": {WEBHOOK}, validateLendingLimit)."
                ),
            );
        }
        for (resource, _) in quota.attr("resources").entries().into_iter().flatten() {
            let clash = if ["cpu", "memory"].contains(&resource.as_str()) {
                Some(format!("`{resource}` has its own attribute"))
            } else if gpu_resources.contains(resource.as_str()) {
                Some(format!(
                    "{resource:?} is a quota's `gpu_resource`, whose quota is `gpus`"
                ))
            } else {
                None
            };
            if let Some(clash) = clash {
                diagnostics.error_at(
                    quota_path(index, "resources").join_key(resource),
                    "Resource quoted twice",
                    format!(
                        "{clash}: a resource is covered once in a ClusterQueue (Kueue refuses a duplicate: {WEBHOOK}, validateResourceGroups)."
                    ),
                );
            }
        }
    }
    let preemption = config.attr("preemption");
    let reclaim = preemption.attr("reclaim_within_cohort").as_str();
    let borrow = preemption.attr("borrow_within_cohort").as_str();
    if let (Some("Never") | None, Some(policy)) = (reclaim, borrow)
        && policy != "Never"
        && !preemption.attr("reclaim_within_cohort").is_unknown()
    {
        diagnostics.error_at(
            AttributePath::attr("preemption").join_attr("borrow_within_cohort"),
            "Borrowing preemption without reclaim",
            format!(
                "`borrow_within_cohort = {policy:?}` with `reclaim_within_cohort = \"Never\"`: Kueue refuses it (\"reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never\": {WEBHOOK}, validatePreemption). Set `reclaim_within_cohort` too."
            ),
        );
    }
}

/// One quota as configured, once known.
struct Planned<'a> {
    index: usize,
    fleet: &'a str,
    gpu_resource: &'a str,
    gpus: i64,
    covers: BTreeSet<&'a str>,
}

fn planned_quotas(config: &Value) -> Vec<Planned<'_>> {
    config
        .attr("quotas")
        .elements()
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(index, quota)| {
            Some(Planned {
                index,
                fleet: quota.attr("fleet").as_str()?,
                gpu_resource: quota.attr("gpu_resource").as_str()?,
                gpus: quota.attr("gpus").as_i64()?,
                covers: quota
                    .attr("resources")
                    .entries()
                    .into_iter()
                    .flatten()
                    .map(|(r, _)| r.as_str())
                    .collect(),
            })
        })
        .collect()
}

/// The nominal quotas of `resource` on flavor `fleet` in the other
/// ClusterQueues (by name).
fn others_on(
    queues: &[DynamicObject],
    own: &str,
    fleet: &str,
    resource: &str,
) -> Vec<(String, i64)> {
    queues
        .iter()
        .filter(|q| q.metadata.name.as_deref() != Some(own))
        .filter_map(|q| {
            let quota = q.data["spec"]["resourceGroups"]
                .as_array()?
                .iter()
                .flat_map(|g| g["flavors"].as_array().into_iter().flatten())
                .filter(|f| f["name"] == fleet)
                .flat_map(|f| f["resources"].as_array().into_iter().flatten())
                .find(|r| r["name"] == resource)?;
            let nominal = match &quota["nominalQuota"] {
                serde_json::Value::String(s) => s.parse().ok()?,
                other => other.as_i64()?,
            };
            Some((q.metadata.name.clone()?, nominal))
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The GPU limit a NodePool's `spec.limits` sets on `resource`.
fn gpu_limit(node_pool: &DynamicObject, resource: &str) -> Option<i64> {
    match &node_pool.data["spec"]["limits"][resource] {
        serde_json::Value::String(s) => s.parse().ok(),
        other => other.as_i64(),
    }
}

/// The plan-time checks of every known quota against its fleet.
pub(super) async fn against_fleets(
    cluster: &Cluster,
    config: &Value,
    diagnostics: &mut Diagnostics,
) {
    let quotas = planned_quotas(config);
    let Some(name) = config.attr("name").as_str() else {
        return;
    };
    if quotas.is_empty() {
        return;
    }
    let deadline = Deadline::at_plan();
    let Ok(flavors) = cluster.kubernetes.custom(RESOURCE_FLAVOR).await else {
        return;
    };
    let Ok(pools) = cluster.kubernetes.custom(NODE_POOL).await else {
        return;
    };
    let queues = match cluster.kubernetes.custom(CLUSTER_QUEUE).await {
        Ok(objects) => objects.list(None, deadline).await.unwrap_or_default(),
        Err(_) => return,
    };
    for quota in &quotas {
        let at = |attribute| quota_path(quota.index, attribute);
        let fleet = quota.fleet;
        let flavor = flavors.named(fleet).get_if_installed(deadline).await;
        let pool = pools.named(fleet).get_if_installed(deadline).await;
        match (&flavor, &pool) {
            (Ok(Some(Some(flavor))), _) => {
                check_flavor(flavor, quota, &at, diagnostics);
            }
            (Ok(Some(None)), Ok(Some(Some(_)))) => diagnostics.push(
                Diagnostic::warning(
                    "Fleet not offered to Kueue",
                    format!(
                        "Fleet {fleet:?} exists but is no Kueue flavor: Kueue keeps the queue inactive (FlavorNotFound) and admits nothing until it is. Set `kueue_flavor = true` on the fleet."
                    ),
                )
                .at(at("fleet")),
            ),
            _ => {}
        }
        let Ok(Some(Some(pool))) = pool else { continue };
        let Some(limit) = gpu_limit(&pool, quota.gpu_resource) else {
            continue;
        };
        let others = others_on(&queues, name, fleet, quota.gpu_resource);
        let total: i64 = quota.gpus + others.iter().map(|(_, n)| n).sum::<i64>();
        if total > limit {
            let parts: Vec<String> = std::iter::once(format!("this queue {}", quota.gpus))
                .chain(others.iter().map(|(q, n)| format!("{q} {n}")))
                .collect();
            diagnostics.push(
                Diagnostic::warning(
                    "Quotas over what the fleet can launch",
                    format!(
                        "The queues' quotas on fleet {fleet:?} add up to {total} `{}` ({}), over the {limit} its `limits` let it launch: Kueue would admit jobs beyond {limit} whose nodes Karpenter never makes, so they stay pending. Lower the quotas, or raise the fleet's limit.",
                        quota.gpu_resource,
                        parts.join(", ")
                    ),
                )
                .at(at("gpus")),
            );
        }
    }
}

/// The quota against what the fleet's flavor says of its nodes.
fn check_flavor(
    flavor: &DynamicObject,
    quota: &Planned<'_>,
    at: &dyn Fn(&'static str) -> AttributePath,
    diagnostics: &mut Diagnostics,
) {
    let annotations = flavor.metadata.annotations.clone().unwrap_or_default();
    let fleet = quota.fleet;
    if let Some(advertised) = annotations.get(GPU_RESOURCE_ANNOTATION)
        && advertised != quota.gpu_resource
    {
        let detail = if quota.gpu_resource == GPU_RESOURCE
            && advertised.starts_with("nvidia.com/mig-")
        {
            format!(
                "Fleet {fleet:?} is partitioned by MIG: its nodes advertise {advertised:?}, not whole GPUs, so a quota of {} `{GPU_RESOURCE}` admits jobs that never fit on them. Give the quota in MIG devices: `gpu_resource = {advertised:?}` (the fleet's `gpu_resource`).",
                quota.gpus
            )
        } else {
            format!(
                "Fleet {fleet:?}'s nodes advertise their GPUs as {advertised:?}, not {:?}: the quota of {} admits jobs requesting a resource the fleet has none of. Use the fleet's `gpu_resource`.",
                quota.gpu_resource, quota.gpus
            )
        };
        diagnostics.push(
            Diagnostic::warning("Quota in a resource the fleet does not have", detail)
                .at(at("gpu_resource")),
        );
    }
    for resource in annotations
        .get(INTERCONNECT_ANNOTATION)
        .into_iter()
        .flat_map(|list| list.split(','))
        .filter(|r| !r.is_empty() && !quota.covers.contains(r))
    {
        diagnostics.push(
            Diagnostic::error(
                "Resource the queue does not cover",
                format!(
                    "Fleet {fleet:?}'s training pods request {resource:?} for the interconnect, and Kueue admits no job requesting a resource its ClusterQueue does not cover (\"resource {resource} unavailable in ClusterQueue\": kubernetes-sigs/kueue v0.17.0, pkg/scheduler/flavorassigner/flavorassigner.go). Add it to the quota: `resources = {{ {resource:?} = ... }}` (the fleet's `interconnect_resources` per node)."
                ),
            )
            .at(at("resources")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flavor(annotations: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "training", "annotations": annotations},
            "spec": {},
        }))
        .unwrap()
    }

    fn checked(flavor: &DynamicObject, gpu_resource: &str, covers: &[&str]) -> Diagnostics {
        let quota = Planned {
            index: 0,
            fleet: "training",
            gpu_resource,
            gpus: 16,
            covers: covers.iter().copied().collect(),
        };
        let mut diagnostics = Diagnostics::default();
        check_flavor(flavor, &quota, &|a| quota_path(0, a), &mut diagnostics);
        diagnostics
    }

    #[test]
    fn a_quota_in_whole_gpus_on_a_mig_fleet_is_warned_with_the_resource_to_use() {
        let mig = flavor(json!({GPU_RESOURCE_ANNOTATION: "nvidia.com/mig-1g.10gb"}));
        let found = checked(&mig, GPU_RESOURCE, &[]);
        assert_eq!(found.0.len(), 1, "{found:?}");
        assert!(!found.has_errors());
        assert!(
            found.0[0].detail.contains("partitioned by MIG")
                && found.0[0].detail.contains("\"nvidia.com/mig-1g.10gb\""),
            "{found:?}"
        );
        assert!(checked(&mig, "nvidia.com/mig-1g.10gb", &[]).0.is_empty());
    }

    #[test]
    fn an_interconnect_resource_the_quota_does_not_cover_is_refused_by_name() {
        let efa = flavor(json!({
            GPU_RESOURCE_ANNOTATION: GPU_RESOURCE,
            INTERCONNECT_ANNOTATION: "vpc.amazonaws.com/efa",
        }));
        let found = checked(&efa, GPU_RESOURCE, &[]);
        assert!(found.has_errors(), "{found:?}");
        assert!(
            found.0[0].detail.contains("\"vpc.amazonaws.com/efa\""),
            "{found:?}"
        );
        assert!(
            checked(&efa, GPU_RESOURCE, &["vpc.amazonaws.com/efa"])
                .0
                .is_empty()
        );
    }
}
