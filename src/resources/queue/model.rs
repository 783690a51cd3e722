//! The queue's state, the ClusterQueue built from it, and state read back
//! from a live ClusterQueue.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::kueue::{CLUSTER_QUEUE, QUEUE_NAME_LABEL};
use crate::cluster::names::same_quantity;
use crate::framework::timeouts::Timeouts;
use crate::kit::ownership::owned;
use crate::protocol::{Diagnostic, Diagnostics};

/// The label every namespace carries with its own name (kube-apiserver
/// sets it), which the queue's `namespaceSelector` matches.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// What a quota without `cpu` or `memory` covers them with: more than any
/// fleet launches, and small enough that a cohort's sums stay far within
/// the 64-bit counts Kueue keeps (milli-cores, bytes).
pub(super) const UNCAPPED_CPU: &str = "1M";
pub(super) const UNCAPPED_MEMORY: &str = "1Pi";

/// The `gpufleet_queue` state.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) namespaces: Vec<String>,
    pub(super) quotas: Vec<Quota>,
    pub(super) cohort: Option<String>,
    pub(super) queueing_strategy: Option<String>,
    pub(super) fair_sharing_weight: Option<String>,
    pub(super) preemption: Option<Preemption>,
    pub(super) queue_label: Option<BTreeMap<String, String>>,
    pub(super) timeouts: Option<Timeouts>,
}

/// One fleet's quota.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Quota {
    pub(super) fleet: String,
    pub(super) gpu_resource: String,
    pub(super) gpus: i64,
    pub(super) borrowing_limit: Option<i64>,
    pub(super) lending_limit: Option<i64>,
    pub(super) cpu: Option<String>,
    pub(super) memory: Option<String>,
    pub(super) resources: Option<BTreeMap<String, String>>,
}

/// Kueue's preemption policies.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Preemption {
    pub(super) within_queue: Option<String>,
    pub(super) reclaim_within_cohort: Option<String>,
    pub(super) borrow_within_cohort: Option<String>,
    pub(super) borrow_max_priority_threshold: Option<i64>,
}

impl Preemption {
    /// Whether these are the policies Kueue gives a ClusterQueue that sets
    /// none (`clusterqueue_types.go`: `Never` for all three).
    fn is_kueue_default(&self) -> bool {
        [
            &self.within_queue,
            &self.reclaim_within_cohort,
            &self.borrow_within_cohort,
        ]
        .iter()
        .all(|p| p.as_deref() == Some("Never"))
            && self.borrow_max_priority_threshold.is_none()
    }
}

