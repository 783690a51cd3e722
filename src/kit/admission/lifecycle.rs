//! The fence's life beside its resource: the API server's support checked
//! at plan and before anything is written, the policy and binding written,
//! read back (drift, import) and removed.

use kube::api::DynamicObject;

use super::objects::{holds, imported_settings, in_place};
use super::{BINDING, CHANGED, Fence, Guarded, POLICY, SINCE};
use crate::cluster::FIELD_MANAGER;
use crate::cluster::api::{Change, Edit, Objects};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::kit::Cluster;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

/// The error for an API server without ValidatingAdmissionPolicy v1.
fn not_served(what: &str) -> Diagnostic {
    Diagnostic::error(
        "Namespace fence needs Kubernetes 1.30",
        format!(
            "The API server does not serve {} ({}), which `allowed_namespaces` and `allowed_namespace_selector` of {what} are enforced with: it is GA since Kubernetes {SINCE}. Nothing was written. Upgrade the cluster to {SINCE} or later, or remove both attributes.",
            POLICY.kind, POLICY.api_version
        ),
    )
    .at(AttributePath::attr("allowed_namespaces"))
}

/// Whether the API server serves the policies, from the provider's one
/// discovery per process ([`crate::cluster::discovery`]), so the check
/// costs no request of its own: a server without aggregated discovery
/// predates them. `Err` when it cannot say.
async fn served(cluster: &Cluster, deadline: Deadline) -> Result<bool, GaveUp> {
    let served = cluster.kubernetes.served(deadline).await?;
    Ok(served.is_some_and(|kinds| kinds.serves(POLICY)))
}

/// Plan-time check of a configuration with a fence, made by a plan that
/// creates or changes the resource (one that changes nothing does not, so
/// a refresh costs no more): a warning when the API server does not serve
/// the policies (apply fails before writing), or cannot be reached (apply
/// checks).
pub async fn plan(cluster: &Cluster, what: &str) -> Diagnostics {
    let path = AttributePath::attr("allowed_namespaces");
    match served(cluster, Deadline::at_plan()).await {
        Ok(true) => Diagnostics::default(),
        Ok(false) => Diagnostic::warning(
            "Namespace fence needs Kubernetes 1.30",
            format!(
                "The API server does not serve {} ({}), GA since Kubernetes {SINCE}: the apply of {what} will fail before writing anything.",
                POLICY.kind, POLICY.api_version
            ),
        )
        .at(path)
        .into(),
        Err(gave_up) => {
            let why = gave_up
                .diagnostics
                .0
                .first()
                .map(|d| d.detail.clone())
                .unwrap_or_default();
            Diagnostic::warning(
                "Namespace fence checked at apply",
                format!(
                    "Before writing anything, the apply of {what} checks that the API server serves {} ({}, Kubernetes {SINCE} or later), and fails if it does not. The cluster could not be reached at plan: {why}",
                    POLICY.kind, POLICY.api_version
                ),
            )
            .at(path)
            .into()
        }
    }
}

/// Before anything of a fenced resource is written: the API server must
/// serve the policies.
pub async fn prepare(
    cluster: &Cluster,
    guarded: &Guarded,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !guarded.fence.fenced() {
        return Ok(());
    }
    if served(cluster, deadline).await? {
        Ok(())
    } else {
        Err(not_served(&guarded.what).into())
    }
}

/// Writes the policy and binding `guarded` asks for, or removes those a
/// `prior` fence wrote; `admission_policy` in `state` then names them.
pub async fn write(
    cluster: &Cluster,
    guarded: &Guarded,
    prior_fenced: bool,
    state: &mut Fence,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !guarded.fence.fenced() {
        if prior_fenced {
            delete(cluster, &guarded.policy_name, deadline).await?;
        }
        state.admission_policy = None;
        return Ok(());
    }
    let policies = cluster.kubernetes.custom(POLICY).await?;
    let bindings = cluster.kubernetes.custom(BINDING).await?;
    let name = guarded.policy_name.as_str();
    let written = put(&policies, name, &guarded.policy(), deadline).await;
    if let Err(gave_up) = written {
        return Err(match gave_up.not_installed {
            true => not_served(&guarded.what).into(),
            false => gave_up.into(),
        });
    }
    put(&bindings, name, &guarded.binding(cluster), deadline).await?;
    state.admission_policy = Some(name.to_string());
    Ok(())
}

/// Applies `wanted`, then puts back what another writer's share kept from
/// it: server-side apply merges a set such as the binding's
/// `validationActions` item by item, so an action someone else added
/// stays beside gpufleet's; a JSON merge patch replaces each list whole.
async fn put(
    objects: &Objects<'_, DynamicObject>,
    name: &str,
    wanted: &DynamicObject,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let named = objects.named(name);
    let live = named.apply(wanted, FIELD_MANAGER, deadline).await?;
    if !holds(&live.data, &wanted.data) {
        named.update(&Restore(wanted), deadline).await?;
    }
    Ok(())
}

/// The fields gpufleet wrote, lists whole (see [`put`]).
struct Restore<'a>(&'a DynamicObject);

impl Change<DynamicObject> for Restore<'_> {
    fn describe(&self) -> String {
        "spec, as gpufleet wrote it".to_string()
    }

    fn patch(&self, live: &DynamicObject) -> Option<Edit> {
        (!holds(&live.data, &self.0.data)).then(|| Edit::Merge {
            manager: FIELD_MANAGER.to_string(),
            patch: self.0.data.clone(),
        })
    }
}

/// Reads the policy and binding into `state` (`admission_policy`: their
/// name, marked when changed, null when gone); after an import, the
/// settings they were written from too. `guarded` is built from `state`
/// once an import has filled it.
pub async fn read(
    cluster: &Cluster,
    guarded: impl Fn(Fence) -> Guarded,
    state: &mut Fence,
    importing: bool,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !state.fenced() && !importing {
        state.admission_policy = None;
        return Ok(());
    }
    let name = guarded(state.clone()).policy_name;
    let policies = cluster.kubernetes.custom(POLICY).await?;
    let Some(policy) = policies.named(&name).get_if_installed(deadline).await? else {
        state.admission_policy = None;
        return Ok(());
    };
    let binding = cluster
        .kubernetes
        .custom(BINDING)
        .await?
        .named(&name)
        .get(deadline)
        .await?;
    let (Some(policy), Some(binding)) = (policy, binding) else {
        state.admission_policy = None;
        return Ok(());
    };
    if importing {
        *state = imported_settings(cluster, &policy, &binding);
    }
    let wanted = guarded(state.clone());
    let same = in_place(&policy, &wanted.policy()) && in_place(&binding, &wanted.binding(cluster));
    state.admission_policy = Some(if same {
        name
    } else {
        format!("{name}{CHANGED}")
    });
    Ok(())
}

/// Removes the binding, then the policy (either may be gone already).
pub async fn delete(cluster: &Cluster, name: &str, deadline: Deadline) -> Result<(), Diagnostics> {
    for kind in [BINDING, POLICY] {
        let objects = cluster.kubernetes.custom(kind).await?;
        match objects.named(name).delete(deadline).await {
            Err(gave_up) if gave_up.not_installed => return Ok(()),
            other => other?,
        };
    }
    Ok(())
}
