//! The NodePool a fleet is: the part of `karpenter.sh/v1` NodePool's spec
//! gpufleet writes and reads, and the mapping between it and the fleet's
//! state.

use std::collections::BTreeMap;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde::{Deserialize, Serialize};

use super::model::{Budget, Disruption, Limits, Model, NodeClass, Taint};
use super::requirements::{Constraints, Requirement};
use super::sharing::{SharingState, split_labels, template_labels};
use crate::catalog::LabelScheme;
use crate::cluster::ownership::{owned, owned_whole};

const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// The part of a NodePool's `spec` gpufleet writes and reads.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NodePoolSpec {
    pub(super) template: Template,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) disruption: Option<DisruptionSpec>,
    /// Quantities: gpufleet sends strings, others may have sent numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) limits: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) weight: Option<i64>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Template {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<TemplateMetadata>,
    pub(super) spec: TemplateSpec,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct TemplateMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TemplateSpec {
    pub(super) node_class_ref: NodeClass,
    /// Required by the CRD, so always sent (possibly empty).
    #[serde(default)]
    pub(super) requirements: Vec<Requirement>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) taints: Option<Vec<Taint>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) startup_taints: Option<Vec<Taint>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) expire_after: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DisruptionSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) consolidation_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) consolidate_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) budgets: Option<Vec<Budget>>,
}

impl From<Disruption> for DisruptionSpec {
    fn from(d: Disruption) -> Self {
        Self {
            consolidation_policy: d.consolidation_policy,
            consolidate_after: d.consolidate_after,
            budgets: d.budgets,
        }
    }
}

impl From<DisruptionSpec> for Disruption {
    fn from(d: DisruptionSpec) -> Self {
        Self {
            consolidation_policy: d.consolidation_policy,
            consolidate_after: d.consolidate_after,
            budgets: d.budgets,
        }
    }
}

pub(super) fn node_pool_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("karpenter.sh", "v1", "NodePool"),
        "nodepools",
    )
}

pub(super) fn node_pool(name: &str, spec: &NodePoolSpec) -> DynamicObject {
    let mut object = DynamicObject::new(name, &node_pool_resource());
    object.data = serde_json::json!({ "spec": spec });
    object
}

impl Model {
    /// The NodePool spec this state asks for, with `requirements` from the
    /// requirements engine.
    pub(super) fn spec(&self, requirements: Vec<Requirement>) -> NodePoolSpec {
        NodePoolSpec {
            template: Template {
                metadata: template_labels(self).map(|labels| TemplateMetadata {
                    labels: Some(labels),
                }),
                spec: TemplateSpec {
                    node_class_ref: self.node_class.clone(),
                    requirements,
                    taints: self.taints.clone(),
                    startup_taints: self.startup_taints.clone(),
                    expire_after: self.expire_after.clone(),
                },
            },
            disruption: self.disruption.clone().map(DisruptionSpec::from),
            limits: self.limits.as_ref().map(Limits::to_spec),
            weight: self.weight,
        }
    }

    /// State from a live NodePool; `prior` says which optional fields are
    /// ours. Disruption and `expireAfter` are always sent, so always ours.
    pub(super) fn from_spec(
        name: String,
        spec: &NodePoolSpec,
        prior: &Model,
        importing: bool,
        label_scheme: Option<String>,
        constraints: Constraints,
    ) -> Model {
        let template = &spec.template.spec;
        let labels = spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone());
        let (labels, sharing_labels) = split_labels(&name, labels, prior, importing);
        Model {
            id: None,
            name,
            constraints,
            node_class: template.node_class_ref.clone(),
            taints: owned_whole(template.taints.clone(), &prior.taints, importing),
            startup_taints: owned_whole(
                template.startup_taints.clone(),
                &prior.startup_taints,
                importing,
            ),
            labels: owned_whole(labels, &prior.labels, importing),
            limits: Limits::from_spec(spec.limits.as_ref(), prior.limits.as_ref(), importing),
            disruption: spec.disruption.clone().map(Disruption::from),
            weight: owned(spec.weight, &prior.weight, importing),
            expire_after: template.expire_after.clone(),
            label_scheme,
            node_selector: None,
            tolerations: None,
            sharing: SharingState::from_live(prior, sharing_labels),
        }
    }
}

impl Limits {
    /// `spec.limits`, quantities as strings (the API would coerce numbers).
    fn to_spec(&self) -> BTreeMap<String, serde_json::Value> {
        [
            (GPU_RESOURCE, self.gpus.map(|n| n.to_string())),
            ("cpu", self.cpu.clone()),
            ("memory", self.memory.clone()),
        ]
        .into_iter()
        .filter_map(|(key, quantity)| Some((key.to_string(), serde_json::Value::String(quantity?))))
        .collect()
    }

    /// The limits state shows: each while managed, all after an import. A
    /// GPU limit that is not a plain whole number reads as unset, so the
    /// plan puts the configured number back.
    fn from_spec(
        live: Option<&BTreeMap<String, serde_json::Value>>,
        prior: Option<&Limits>,
        importing: bool,
    ) -> Option<Limits> {
        let quantity = |key: &str| {
            live.and_then(|l| l.get(key)).map(|q| match q {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        };
        let live = Limits {
            gpus: quantity(GPU_RESOURCE).and_then(|q| q.parse().ok()),
            cpu: quantity("cpu"),
            memory: quantity("memory"),
        };
        if importing {
            return (live != Limits::default()).then_some(live);
        }
        let prior = prior?;
        Some(Limits {
            gpus: owned(live.gpus, &prior.gpus, false),
            cpu: owned(live.cpu, &prior.cpu, false),
            memory: owned(live.memory, &prior.memory, false),
        })
    }
}

/// The label scheme a fleet uses: its own setting, else the provider's.
pub(super) fn effective_scheme(setting: Option<&str>, provider: LabelScheme) -> LabelScheme {
    setting.and_then(LabelScheme::parse).unwrap_or(provider)
}

/// After an import: the label scheme the NodePool's GPU requirements use,
/// when that is not the provider's.
pub(super) fn imported_label_scheme(spec: &NodePoolSpec, provider: LabelScheme) -> Option<String> {
    let uses = |scheme: LabelScheme| {
        spec.template
            .spec
            .requirements
            .iter()
            .any(|r| scheme.is_gpu_label(&r.key))
    };
    if uses(provider) {
        return None;
    }
    LabelScheme::ALL
        .into_iter()
        .find(|&scheme| uses(scheme))
        .map(|scheme| scheme.as_str().to_string())
}