/// A quantity as the API serves it: a string, or a bare number.
fn quantity(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The live quantity as the user wrote it: `written` when it is the same
/// quantity, since Kueue's webhook serves back its canonical form (`1.5`
/// as `1500m`), which is no change.
fn as_written(live: Option<String>, written: Option<&String>) -> Option<String> {
    match (live, written) {
        (Some(live), Some(written)) if same_quantity(&live, written) => Some(written.clone()),
        (live, _) => live,
    }
}

impl Quota {
    /// This quota's nominal quota (and limits) of `resource`.
    fn resource_quota(&self, resource: &str) -> serde_json::Value {
        let mut entry = json!({"name": resource});
        let nominal = if resource == self.gpu_resource {
            entry["borrowingLimit"] = json!(self.borrowing_limit.map(|l| l.to_string()));
            entry["lendingLimit"] = json!(self.lending_limit.map(|l| l.to_string()));
            self.gpus.to_string()
        } else if resource == "cpu" {
            self.cpu.clone().unwrap_or_else(|| UNCAPPED_CPU.to_string())
        } else if resource == "memory" {
            self.memory
                .clone()
                .unwrap_or_else(|| UNCAPPED_MEMORY.to_string())
        } else {
            self.resources
                .as_ref()
                .and_then(|r| r.get(resource).cloned())
                .unwrap_or_else(|| "0".to_string())
        };
        entry["nominalQuota"] = json!(nominal);
        if let Some(map) = entry.as_object_mut() {
            map.retain(|_, v| !v.is_null());
        }
        entry
    }
}

impl Model {
    /// `id` and `queue_label`, from configuration.
    pub(super) fn derive(&mut self) {
        self.id = Some(self.name.clone());
        self.queue_label = Some(BTreeMap::from([(
            QUEUE_NAME_LABEL.to_string(),
            self.name.clone(),
        )]));
    }

    /// The resources the queue's one resource group covers, in order: each
    /// quota's GPU resource (first seen first), `cpu`, `memory`, then the
    /// other resources any quota names, sorted.
    pub(super) fn covered_resources(&self) -> Vec<String> {
        let mut covered: Vec<String> = Vec::new();
        for quota in &self.quotas {
            if !covered.contains(&quota.gpu_resource) {
                covered.push(quota.gpu_resource.clone());
            }
        }
        for resource in ["cpu", "memory"] {
            if !covered.iter().any(|c| c == resource) {
                covered.push(resource.to_string());
            }
        }
        let others: BTreeSet<&String> = self
            .quotas
            .iter()
            .flat_map(|q| q.resources.iter().flatten().map(|(r, _)| r))
            .filter(|r| !covered.contains(r))
            .collect();
        covered.extend(others.into_iter().cloned());
        covered
    }

    /// The ClusterQueue: exactly the fields gpufleet owns.
    pub(super) fn cluster_queue(&self) -> DynamicObject {
        let covered = self.covered_resources();
        let flavors: Vec<serde_json::Value> = self
            .quotas
            .iter()
            .map(|quota| {
                json!({
                    "name": quota.fleet,
                    "resources": covered.iter().map(|r| quota.resource_quota(r)).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut namespaces = self.namespaces.clone();
        namespaces.sort();
        let mut spec = json!({
            "namespaceSelector": {"matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": namespaces}
            ]},
            "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
            "queueingStrategy": self.queueing_strategy,
        });
        if let Some(cohort) = &self.cohort {
            spec["cohortName"] = json!(cohort);
        }
        if let Some(weight) = &self.fair_sharing_weight {
            spec["fairSharing"] = json!({"weight": weight});
        }
        if let Some(p) = &self.preemption {
            let mut borrow = json!({"policy": p.borrow_within_cohort});
            if let Some(threshold) = p.borrow_max_priority_threshold {
                borrow["maxPriorityThreshold"] = json!(threshold);
            }
            spec["preemption"] = json!({
                "withinClusterQueue": p.within_queue,
                "reclaimWithinCohort": p.reclaim_within_cohort,
                "borrowWithinCohort": borrow,
            });
        }
        let mut object = DynamicObject::new(&self.name, &CLUSTER_QUEUE.api_resource());
        object.data = json!({"spec": spec});
        object
    }

    /// State from a live ClusterQueue. Quotas come back one per flavor of
    /// its first resource group; a GPU resource is the one of the covered
    /// resources that is neither `cpu`, `memory` nor another quota's named
    /// resource and has a nonzero quota (else the prior's, else the first
    /// such), since the ClusterQueue does not say which is which.
    pub(super) fn from_live(
        live: &DynamicObject,
        prior: &Model,
        importing: bool,
    ) -> Result<Model, Diagnostics> {
        let name = live.metadata.name.clone().unwrap_or_default();
        let spec = &live.data["spec"];
        let groups = spec["resourceGroups"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if groups.len() > 1 {
            return Err(Diagnostic::error(
                "ClusterQueue not in gpufleet's shape",
                format!(
                    "ClusterQueue {name:?} has {} resource groups; gpufleet_queue writes one, covering every quota's resources.",
                    groups.len()
                ),
            )
            .into());
        }
        let group = groups.first().cloned().unwrap_or_default();
        let covered: Vec<String> = group["coveredResources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect();
        let quotas = group["flavors"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(index, flavor)| quota_from_live(flavor, &covered, prior.quotas.get(index)))
            .collect();
        let namespaces = spec["namespaceSelector"]["matchExpressions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["key"] == NAMESPACE_NAME_LABEL && e["operator"] == "In")
            .flat_map(|e| e["values"].as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let live_preemption = &spec["preemption"];
        let preemption = Some(Preemption {
            within_queue: live_preemption["withinClusterQueue"]
                .as_str()
                .map(str::to_string),
            reclaim_within_cohort: live_preemption["reclaimWithinCohort"]
                .as_str()
                .map(str::to_string),
            borrow_within_cohort: live_preemption["borrowWithinCohort"]["policy"]
                .as_str()
                .map(str::to_string),
            borrow_max_priority_threshold:
                live_preemption["borrowWithinCohort"]["maxPriorityThreshold"].as_i64(),
        });
        Ok(Model {
            id: None,
            name,
            namespaces,
            quotas,
            cohort: spec["cohortName"].as_str().map(str::to_string),
            queueing_strategy: spec["queueingStrategy"].as_str().map(str::to_string),
            fair_sharing_weight: owned(
                as_written(
                    quantity(&spec["fairSharing"]["weight"]),
                    prior.fair_sharing_weight.as_ref(),
                ),
                &prior.fair_sharing_weight,
                importing,
            ),
            // Kueue always fills in its defaults: an import takes them as
            // the configuration that leaves `preemption` out.
            preemption: owned(
                preemption.filter(|p| prior.preemption.is_some() || !p.is_kueue_default()),
                &prior.preemption,
                importing,
            ),
            queue_label: None,
            timeouts: prior.timeouts.clone(),
        })
    }
}

/// One flavor of the live resource group as a quota; `prior` (the quota at
/// the same place in state) says which resource is its GPUs and which
/// optional quotas are set.
fn quota_from_live(flavor: &serde_json::Value, covered: &[String], prior: Option<&Quota>) -> Quota {
    let resources: BTreeMap<String, &serde_json::Value> = flavor["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r["name"].as_str()?.to_string(), r)))
        .collect();
    let nominal = |r: &str| resources.get(r).and_then(|v| quantity(&v["nominalQuota"]));
    let named_by_prior = |r: &str| {
        prior
            .and_then(|p| p.resources.as_ref())
            .is_some_and(|m| m.contains_key(r))
    };
    let candidates: Vec<&String> = covered
        .iter()
        .filter(|r| !["cpu", "memory"].contains(&r.as_str()) && !named_by_prior(r))
        .collect();
    let gpu_resource = prior
        .map(|p| p.gpu_resource.clone())
        .filter(|r| covered.contains(r))
        .or_else(|| {
            candidates
                .iter()
                .find(|r| nominal(r).is_some_and(|q| !same_quantity(&q, "0")))
                .or(candidates.first())
                .map(|r| (*r).clone())
        })
        .unwrap_or_default();
    let gpu = resources.get(&gpu_resource);
    let whole = |v: &serde_json::Value| quantity(v).and_then(|q| q.parse::<i64>().ok());
    let uncapped_or = |r: &str, uncapped: &str, prior: Option<&String>| {
        as_written(nominal(r), prior).filter(|q| prior.is_some() || !same_quantity(q, uncapped))
    };
    let prior_resources = prior.and_then(|p| p.resources.as_ref());
    let others: BTreeMap<String, String> = covered
        .iter()
        .filter(|r| **r != gpu_resource && !["cpu", "memory"].contains(&r.as_str()))
        .filter_map(|r| {
            let written = prior_resources.and_then(|p| p.get(r));
            Some((r.clone(), as_written(nominal(r), written)?))
        })
        .filter(|(r, q)| named_by_prior(r) || !same_quantity(q, "0"))
        .collect();
    Quota {
        fleet: flavor["name"].as_str().unwrap_or_default().to_string(),
        gpus: nominal(&gpu_resource)
            .and_then(|q| q.parse().ok())
            .unwrap_or_default(),
        borrowing_limit: gpu.and_then(|g| whole(&g["borrowingLimit"])),
        lending_limit: gpu.and_then(|g| whole(&g["lendingLimit"])),
        cpu: uncapped_or("cpu", UNCAPPED_CPU, prior.and_then(|p| p.cpu.as_ref())),
        memory: uncapped_or(
            "memory",
            UNCAPPED_MEMORY,
            prior.and_then(|p| p.memory.as_ref()),
        ),
        resources: Some(others).filter(|o| !o.is_empty() || prior_resources.is_some()),
        gpu_resource,
    }
}
