//! The NodePool a fleet is: the part of `karpenter.sh/v1` NodePool's spec
//! gpufleet writes and reads, and the mapping between it and the fleet's
//! state.

use std::collections::BTreeMap;

use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};

use super::constraints::{Constraint, Constraints};
use super::model::{Budget, Disruption, Model, NodeClass, Taint};
use super::requirements::Requirement;
use super::resolved::{Resolved, effective_scheme};
use super::sharing::{self, SharingState, split_labels};
use crate::catalog::LabelScheme;
use crate::cluster::api::Kind;
use crate::kit::admission::Fence;
use crate::kit::ownership::{owned, owned_map, owned_whole};
use crate::protocol::{Diagnostic, Diagnostics};

/// The resource `limits.gpus` stands for.
pub(super) const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The friendly name of [`GPU_RESOURCE`] in `limits`.
pub(super) const GPUS_LIMIT: &str = "gpus";
/// The only limit a static fleet may have.
pub(super) const NODES_LIMIT: &str = "nodes";

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) replicas: Option<i64>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) annotations: Option<BTreeMap<String, String>>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) termination_grace_period: Option<String>,
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

/// Karpenter's NodePools.
pub(crate) const NODE_POOL: Kind = Kind::new("karpenter.sh/v1", "NodePool", "nodepools");

/// The NodePool `model` asks for, its requirements generated with catalog
/// names as `resolved` has them.
pub(super) fn build(model: &Model, resolved: &Resolved) -> Result<DynamicObject, Diagnostics> {
    let spec = model.spec(model.constraints.requirements(resolved)?);
    let mut object = DynamicObject::new(&model.name, &NODE_POOL.api_resource());
    object.metadata.labels = model.node_pool_labels.clone();
    object.metadata.annotations = model.node_pool_annotations.clone();
    object.data = serde_json::json!({ "spec": spec });
    Ok(object)
}

impl Model {
    /// The NodePool spec this state asks for, with `requirements` from the
    /// requirements engine.
    fn spec(&self, requirements: Vec<Requirement>) -> NodePoolSpec {
        let metadata = TemplateMetadata {
            labels: self.template_labels(),
            annotations: self.annotations.clone(),
        };
        NodePoolSpec {
            template: Template {
                metadata: (metadata != TemplateMetadata::default()).then_some(metadata),
                spec: TemplateSpec {
                    node_class_ref: self.node_class.clone(),
                    requirements,
                    taints: self.taints.clone(),
                    startup_taints: self.startup_taints.clone(),
                    expire_after: self.expire_after.clone(),
                    termination_grace_period: self.termination_grace_period.clone(),
                },
            },
            disruption: self.disruption.clone().map(DisruptionSpec::from),
            limits: self.limits.as_ref().map(limits_to_spec),
            weight: self.weight,
            replicas: self.replicas,
        }
    }

    /// `spec.template.metadata.labels`: every label the fleet puts on its
    /// nodes, the user's `labels` and those GPU sharing needs. The one place
    /// they are assembled.
    fn template_labels(&self) -> Option<BTreeMap<String, String>> {
        sharing::template_labels(self)
    }

