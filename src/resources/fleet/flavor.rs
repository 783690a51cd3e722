//! A fleet offered to Kueue (`kueue_flavor = true`): a ResourceFlavor
//! (kueue.x-k8s.io/v1beta2) named as the fleet, written beside its NodePool.
//! Its `nodeLabels` are the fleet's `node_selector` and its `tolerations` the
//! fleet's `tolerations`: Kueue copies both into the pod template of every
//! job it admits to the flavor (`pkg/podset/podset.go`), so a job names only
//! its queue and lands on the fleet. The flavor follows the fleet's taints on
//! every apply and goes with the fleet.
//!
//! Kueue keeps a flavor while a ClusterQueue lists it (finalizer
//! `kueue.x-k8s.io/resource-in-use`): removing the flavor waits for that
//! within the fleet's timeouts, and then names the queues that hold it; a
//! destroy waits for it before it deletes anything, so that it never
//! leaves the fleet half gone.
//! The flavor also carries, as annotations, the resource the fleet's GPUs
//! are advertised as and what its pods request for the interconnect, so a
//! `gpufleet_queue` can check its quotas against them when it plans.

use std::collections::BTreeMap;

use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Fleet;
use super::model::Model;
use crate::cluster::FIELD_MANAGER;
use crate::cluster::retry::Deadline;
use crate::framework::schema::Attr;
use crate::kit::Cluster;
use crate::kit::object::AppliedObject;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
use crate::resources::queue::kueue::{
    self, GPU_RESOURCE_ANNOTATION, Held, INTERCONNECT_ANNOTATION, MAX_FLAVOR_ITEMS, RESOURCE_FLAVOR,
};

/// The fleet's flavor, as state holds it.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct FlavorState {
    pub(super) kueue_flavor: Option<bool>,
}

/// The attribute.
pub(super) fn attributes() -> Vec<Attr> {
    vec![Attr::bool("kueue_flavor").optional().describe(
        "Offer the fleet to Kueue: a ResourceFlavor named as the fleet whose `nodeLabels` are `node_selector` and whose `tolerations` are `tolerations`, so a job Kueue admits to it lands on the fleet without naming either (Kueue adds them). `gpufleet_queue` quotas name the fleet. The flavor follows the fleet's taints and goes with the fleet; Kueue keeps it while a ClusterQueue lists it, so removing it waits for that within `timeouts`. A flavor removed or changed by hand reads as `false`, and the next apply puts it back. Needs Kueue's CRDs (v1beta2).",
    )]
}

fn wanted(model: &Model) -> bool {
    model.flavor.kueue_flavor == Some(true)
}

/// Kueue's CRD takes at most [`MAX_FLAVOR_ITEMS`] tolerations: a fleet with
/// more taints cannot be a flavor.
pub(super) fn validate(config: &Value, diagnostics: &mut Diagnostics) {
    if config.attr("kueue_flavor") != &Value::Bool(true) {
        return;
    }
    let taints = config.attr("taints").elements().map_or(0, |t| t.len());
    if taints > MAX_FLAVOR_ITEMS {
        diagnostics.error_at(
            AttributePath::attr("kueue_flavor"),
            "Too many taints for a Kueue flavor",
            format!(
                "The fleet has {taints} taints, and its flavor would carry a toleration for each: Kueue takes at most {MAX_FLAVOR_ITEMS} tolerations on a ResourceFlavor (kubernetes-sigs/kueue, apis/kueue/v1beta2/resourceflavor_types.go, MaxItems=8)."
            ),
        );
    }
}

/// The flavor `model` (derived) asks for.
pub(super) fn flavor_object(model: &Model) -> DynamicObject {
    let mut derived = model.clone();
    Fleet.derive(&mut derived);
    let tolerations: Vec<serde_json::Value> = derived
        .tolerations
        .iter()
        .flatten()
        .map(|t| {
            let mut toleration = json!({"key": t.key, "operator": t.operator, "effect": t.effect});
            if let Some(value) = &t.value {
                toleration["value"] = json!(value);
            }
            toleration
        })
        .collect();
    let mut annotations = BTreeMap::new();
    if let Some(resource) = &derived.sharing.gpu_resource {
        annotations.insert(GPU_RESOURCE_ANNOTATION.to_string(), resource.clone());
    }
    if let Some(interconnect) = derived
        .interconnect_resources
        .as_ref()
        .filter(|r| !r.is_empty())
    {
        let names: Vec<&str> = interconnect.keys().map(String::as_str).collect();
        annotations.insert(INTERCONNECT_ANNOTATION.to_string(), names.join(","));
    }
    let mut object = DynamicObject::new(&model.name, &RESOURCE_FLAVOR.api_resource());
    object.metadata.annotations = Some(annotations).filter(|a| !a.is_empty());
    object.data =
        json!({"spec": {"nodeLabels": derived.node_selector, "tolerations": tolerations}});
    object
}

