//! What a fleet needs on the cluster that gpufleet does not create:
//! Karpenter's NodePool CRD, its NodeOverlay CRD when the fleet has
//! overlays, and the node class it names (its CRD, from the cloud's
//! Karpenter provider, and the object). Checked when a plan creates or
//! changes the fleet and the cluster answers, from one discovery request
//! per provider process ([`crate::cluster::discovery`]) and a GET of the
//! node class; an unreachable cluster skips them (a plan must not need
//! one), and the warning about it is the MIG strategy's, where that
//! matters.
//!
//! At plan each is a warning. At apply, what makes a write fail fails
//! before anything is written: without the NodePool CRD, the create's
//! first call (the GET that refuses to adopt an existing NodePool) fails
//! naming the API. A missing node class does not make the NodePool's write
//! fail (Karpenter waits for it), and a missing NodeOverlay CRD leaves the
//! NodePool useful (Karpenter plans by the cloud's GPUs), so those apply
//! with the warning the plan gave (the overlays' own at apply,
//! `sharing::write`).

use kube::api::DynamicObject;

use super::node_pool::NODE_POOL;
use super::sharing::NODE_OVERLAY;
use crate::cluster::api::Kind;
use crate::cluster::discovery::Served;
use crate::cluster::retry::Deadline;
use crate::kit::Cluster;
use crate::kit::permissions::Permission;
use crate::protocol::diagnostics::Severity;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// A node class kind whose objects a plan reads, and where its CRD comes
/// from. Other kinds (AKSNodeClass, say) are checked as served only.
struct NodeClassKind {
    kind: Kind,
    install: &'static str,
}

const NODE_CLASSES: &[NodeClassKind] = &[
    NodeClassKind {
        kind: Kind::new("karpenter.k8s.aws/v1", "EC2NodeClass", "ec2nodeclasses"),
        install: "karpenter-provider-aws's CRDs (its `karpenter` or `karpenter-crd` Helm chart)",
    },
    NodeClassKind {
        kind: Kind::new(
            "karpenter.kwok.sh/v1alpha1",
            "KWOKNodeClass",
            "kwoknodeclasses",
        ),
        install: "the CRDs of Karpenter's kwok provider (sigs.k8s.io/karpenter, kwok/apis/crds)",
    },
];

/// Reading the node class a fleet names, for the kinds of [`NODE_CLASSES`].
pub const PERMISSIONS: &[Permission] = &[
    Permission::cluster("karpenter.k8s.aws", "ec2nodeclasses", &["get"]),
    Permission::cluster("karpenter.kwok.sh", "kwoknodeclasses", &["get"]),
];

/// The prerequisites of fleet `config` (whose `node_overlays` are
/// `overlays` in the plan), as plan warnings.
pub(super) async fn check(cluster: &Cluster, config: &Value, overlays: &Value) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    let Some(name) = config.attr("name").as_str() else {
        return diagnostics;
    };
    let Ok(Some(served)) = cluster.kubernetes.served(Deadline::at_plan()).await else {
        return diagnostics;
    };
    if !served.serves(NODE_POOL) {
        diagnostics.push(Diagnostic::warning(
            "Karpenter's NodePool CRD is not installed",
            format!(
                "The cluster does not serve {NODE_POOL}, so the apply of fleet {name:?} fails before writing anything. Install Karpenter (its Helm chart installs its CRDs; or the `karpenter-crd` chart), then plan again."
            ),
        ));
    }
    let has_overlays = overlays.is_unknown() || overlays.entries().is_some_and(|o| !o.is_empty());
    if has_overlays && !served.serves(NODE_OVERLAY) {
        let at = if config.attr("gpu_sharing").is_null() {
            "accelerator_count"
        } else {
            "gpu_sharing"
        };
        diagnostics.push(
            Diagnostic::warning(
                "Karpenter's NodeOverlay CRD is not installed",
                format!(
                    "The cluster does not serve {NODE_OVERLAY}, which fleet {name:?} needs for its `node_overlays`: without them Karpenter plans its nodes by the GPUs the cloud reports, so shared GPUs take more nodes than needed and fractional GPU nodes are never launched for `nvidia.com/gpu`. The apply writes the NodePool and warns. Install a Karpenter whose CRDs include NodeOverlay (v1.6 does not ship it) and turn on its `NodeOverlay` feature gate (karpenter-provider-aws's chart: `--set settings.featureGates.nodeOverlay=true`), which the API does not show."
                ),
            )
            .at(AttributePath::attr(at)),
        );
    }
    diagnostics.extend(node_class(cluster, served, name, config.attr("node_class")).await);
    diagnostics
}

/// The node class `class` names, checked against what the cluster serves
/// and, for a known kind, the object itself.
async fn node_class(cluster: &Cluster, served: &Served, fleet: &str, class: &Value) -> Diagnostics {
    let (Some(group), Some(kind), Some(name)) = (
        class.attr("group").as_str(),
        class.attr("kind").as_str(),
        class.attr("name").as_str(),
    ) else {
        return Diagnostics::default();
    };
    let known = NODE_CLASSES
        .iter()
        .find(|k| k.kind.kind == kind && k.kind.api_version.starts_with(&format!("{group}/")));
    if served.kind(group, kind).is_none() {
        let install = known.map_or(
            "the CRDs of the Karpenter cloud provider that defines it",
            |k| k.install,
        );
        return Diagnostic::warning(
            "Node class kind not installed",
            format!(
                "The cluster serves no {kind} in API group {group}{}, so Karpenter launches no node for fleet {fleet:?}, whose NodePool names {kind} {name:?}. Install {install}, then create {kind} {name:?}.",
                if served.has_group(group) { "" } else { " (nor the group at all)" }
            ),
        )
        .at(AttributePath::attr("node_class"))
        .into();
    }
    let Some(known) = known.filter(|k| served.serves(k.kind)) else {
        return Diagnostics::default();
    };
    let Ok(classes) = cluster.kubernetes.custom(known.kind).await else {
        return Diagnostics::default();
    };
    let found: Result<Option<DynamicObject>, _> =
        classes.named(name).get(Deadline::at_plan()).await;
    match found {
        Ok(Some(_)) => Diagnostics::default(),
        // The cluster answered discovery: what keeps it from answering this
        // (a role without the rule, say) is said, as a warning.
        Err(gave_up) => Diagnostics(
            gave_up
                .diagnostics
                .0
                .into_iter()
                .map(|d| Diagnostic {
                    severity: Severity::Warning,
                    ..d
                })
                .collect(),
        ),
        // Named in the summary: Terraform shows one warning of a summary
        // and counts the others.
        Ok(None) => Diagnostic::warning(
            format!("Node class not found: {kind} {name:?}"),
            format!(
                "{kind} {name:?} does not exist, so Karpenter launches no node for fleet {fleet:?} until it does. gpufleet does not create node classes: create {kind} {name:?} (its cloud provider documents the fields), or name one that exists."
            ),
        )
        .at(AttributePath::attr("node_class").join_attr("name"))
        .into(),
    }
}
