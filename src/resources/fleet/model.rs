//! The fleet's state as one Rust type, and the outputs workloads use,
//! derived from configuration the same way for plan and state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::constraints::Constraints;
use super::flavor::FlavorState;
use super::requirements::RawRequirement;
use super::sharing::SharingState;
use crate::framework::timeouts::Timeouts;
use crate::kit::admission::Fence;

/// The label Karpenter puts on every node of a NodePool, naming the pool.
pub(super) const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";

/// The `gpufleet_fleet` state.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub(super) id: Option<String>,
    pub(super) name: String,
    /// What nodes the fleet may launch.
    #[serde(flatten)]
    pub(super) constraints: Constraints,
    pub(super) node_class: NodeClass,
    pub(super) taints: Option<Vec<Taint>>,
    pub(super) startup_taints: Option<Vec<Taint>>,
    /// Node labels: `spec.template.metadata.labels`.
    pub(super) labels: Option<BTreeMap<String, String>>,
    /// Node annotations: `spec.template.metadata.annotations`.
    pub(super) annotations: Option<BTreeMap<String, String>>,
    /// Resource name (or `gpus`) to quantity.
    pub(super) limits: Option<BTreeMap<String, String>>,
    pub(super) disruption: Option<Disruption>,
    pub(super) weight: Option<i64>,
    /// A static fleet's node count.
    pub(super) replicas: Option<i64>,
    pub(super) expire_after: Option<String>,
    pub(super) termination_grace_period: Option<String>,
    /// The NodePool's own `metadata.labels`.
    pub(super) node_pool_labels: Option<BTreeMap<String, String>>,
    /// The NodePool's own `metadata.annotations`.
    pub(super) node_pool_annotations: Option<BTreeMap<String, String>>,
    /// Planned from the node class or the provider when not configured.
    pub(super) label_scheme: Option<String>,
    /// The NodePool's requirements, as the label scheme spells them.
    pub(super) node_pool_requirements: Option<Vec<RawRequirement>>,
    pub(super) node_selector: Option<BTreeMap<String, String>>,
    pub(super) tolerations: Option<Vec<Toleration>>,
    /// Resources a training pod requests for the interconnect, per node.
    pub(super) interconnect_resources: Option<BTreeMap<String, String>>,
    pub(super) timeouts: Option<Timeouts>,
    /// `gpu_sharing` and what it writes.
    #[serde(flatten)]
    pub(super) sharing: SharingState,
    /// `allowed_namespaces` and the admission policy it writes.
    #[serde(flatten)]
    pub(super) fence: Fence,
    /// `kueue_flavor`.
    #[serde(flatten)]
    pub(super) flavor: FlavorState,
}

/// `nodeClassRef`, spelled the same in state and in the NodePool.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct NodeClass {
    pub(super) group: String,
    pub(super) kind: String,
    pub(super) name: String,
}

/// A taint, spelled the same in state and in the NodePool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Taint {
    pub(super) key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) value: Option<String>,
    pub(super) effect: String,
}

/// When Karpenter may remove or replace nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Disruption {
    pub(super) consolidation_policy: Option<String>,
    pub(super) consolidate_after: Option<String>,
    pub(super) budgets: Option<Vec<Budget>>,
}

/// A disruption budget, spelled the same in state and in the NodePool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Budget {
    pub(super) nodes: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) schedule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) duration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reasons: Option<Vec<String>>,
}

/// A toleration for one of the fleet's taints, as pods spell it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Toleration {
    pub(super) key: String,
    pub(super) operator: String,
    pub(super) value: Option<String>,
    pub(super) effect: String,
}

impl Model {
    /// The outputs that follow from configuration: `id`, the node selector
    /// that puts a pod on this fleet's nodes, and tolerations for its taints
    /// (startup taints need none: something removes them before workloads
    /// land).
    pub(super) fn derive(&mut self) {
        self.id = Some(self.name.clone());
        self.node_selector = Some(BTreeMap::from([(
            NODEPOOL_LABEL.to_string(),
            self.name.clone(),
        )]));
        self.tolerations = Some(
            self.taints
                .iter()
                .flatten()
                .map(|taint| {
                    let value = taint.value.clone().filter(|v| !v.is_empty());
                    Toleration {
                        key: taint.key.clone(),
                        operator: if value.is_some() { "Equal" } else { "Exists" }.to_string(),
                        value,
                        effect: taint.effect.clone(),
                    }
                })
                .collect(),
        );
    }
}