/// Whether `live` is the flavor `model` asks for: its spec, as Kueue
/// serves it back.
fn matches(live: &DynamicObject, model: &Model) -> bool {
    let wanted = flavor_object(model);
    let spec = &live.data["spec"];
    let labels = |v: &serde_json::Value| v.as_object().cloned().unwrap_or_default();
    let list = |v: &serde_json::Value| v.as_array().cloned().unwrap_or_default();
    labels(&spec["nodeLabels"]) == labels(&wanted.data["spec"]["nodeLabels"])
        && list(&spec["tolerations"]) == list(&wanted.data["spec"]["tolerations"])
}

/// Writes the flavor `state` asks for, or removes the one `prior` had.
pub(super) async fn write(
    cluster: &Cluster,
    prior: Option<&Model>,
    state: &mut Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let had = prior.is_some_and(wanted);
    if !wanted(state) && !had {
        return Ok(());
    }
    let flavors = cluster.kubernetes.custom(RESOURCE_FLAVOR).await?;
    if !wanted(state) {
        // Not marked for deletion while Kueue would keep it: the flavor
        // stays as it was, state says so, and the next plan shows the
        // change again.
        let held = Held::Flavor(&state.name);
        let left = format!("Fleet {:?} is still offered to Kueue.", state.name);
        if let Err(held) = kueue::wait_released(cluster, held, &left, deadline).await {
            state.flavor.kueue_flavor = Some(true);
            return Err(held);
        }
        return kueue::delete_and_wait(
            cluster,
            &flavors,
            Held::Flavor(&state.name),
            &state.name,
            deadline,
        )
        .await;
    }
    match flavors
        .named(&state.name)
        .apply(&flavor_object(state), FIELD_MANAGER, deadline)
        .await
    {
        Ok(_) => Ok(()),
        Err(gave_up) if gave_up.not_installed => Err(Diagnostic::error(
            "Kueue not installed",
            format!(
                "Fleet {:?} asks for a Kueue flavor (`kueue_flavor`), but the cluster serves no {RESOURCE_FLAVOR}: install Kueue (v0.17.0 or later serves kueue.x-k8s.io/v1beta2), or leave `kueue_flavor` out.",
                state.name
            ),
        )
        .at(AttributePath::attr("kueue_flavor"))
        .into()),
        Err(gave_up) => Err(gave_up.into()),
    }
}

/// Reads whether the fleet's flavor is there as the fleet wants it into
/// `state`; after an import, whether there is one at all.
pub(super) async fn read(
    cluster: &Cluster,
    state: &mut Model,
    prior: &Model,
    importing: bool,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    state.flavor = prior.flavor.clone();
    if !wanted(prior) && !importing {
        return Ok(());
    }
    let flavors = cluster.kubernetes.custom(RESOURCE_FLAVOR).await?;
    let live = flavors
        .named(&state.name)
        .get_if_installed(deadline)
        .await?;
    let offered = match live.flatten() {
        Some(live) => importing || matches(&live, state),
        None => false,
    };
    state.flavor.kueue_flavor = match (offered, importing) {
        (true, _) => Some(true),
        (false, true) => None,
        (false, false) => Some(false),
    };
    Ok(())
}

/// Waits, before anything of the fleet is deleted, until no ClusterQueue
/// lists the flavor `prior` wrote: Kueue would keep it while one does, and
/// the fleet would be left half deleted, its NodePool gone and its flavor
/// marked for deletion. A queue destroyed in the same run lets go of it.
pub(super) async fn prepare_delete(
    cluster: &Cluster,
    prior: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !wanted(prior) {
        return Ok(());
    }
    let left = format!("Nothing of fleet {:?} was deleted.", prior.name);
    kueue::wait_released(cluster, Held::Flavor(&prior.name), &left, deadline).await
}

/// Removes the flavor `prior` wrote, waiting for the queues that hold it.
pub(super) async fn delete(
    cluster: &Cluster,
    prior: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !wanted(prior) {
        return Ok(());
    }
    let flavors = cluster.kubernetes.custom(RESOURCE_FLAVOR).await?;
    kueue::delete_and_wait(
        cluster,
        &flavors,
        Held::Flavor(&prior.name),
        &prior.name,
        deadline,
    )
    .await
}