    /// State from a live NodePool; `prior` says which optional fields are
    /// ours. Disruption and `expireAfter` are always sent, so always ours.
    /// Its constraints are read under the fleet's label scheme (after an
    /// import, the one its requirements use, see [`used_label_scheme`]).
    pub(super) fn from_live(
        live: DynamicObject,
        prior: &Model,
        importing: bool,
        provider: LabelScheme,
    ) -> Result<Model, Diagnostics> {
        let name = live.metadata.name.unwrap_or_default();
        let spec: NodePoolSpec =
            serde_json::from_value(live.data["spec"].clone()).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    "Unexpected NodePool",
                    format!("NodePool {name:?} does not look like a karpenter.sh/v1 NodePool: {e}"),
                ))
            })?;
        // A state written before the label scheme was planned has none: the
        // NodePool's requirements tell which one they were written under.
        let scheme = prior
            .label_scheme
            .as_deref()
            .filter(|_| !importing)
            .and_then(LabelScheme::parse)
            .unwrap_or_else(|| used_label_scheme(&spec, provider));
        let constraints = Constraints::from_requirements(
            &spec.template.spec.requirements,
            scheme,
            &prior.constraints,
            importing,
        );
        let template = &spec.template.spec;
        let template_metadata = spec.template.metadata.clone().unwrap_or_default();
        let (labels, sharing_labels) =
            split_labels(&name, template_metadata.labels, prior, importing);
        Ok(Model {
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
            labels: user_labels(labels, prior, importing),
            annotations: owned_map(template_metadata.annotations, &prior.annotations, importing),
            limits: limits_from_spec(spec.limits.as_ref(), prior.limits.as_ref(), importing),
            disruption: spec.disruption.clone().map(Disruption::from),
            weight: owned(spec.weight, &prior.weight, importing),
            replicas: owned(spec.replicas, &prior.replicas, importing),
            expire_after: template.expire_after.clone(),
            termination_grace_period: owned(
                template.termination_grace_period.clone(),
                &prior.termination_grace_period,
                importing,
            ),
            node_pool_labels: owned_map(live.metadata.labels, &prior.node_pool_labels, importing),
            node_pool_annotations: owned_map(
                live.metadata.annotations,
                &prior.node_pool_annotations,
                importing,
            ),
            label_scheme: Some(scheme.as_str().to_string()),
            node_pool_requirements: None,
            node_selector: None,
            tolerations: None,
            interconnect_resources: None,
            timeouts: prior.timeouts.clone(),
            sharing: SharingState::from_live(prior, sharing_labels),
            fence: Fence::settings_of(&prior.fence),
            flavor: prior.flavor.clone(),
        })
    }
}

/// The user's `labels` in live `spec.template.metadata.labels`: the
/// counterpart of [`Model::template_labels`], where labels from other
/// sources are taken out again. The map is atomic in the CRD, so the whole
/// of it is the fleet's while managed.
fn user_labels(
    live: Option<BTreeMap<String, String>>,
    prior: &Model,
    importing: bool,
) -> Option<BTreeMap<String, String>> {
    owned_whole(live, &prior.labels, importing)
}

/// `spec.limits`: `gpus` as the resource it names, quantities as strings
/// (the API would keep numbers as numbers).
fn limits_to_spec(limits: &BTreeMap<String, String>) -> BTreeMap<String, serde_json::Value> {
    limits
        .iter()
        .map(|(name, quantity)| {
            let resource = if name == GPUS_LIMIT {
                GPU_RESOURCE
            } else {
                name
            };
            (
                resource.to_string(),
                serde_json::Value::String(quantity.clone()),
            )
        })
        .collect()
}

/// The limits state shows, `nvidia.com/gpu` under the name the user gave it
/// (`gpus` unless the prior state says otherwise): each managed one while
/// managed, all after an import.
fn limits_from_spec(
    live: Option<&BTreeMap<String, serde_json::Value>>,
    prior: Option<&BTreeMap<String, String>>,
    importing: bool,
) -> Option<BTreeMap<String, String>> {
    let gpu_name = if prior.is_some_and(|p| p.contains_key(GPU_RESOURCE)) {
        GPU_RESOURCE
    } else {
        GPUS_LIMIT
    };
    let live = live.map(|live| {
        live.iter()
            .map(|(resource, quantity)| {
                let name = if resource == GPU_RESOURCE {
                    gpu_name
                } else {
                    resource
                };
                let quantity = match quantity {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (name.to_string(), quantity)
            })
            .collect()
    });
    owned_map(live, &prior.cloned(), importing)
}

/// The label scheme a NodePool's requirements are written under: the one
/// its node class's cloud (else the provider) gives, unless they use
/// another scheme's own labels (GPU, instance family, provider) and not
/// its.
fn used_label_scheme(spec: &NodePoolSpec, provider: LabelScheme) -> LabelScheme {
    let derived = effective_scheme(None, &spec.template.spec.node_class_ref.group, provider);
    let uses = |scheme: LabelScheme| {
        spec.template
            .spec
            .requirements
            .iter()
            .any(|r| Constraint::is_scheme_label(&r.key, scheme))
    };
    if uses(derived) {
        return derived;
    }
    LabelScheme::ALL
        .into_iter()
        .find(|&scheme| uses(scheme))
        .unwrap_or(derived)
}
