//! `gpufleet_fleet`: a Karpenter `karpenter.sh/v1` NodePool for one kind of
//! GPU work, e.g. training on 8×H100 nodes or inference on L4s.
//!
//! The node constraints (GPU models, GPUs per node, GPU memory, capacity
//! types, ...) become NodePool requirements on the node labels of a label
//! scheme (`cfke`, `aws` or `azure`). Reading decomposes the live
//! requirements back into the same attributes, so drift and imports show
//! where the user wrote them. Karpenter's defaults (disruption,
//! `expireAfter`) are planned as defaults and always sent, so they never
//! show as diffs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde::{Deserialize, Serialize};

use super::ownership::{IMPORTING, check_import_name, importing, owned, owned_whole};
use crate::catalog::{self, Accelerator, LabelScheme, MemoryUnit};
use crate::framework::plan::{Plan, set};
use crate::framework::schema::{Attr, ObjectSchema, Validator};
use crate::framework::state::{typed, untyped};
use crate::framework::validators::{
    check_qualified_name, dns1123_subdomain, each, integer_between, label_value, labels,
    non_negative_quantity, not_empty, one_of, qualified_name, quoted_list,
};
use crate::framework::{Resource, Stored};
use crate::protocol::schema::Nesting;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
use crate::provider::kube::apply;
use crate::provider::{Client, LABEL_SCHEMES};

const KIND: &str = "karpenter.sh/v1 NodePool";
/// The label Karpenter puts on every node of a NodePool, naming the pool.
const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";
const CAPACITY_TYPE_LABEL: &str = "karpenter.sh/capacity-type";
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const ARCH_LABEL: &str = "kubernetes.io/arch";
const CFKE_PROVIDER_LABEL: &str = "cfke.io/provider";
const GPU_RESOURCE: &str = "nvidia.com/gpu";

const CAPACITY_TYPES: &[&str] = &["on-demand", "spot", "reserved"];
const ARCHITECTURES: &[&str] = &["amd64", "arm64"];
const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
const OPERATORS: &[&str] = &[
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "Gt",
    "Lt",
    "Gte",
    "Lte",
];
const CONSOLIDATION_POLICIES: &[&str] = &["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"];
const DISRUPTION_REASONS: &[&str] = &["Underutilized", "Empty", "Drifted"];
const MAX_GPUS_PER_NODE: i64 = 1024;

// Karpenter's defaults (NodePool CRD v1), planned when the configuration
// leaves them unset.
const DEFAULT_CONSOLIDATION_POLICY: &str = "WhenEmptyOrUnderutilized";
const DEFAULT_CONSOLIDATE_AFTER: &str = "0s";
const DEFAULT_BUDGET_NODES: &str = "10%";
const DEFAULT_EXPIRE_AFTER: &str = "720h";

/// Label domains a NodePool template may not set labels in: Karpenter's own
/// and those its AWS and Azure providers reserve.
const RESERVED_LABEL_DOMAINS: &[&str] =
    &["karpenter.sh", "karpenter.k8s.aws", "karpenter.azure.com"];
/// Label domains a requirement may not use (the cloud providers' domains
/// hold the well-known instance labels requirements select on).
const RESERVED_REQUIREMENT_DOMAINS: &[&str] = &["karpenter.sh"];

/// The attributes [`Constraints`] holds.
const CONSTRAINT_ATTRS: &[&str] = &[
    "accelerators",
    "accelerator_count",
    "accelerator_memory_min_gib",
    "capacity_types",
    "instance_families",
    "providers",
    "zones",
    "architectures",
    "requirements",
];

pub struct Fleet;

// ------------------------------------------------------------------ state

/// The fleet's attributes other than its node constraints and the outputs
/// derived from them.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    id: Option<String>,
    name: String,
    node_class: NodeClass,
    taints: Option<Vec<Taint>>,
    startup_taints: Option<Vec<Taint>>,
    labels: Option<BTreeMap<String, String>>,
    limits: Option<Limits>,
    disruption: Option<Disruption>,
    weight: Option<i64>,
    expire_after: Option<String>,
    label_scheme: Option<String>,
}

/// `nodeClassRef`, spelled the same in state and in the NodePool.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct NodeClass {
    group: String,
    kind: String,
    name: String,
}

/// A taint, spelled the same in state and in the NodePool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Taint {
    key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    effect: String,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Limits {
    gpus: Option<i64>,
    cpu: Option<String>,
    memory: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Disruption {
    consolidation_policy: Option<String>,
    consolidate_after: Option<String>,
    budgets: Option<Vec<Budget>>,
}

/// A disruption budget, spelled the same in state and in the NodePool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Budget {
    nodes: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schedule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasons: Option<Vec<String>>,
}

/// What nodes the fleet may launch: the attributes that become
/// `spec.template.spec.requirements`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Constraints {
    accelerators: Option<Vec<String>>,
    accelerator_count: Option<GpuCount>,
    accelerator_memory_min_gib: Option<u32>,
    capacity_types: Option<Vec<String>>,
    instance_families: Option<Vec<String>>,
    providers: Option<Vec<String>>,
    zones: Option<Vec<String>>,
    architectures: Option<Vec<String>>,
    requirements: Option<Vec<RawRequirement>>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct GpuCount {
    min: Option<u32>,
    max: Option<u32>,
}

/// A requirement as the `requirements` attribute holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RawRequirement {
    key: String,
    operator: String,
    values: Option<Vec<String>>,
    min_values: Option<u32>,
}

// --------------------------------------------------------------- NodePool

/// The part of a NodePool's `spec` gpufleet writes and reads.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodePoolSpec {
    template: Template,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    disruption: Option<DisruptionSpec>,
    /// Quantities: gpufleet sends strings, others may have sent numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limits: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    weight: Option<i64>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Template {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<TemplateMetadata>,
    spec: TemplateSpec,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct TemplateMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TemplateSpec {
    node_class_ref: NodeClass,
    /// Required by the CRD, so always sent (possibly empty).
    #[serde(default)]
    requirements: Vec<Requirement>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    taints: Option<Vec<Taint>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    startup_taints: Option<Vec<Taint>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expire_after: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Requirement {
    key: String,
    operator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    values: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min_values: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DisruptionSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    consolidation_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    consolidate_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budgets: Option<Vec<Budget>>,
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

impl From<RawRequirement> for Requirement {
    fn from(r: RawRequirement) -> Self {
        Self {
            key: r.key,
            operator: r.operator,
            values: r.values,
            min_values: r.min_values,
        }
    }
}

impl From<Requirement> for RawRequirement {
    fn from(r: Requirement) -> Self {
        Self {
            key: r.key,
            operator: r.operator,
            values: r.values,
            min_values: r.min_values,
        }
    }
}

fn node_pool_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("karpenter.sh", "v1", "NodePool"),
        "nodepools",
    )
}

fn node_pool(name: &str, spec: &NodePoolSpec) -> DynamicObject {
    let mut object = DynamicObject::new(name, &node_pool_resource());
    object.data = serde_json::json!({ "spec": spec });
    object
}

// ------------------------------------------------------- state ↔ NodePool

impl State {
    fn spec(&self, requirements: Vec<Requirement>) -> NodePoolSpec {
        NodePoolSpec {
            template: Template {
                metadata: self.labels.clone().map(|labels| TemplateMetadata {
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
    fn from_spec(
        name: String,
        spec: &NodePoolSpec,
        prior: &State,
        importing: bool,
        label_scheme: Option<String>,
    ) -> State {
        let template = &spec.template.spec;
        let labels = spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone());
        State {
            id: Some(name.clone()),
            name,
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
fn effective_scheme(setting: Option<&str>, provider: LabelScheme) -> LabelScheme {
    setting.and_then(LabelScheme::parse).unwrap_or(provider)
}

/// After an import: the label scheme the NodePool's GPU requirements use,
/// when that is not the provider's.
fn imported_label_scheme(spec: &NodePoolSpec, provider: LabelScheme) -> Option<String> {
    let uses = |scheme: LabelScheme| {
        let keys = scheme.label_keys();
        spec.template.spec.requirements.iter().any(|r| {
            r.key == keys.name || r.key == keys.count || keys.memory.is_some_and(|m| m.key == r.key)
        })
    };
    if uses(provider) {
        return None;
    }
    LabelScheme::ALL
        .into_iter()
        .find(|&scheme| uses(scheme))
        .map(|scheme| scheme.as_str().to_string())
}

// ------------------------------------------------------------ constraints

/// One node constraint attribute, in the order requirements are generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Constraint {
    Accelerators,
    MinAccelerators,
    MaxAccelerators,
    MinMemory,
    CapacityTypes,
    InstanceFamilies,
    Providers,
    Zones,
    Architectures,
}

impl Constraint {
    const ALL: [Self; 9] = [
        Self::Accelerators,
        Self::MinAccelerators,
        Self::MaxAccelerators,
        Self::MinMemory,
        Self::CapacityTypes,
        Self::InstanceFamilies,
        Self::Providers,
        Self::Zones,
        Self::Architectures,
    ];

    /// The attribute as configurations spell it.
    fn attribute(self) -> &'static str {
        match self {
            Self::Accelerators => "accelerators",
            Self::MinAccelerators => "accelerator_count.min",
            Self::MaxAccelerators => "accelerator_count.max",
            Self::MinMemory => "accelerator_memory_min_gib",
            Self::CapacityTypes => "capacity_types",
            Self::InstanceFamilies => "instance_families",
            Self::Providers => "providers",
            Self::Zones => "zones",
            Self::Architectures => "architectures",
        }
    }

    fn path(self) -> AttributePath {
        self.attribute()
            .split('.')
            .fold(AttributePath::root(), |path, name| path.join_attr(name))
    }

    /// The requirement key and operator under `scheme`; `None` when the
    /// scheme has no label for this constraint.
    fn requirement(self, scheme: LabelScheme) -> Option<(&'static str, &'static str)> {
        let gpu = scheme.label_keys();
        match self {
            Self::Accelerators => Some((gpu.name, "In")),
            Self::MinAccelerators => Some((gpu.count, "Gte")),
            Self::MaxAccelerators => Some((gpu.count, "Lte")),
            Self::MinMemory => gpu.memory.map(|memory| (memory.key, "Gte")),
            Self::CapacityTypes => Some((CAPACITY_TYPE_LABEL, "In")),
            Self::InstanceFamilies => Some((instance_family_label(scheme), "In")),
            Self::Providers => (scheme == LabelScheme::Cfke).then_some((CFKE_PROVIDER_LABEL, "In")),
            Self::Zones => Some((ZONE_LABEL, "In")),
            Self::Architectures => Some((ARCH_LABEL, "In")),
        }
    }

    fn inexpressible(self, scheme: LabelScheme) -> Diagnostic {
        let what = match self {
            Self::MinMemory => "GPU memory",
            Self::Providers => "cloud provider",
            _ => "matching",
        };
        Diagnostic::error(
            "Not expressible with this label scheme",
            format!(
                "`{}` cannot be expressed with the {scheme} label scheme: it has no {what} label. \
                 Remove it, or set `label_scheme` to one that has (cfke has all).",
                self.attribute()
            ),
        )
        .at(self.path())
    }
}

fn instance_family_label(scheme: LabelScheme) -> &'static str {
    match scheme {
        LabelScheme::Cfke => "cfke.io/instance-family",
        LabelScheme::Aws => "karpenter.k8s.aws/instance-family",
        LabelScheme::Azure => "karpenter.azure.com/sku-family",
    }
}

fn sorted_unique(values: &[String]) -> Vec<String> {
    values
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

impl Constraints {
    /// The NodePool requirements under `scheme`: the generated ones in
    /// [`Constraint::ALL`] order, then the raw ones. Errors point at what
    /// the scheme cannot express.
    fn requirements(&self, scheme: LabelScheme) -> Result<Vec<Requirement>, Diagnostics> {
        let mut diagnostics = Diagnostics::default();
        let mut requirements = Vec::new();
        for constraint in Constraint::ALL {
            match (
                self.values(constraint, scheme),
                constraint.requirement(scheme),
            ) {
                (Ok(None), _) => {}
                (Ok(Some(values)), Some((key, operator))) => requirements.push(Requirement {
                    key: key.to_string(),
                    operator: operator.to_string(),
                    values: Some(values),
                    min_values: None,
                }),
                (Ok(Some(_)), None) => diagnostics.push(constraint.inexpressible(scheme)),
                (Err(d), _) => diagnostics.push(d),
            }
        }
        for (index, raw) in self.requirements.iter().flatten().enumerate() {
            let generated_by = Constraint::ALL
                .into_iter()
                .find(|c| c.requirement(scheme) == Some((raw.key.as_str(), raw.operator.as_str())));
            match generated_by {
                Some(constraint) => diagnostics.error_at(
                    AttributePath::attr("requirements").join_index(index),
                    "Requirement duplicates an attribute",
                    format!(
                        "`{} {}` is what `{}` generates with the {scheme} label scheme; set `{}` instead.",
                        raw.key,
                        raw.operator,
                        constraint.attribute(),
                        constraint.attribute()
                    ),
                ),
                None => requirements.push(raw.clone().into()),
            }
        }
        if diagnostics.has_errors() {
            Err(diagnostics)
        } else {
            Ok(requirements)
        }
    }

    /// The values of the requirement `constraint` generates, if it is set.
    fn values(
        &self,
        constraint: Constraint,
        scheme: LabelScheme,
    ) -> Result<Option<Vec<String>>, Diagnostic> {
        let count = self.accelerator_count.as_ref();
        let number = |n: Option<u32>| n.map(|n| vec![n.to_string()]);
        let set = |values: &Option<Vec<String>>| values.as_deref().map(sorted_unique);
        Ok(match constraint {
            Constraint::Accelerators => match &self.accelerators {
                Some(names) => Some(accelerator_label_values(
                    names,
                    self.accelerator_memory_min_gib,
                    scheme,
                )?),
                None => None,
            },
            Constraint::MinAccelerators => number(count.and_then(|c| c.min)),
            Constraint::MaxAccelerators => number(count.and_then(|c| c.max)),
            Constraint::MinMemory => {
                // Without a memory label the value goes unused: that is an error.
                let unit = scheme
                    .label_keys()
                    .memory
                    .map_or(MemoryUnit::GiB, |label| label.unit);
                number(
                    self.accelerator_memory_min_gib
                        .map(|gib| memory_bound(unit, gib)),
                )
            }
            Constraint::CapacityTypes => set(&self.capacity_types),
            Constraint::InstanceFamilies => set(&self.instance_families),
            Constraint::Providers => set(&self.providers),
            Constraint::Zones => set(&self.zones),
            Constraint::Architectures => set(&self.architectures),
        })
    }

    /// The constraints live requirements express under `scheme`: a
    /// requirement a constraint generates fills it, the rest stay raw.
    /// `prior` keeps the user's spelling of accelerator names and an empty
    /// `requirements` list.
    fn from_requirements(live: &[Requirement], scheme: LabelScheme, prior: &Constraints) -> Self {
        let generated_by = |r: &Requirement| {
            Constraint::ALL.into_iter().find(|c| {
                r.min_values.is_none()
                    && c.requirement(scheme) == Some((r.key.as_str(), r.operator.as_str()))
            })
        };
        let memory_unit = scheme.label_keys().memory.map(|label| label.unit);
        let memory_min = |r: &Requirement| match (memory_unit, r.values.as_deref()) {
            (Some(unit), Some([bound])) => bound
                .parse()
                .ok()
                .and_then(|bound| memory_gib_for_bound(unit, bound)),
            _ => None,
        };
        // Accelerator names depend on the memory bound, so find that first.
        let memory = live
            .iter()
            .filter(|r| generated_by(r) == Some(Constraint::MinMemory))
            .find_map(memory_min);
        let mut constraints = Constraints::default();
        let mut raw = Vec::new();
        for requirement in live {
            let claimed = generated_by(requirement).is_some_and(|constraint| {
                constraints.claim(constraint, requirement, memory, scheme)
            });
            if !claimed {
                raw.push(RawRequirement::from(requirement.clone()));
            }
        }
        let same_models = |a: &[String], b: &[String]| canonical(a) == canonical(b);
        if let (Some(live), Some(prior)) = (&constraints.accelerators, &prior.accelerators)
            && same_models(live, prior)
        {
            constraints.accelerators = Some(prior.clone());
        }
        constraints.requirements = if raw.is_empty() {
            prior.requirements.as_ref().map(|_| Vec::new())
        } else {
            Some(raw)
        };
        constraints
    }

    /// Fills `constraint` from a live requirement if it is still empty and
    /// the values mean something to it; says whether it did.
    fn claim(
        &mut self,
        constraint: Constraint,
        requirement: &Requirement,
        memory_min: Option<u32>,
        scheme: LabelScheme,
    ) -> bool {
        let values = requirement.values.as_deref().unwrap_or_default();
        let single = match values {
            [value] => value.parse::<u32>().ok(),
            _ => None,
        };
        let set = |field: &mut Option<Vec<String>>| {
            let fill = field.is_none() && !values.is_empty();
            if fill {
                *field = Some(sorted_unique(values));
            }
            fill
        };
        let count = self.accelerator_count.as_ref();
        match constraint {
            Constraint::Accelerators => {
                let models = selected(values, memory_min, scheme);
                let fill = self.accelerators.is_none() && models.is_some();
                if fill {
                    self.accelerators =
                        models.map(|m| m.iter().map(|a| a.name.to_string()).collect());
                }
                fill
            }
            Constraint::MinAccelerators => match (count.and_then(|c| c.min), single) {
                (None, Some(n)) => {
                    self.accelerator_count.get_or_insert_default().min = Some(n);
                    true
                }
                _ => false,
            },
            Constraint::MaxAccelerators => match (count.and_then(|c| c.max), single) {
                (None, Some(n)) => {
                    self.accelerator_count.get_or_insert_default().max = Some(n);
                    true
                }
                _ => false,
            },
            Constraint::MinMemory => {
                let fill = self.accelerator_memory_min_gib.is_none() && memory_min.is_some();
                if fill {
                    self.accelerator_memory_min_gib = memory_min;
                }
                fill
            }
            Constraint::CapacityTypes => set(&mut self.capacity_types),
            Constraint::InstanceFamilies => set(&mut self.instance_families),
            Constraint::Providers => set(&mut self.providers),
            Constraint::Zones => set(&mut self.zones),
            Constraint::Architectures => set(&mut self.architectures),
        }
    }
}

/// The catalog names of accelerator names; `None` if one is unknown.
fn canonical(names: &[String]) -> Option<BTreeSet<&'static str>> {
    names
        .iter()
        .map(|name| catalog::lookup(name).ok().map(|a| a.name))
        .collect()
}

/// The GPU name label values selecting exactly the named models (with the
/// memory bound, if any). Errors when a model has no value under `scheme`,
/// when the memory bound excludes a named model, and when the values would
/// also select models that are not named (memory sizes share a value).
fn accelerator_label_values(
    names: &[String],
    memory_min: Option<u32>,
    scheme: LabelScheme,
) -> Result<Vec<String>, Diagnostic> {
    let path = AttributePath::attr("accelerators");
    let mut requested = Vec::new();
    for name in names {
        let accelerator = catalog::lookup(name).map_err(|e| {
            Diagnostic::error("Unknown accelerator", e.to_string()).at(path.clone())
        })?;
        requested.push(accelerator);
    }
    let mut values = BTreeSet::new();
    for accelerator in &requested {
        let value = accelerator.label_value(scheme).ok_or_else(|| {
            Diagnostic::error(
                "Not expressible with this label scheme",
                format!(
                    "`{}` cannot be selected with the {scheme} label scheme: no `{}` value names it. \
                     Leave it out, or set `label_scheme` to a scheme that labels it.",
                    accelerator.name,
                    scheme.label_keys().name
                ),
            )
            .at(path.clone())
        })?;
        if let Some(min) = memory_min.filter(|&min| accelerator.memory_gib < min) {
            return Err(Diagnostic::error(
                "Contradictory GPU memory",
                format!(
                    "`{}` has {} GiB per GPU, less than accelerator_memory_min_gib = {min}: no node could match.",
                    accelerator.name, accelerator.memory_gib
                ),
            )
            .at(AttributePath::attr("accelerator_memory_min_gib")));
        }
        values.insert(value.to_string());
    }
    let values: Vec<String> = values.into_iter().collect();
    let extra: Vec<&str> = selected(&values, memory_min, scheme)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| !requested.contains(a))
        .map(|a| a.name)
        .collect();
    if !extra.is_empty() {
        return Err(Diagnostic::error(
            "Accelerators not expressible exactly",
            format!(
                "With the {scheme} label scheme this fleet would also launch {}: they share a `{}` value \
                 with a listed model. List them too, or set accelerator_memory_min_gib to tell the \
                 memory sizes apart.",
                quoted_list(&extra),
                scheme.label_keys().name
            ),
        )
        .at(path));
    }
    Ok(values)
}

/// The catalog models a GPU name requirement selects together with a
/// memory bound; `None` when a value selects none.
fn selected(
    values: &[String],
    memory_min: Option<u32>,
    scheme: LabelScheme,
) -> Option<Vec<&'static Accelerator>> {
    let selects = |a: &Accelerator, value: &str| {
        a.label_value(scheme) == Some(value) && memory_min.is_none_or(|min| a.memory_gib >= min)
    };
    let each_selects = values
        .iter()
        .all(|v| catalog::all().iter().any(|a| selects(a, v)));
    each_selects.then(|| {
        catalog::all()
            .iter()
            .filter(|a| values.iter().any(|v| selects(a, v)))
            .collect()
    })
}

/// The memory label value that selects GPUs with at least `gib` GiB. GiB
/// labels hold nominal sizes. AWS's MiB figures are below nominal × 1024
/// for some models (an L4's 24 GB are 22888 MiB), so the MiB bound is the
/// smallest figure among catalog models of at least `gib` GiB, and at most
/// `gib` × 1024.
fn memory_bound(unit: MemoryUnit, gib: u32) -> u32 {
    match unit {
        MemoryUnit::GiB => gib,
        MemoryUnit::MiB => catalog::all()
            .iter()
            .filter(|a| a.memory_gib >= gib)
            .map(Accelerator::memory_mib)
            .fold(gib.saturating_mul(1024), u32::min),
    }
}

/// The GiB figure [`memory_bound`] maps to `bound`, if any; the largest one
/// where several do, as users write nominal sizes (`24`, not `23`, for
/// 22888 MiB).
fn memory_gib_for_bound(unit: MemoryUnit, bound: u32) -> Option<u32> {
    match unit {
        MemoryUnit::GiB => Some(bound),
        MemoryUnit::MiB => catalog::all()
            .iter()
            .filter(|a| a.memory_mib() == bound)
            .map(|a| a.memory_gib)
            .chain(bound.is_multiple_of(1024).then_some(bound / 1024))
            .filter(|&gib| memory_bound(unit, gib) == bound)
            .max(),
    }
}

// ---------------------------------------------------------------- outputs

/// The node selector that puts a pod on this fleet's nodes.
fn node_selector(name: &Value) -> Value {
    match name.as_str() {
        Some(name) => Value::Map([(NODEPOOL_LABEL.to_string(), Value::string(name))].into()),
        None => Value::UNKNOWN,
    }
}

/// Tolerations for the fleet's taints. Startup taints need none: something
/// removes them before workloads land.
fn tolerations(taints: &Value) -> Value {
    if !taints.is_wholly_known() {
        return Value::UNKNOWN;
    }
    let toleration = |taint: &Value| {
        let value = taint.attr("value").as_str().filter(|v| !v.is_empty());
        let (operator, value) = match value {
            Some(v) => ("Equal", Value::string(v)),
            None => ("Exists", Value::Null),
        };
        Value::Object(
            [
                ("key", taint.attr("key").clone()),
                ("operator", Value::string(operator)),
                ("value", value),
                ("effect", taint.attr("effect").clone()),
            ]
            .map(|(k, v)| (k.to_string(), v))
            .into(),
        )
    };
    Value::List(
        taints
            .elements()
            .into_iter()
            .flatten()
            .map(toleration)
            .collect(),
    )
}

// ------------------------------------------------------------- validation

/// A validator from a string predicate; `expected` describes valid values.
fn matching(valid: fn(&str) -> bool, expected: &'static str) -> Validator {
    Arc::new(move |v| match v.as_str() {
        Some(s) if !valid(s) => Err(format!("{s:?} is not {expected}")),
        _ => Ok(()),
    })
}

/// The unit letters of a duration such as `1h30m` (digits then one of
/// `s`, `m`, `h`, repeated); `None` if it is not one.
fn duration_units(s: &str) -> Option<Vec<char>> {
    let mut units = Vec::new();
    let mut digits = 0;
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits += 1;
        } else if digits > 0 && matches!(c, 's' | 'm' | 'h') {
            units.push(c);
            digits = 0;
        } else {
            return None;
        }
    }
    (digits == 0 && !units.is_empty()).then_some(units)
}

fn is_karpenter_duration(s: &str) -> bool {
    s == "Never" || duration_units(s).is_some()
}

/// Budget durations are hours and/or minutes (`1h`, `30m`, `1h30m`),
/// optionally with the `0s` Go's formatting appends.
fn is_budget_duration(s: &str) -> bool {
    let s = s.strip_suffix("0s").unwrap_or(s);
    matches!(
        duration_units(s).as_deref(),
        Some(['h'] | ['m'] | ['h', 'm'])
    )
}

/// A node count (`5`) or a percentage of the fleet's nodes (`10%`).
fn is_budget_nodes(s: &str) -> bool {
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    match s.strip_suffix('%') {
        Some(percent) => percent == "100" || (digits(percent) && percent.len() <= 2),
        None => digits(s),
    }
}

/// A cron schedule: five fields, or a macro such as `@daily`.
fn is_cron_schedule(s: &str) -> bool {
    const MACROS: &[&str] = &[
        "annually", "yearly", "monthly", "weekly", "daily", "midnight", "hourly",
    ];
    s.strip_prefix('@').map_or_else(
        || s.split_whitespace().count() == 5,
        |name| MACROS.contains(&name),
    )
}

/// Why Karpenter refuses a NodePool label or requirement key, if it does:
/// `kubernetes.io/hostname`, and keys in one of `domains` (or a subdomain)
/// other than the capacity type.
fn reserved_key(key: &str, domains: &[&str]) -> Option<String> {
    if key == "kubernetes.io/hostname" {
        return Some("Karpenter reserves `kubernetes.io/hostname`: every node has its own.".into());
    }
    let (domain, _) = key.split_once('/')?;
    let reserved = domains
        .iter()
        .find(|d| domain == **d || domain.ends_with(&format!(".{d}")))?;
    (key != CAPACITY_TYPE_LABEL).then(|| {
        format!(
            "the label domain `{reserved}` is reserved: Karpenter and its cloud providers set these \
             labels themselves (only `{CAPACITY_TYPE_LABEL}` may be set)."
        )
    })
}

fn check_counts(config: &Value, diagnostics: &mut Diagnostics) {
    let count = config.attr("accelerator_count");
    let path = AttributePath::attr("accelerator_count");
    let (min, max) = (count.attr("min"), count.attr("max"));
    if matches!(count, Value::Object(_)) && min.is_null() && max.is_null() {
        diagnostics.error_at(
            path.clone(),
            "Empty accelerator count",
            "Set `min`, `max` or both, or leave `accelerator_count` out.",
        );
    }
    if let (Some(min), Some(max)) = (min.as_i64(), max.as_i64())
        && min > max
    {
        diagnostics.error_at(
            path.join_attr("min"),
            "Invalid accelerator count",
            format!("accelerator_count.min ({min}) is greater than accelerator_count.max ({max})."),
        );
    }
}

fn check_limits(config: &Value, diagnostics: &mut Diagnostics) {
    let limits = config.attr("limits");
    let all_null = limits
        .entries()
        .is_some_and(|entries| entries.values().all(Value::is_null));
    if matches!(limits, Value::Object(_)) && all_null {
        diagnostics.error_at(
            AttributePath::attr("limits"),
            "Empty limits",
            "Set at least one of `gpus`, `cpu` and `memory`, or leave `limits` out.",
        );
    }
}

/// Karpenter allows one taint per key and effect, across taints and startup taints.
fn check_taints(config: &Value, diagnostics: &mut Diagnostics) {
    let mut seen = BTreeSet::new();
    for list in ["taints", "startup_taints"] {
        for (index, taint) in config
            .attr(list)
            .elements()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let (Some(key), Some(effect)) =
                (taint.attr("key").as_str(), taint.attr("effect").as_str())
            else {
                continue;
            };
            if !seen.insert((key, effect)) {
                diagnostics.error_at(
                    AttributePath::attr(list).join_index(index),
                    "Duplicate taint",
                    format!(
                        "The taint {key}:{effect} appears twice; Karpenter allows one taint per key and effect across `taints` and `startup_taints`."
                    ),
                );
            }
        }
    }
}

fn check_labels(config: &Value, diagnostics: &mut Diagnostics) {
    for key in config
        .attr("labels")
        .entries()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        if let Some(why) = reserved_key(key, RESERVED_LABEL_DOMAINS) {
            diagnostics.error_at(
                AttributePath::attr("labels").join_key(key),
                "Reserved label",
                format!("`{key}`: {why}"),
            );
        }
    }
}

fn check_budgets(config: &Value, diagnostics: &mut Diagnostics) {
    let budgets = config.attr("disruption").attr("budgets");
    for (index, budget) in budgets.elements().into_iter().flatten().enumerate() {
        let (schedule, duration) = (budget.attr("schedule"), budget.attr("duration"));
        let missing = match (schedule.is_null(), duration.is_null()) {
            (false, true) => "duration",
            (true, false) => "schedule",
            _ => continue,
        };
        let budget = AttributePath::attr("disruption")
            .join_attr("budgets")
            .join_index(index);
        diagnostics.error_at(
            budget.join_attr(missing),
            "Incomplete budget",
            format!("{budget}: `schedule` and `duration` go together; set both or neither."),
        );
    }
}

fn check_requirements(config: &Value, diagnostics: &mut Diagnostics) {
    let requirements = config.attr("requirements");
    for (index, requirement) in requirements.elements().into_iter().flatten().enumerate() {
        let path = AttributePath::attr("requirements").join_index(index);
        if let Some(key) = requirement.attr("key").as_str()
            && let Some(why) = reserved_key(key, RESERVED_REQUIREMENT_DOMAINS)
        {
            diagnostics.error_at(
                path.join_attr("key"),
                "Reserved requirement key",
                format!("{path}: `{key}`: {why}"),
            );
        }
        let values = requirement.attr("values");
        let Some(operator) = requirement.attr("operator").as_str() else {
            continue;
        };
        if values.is_unknown() {
            continue;
        }
        let values: Vec<Option<&str>> = values
            .elements()
            .into_iter()
            .flatten()
            .map(Value::as_str)
            .collect();
        let problem = match operator {
            "In" if values.is_empty() => Some("`In` needs at least one value."),
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                Some("`Exists` and `DoesNotExist` take no values.")
            }
            "Gt" | "Lt" | "Gte" | "Lte" => match values.as_slice() {
                [Some(v)] if v.parse::<u64>().is_ok() => None,
                [None] => None,
                _ => Some("Comparisons take exactly one value, a whole number of zero or more."),
            },
            _ => None,
        };
        if let Some(problem) = problem {
            diagnostics.error_at(
                path.join_attr("values"),
                "Invalid requirement",
                format!("{path}: {problem}"),
            );
        }
        if let Some(min) = requirement.attr("min_values").as_i64()
            && operator == "In"
            && usize::try_from(min).is_ok_and(|min| min > values.len())
        {
            diagnostics.error_at(
                path.join_attr("min_values"),
                "Invalid requirement",
                format!(
                    "{path}: min_values is {min} but only {} values are listed.",
                    values.len()
                ),
            );
        }
    }
}

fn default_budgets() -> Value {
    let budget = [
        ("nodes", Value::string(DEFAULT_BUDGET_NODES)),
        ("schedule", Value::Null),
        ("duration", Value::Null),
        ("reasons", Value::Null),
    ];
    Value::List(vec![Value::Object(
        budget.map(|(k, v)| (k.to_string(), v)).into(),
    )])
}

fn default_disruption() -> Value {
    let disruption = [
        (
            "consolidation_policy",
            Value::string(DEFAULT_CONSOLIDATION_POLICY),
        ),
        (
            "consolidate_after",
            Value::string(DEFAULT_CONSOLIDATE_AFTER),
        ),
        ("budgets", default_budgets()),
    ];
    Value::Object(disruption.map(|(k, v)| (k.to_string(), v)).into())
}

fn taint_attrs() -> Vec<Attr> {
    let taint_value = matching(
        |v| v.is_empty() || check_qualified_name(v).is_ok(),
        "a valid taint value: letters, digits, '-', '_' or '.', at most 63, starting and ending with a letter or digit",
    );
    vec![
        Attr::string("key").required().validate(qualified_name()),
        Attr::string("value").optional().validate(taint_value),
        Attr::string("effect")
            .required()
            .validate(one_of(EFFECTS))
            .describe("`NoSchedule`, `PreferNoSchedule` or `NoExecute`."),
    ]
}

// --------------------------------------------------------------- resource

impl Fleet {
    async fn node_pools(client: &Client) -> Result<Api<DynamicObject>, Diagnostics> {
        Ok(Api::all_with(
            client.kubernetes.client().await?,
            &node_pool_resource(),
        ))
    }

    /// The planned state, its constraints and the NodePool spec they make.
    fn planned_spec(
        planned: &Value,
        provider: LabelScheme,
    ) -> Result<(State, Constraints, NodePoolSpec), Diagnostics> {
        let (state, constraints): (State, Constraints) = (typed(planned)?, typed(planned)?);
        let scheme = effective_scheme(state.label_scheme.as_deref(), provider);
        let spec = state.spec(constraints.requirements(scheme)?);
        Ok((state, constraints, spec))
    }

    async fn apply_state(
        &self,
        client: &Client,
        planned: &Value,
        action: &str,
    ) -> Result<Stored, Diagnostics> {
        let (state, constraints, spec) = Self::planned_spec(planned, client.label_scheme)?;
        let api = Self::node_pools(client).await?;
        let action = format!("{action} NodePool {:?}", state.name);
        let live = apply(&api, &state.name, &node_pool(&state.name, &spec))
            .await
            .map_err(|e| client.kubernetes.api_error(&action, KIND, &e))?;
        Ok(self
            .state_from(&live, &state, &constraints, false, client.label_scheme)?
            .into())
    }

    /// State from a live NodePool; the prior state says which optional
    /// fields are ours and how the user spelled equivalent values.
    fn state_from(
        &self,
        live: &DynamicObject,
        prior: &State,
        prior_constraints: &Constraints,
        importing: bool,
        provider: LabelScheme,
    ) -> Result<Value, Diagnostics> {
        let name = live.metadata.name.clone().unwrap_or_default();
        let spec: NodePoolSpec =
            serde_json::from_value(live.data["spec"].clone()).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    "Unexpected NodePool",
                    format!("NodePool {name:?} does not look like a karpenter.sh/v1 NodePool: {e}"),
                ))
            })?;
        let label_scheme = if importing {
            imported_label_scheme(&spec, provider)
        } else {
            prior.label_scheme.clone()
        };
        let scheme = effective_scheme(label_scheme.as_deref(), provider);
        let constraints = Constraints::from_requirements(
            &spec.template.spec.requirements,
            scheme,
            prior_constraints,
        );
        let state = State::from_spec(name, &spec, prior, importing, label_scheme);
        self.state_value(&state, &constraints)
    }

    fn state_value(&self, state: &State, constraints: &Constraints) -> Result<Value, Diagnostics> {
        let ty = self.schema().value_type();
        let mut value = untyped(state, &ty)?;
        let constraint_values = untyped(constraints, &ty)?;
        for attr in CONSTRAINT_ATTRS {
            set(&mut value, attr, constraint_values.attr(attr).clone());
        }
        let selector = node_selector(value.attr("name"));
        set(&mut value, "node_selector", selector);
        let tolerations = tolerations(value.attr("taints"));
        set(&mut value, "tolerations", tolerations);
        Ok(value)
    }
}

#[async_trait]
impl Resource<Client> for Fleet {
    fn name(&self) -> &'static str {
        "fleet"
    }

    fn schema(&self) -> ObjectSchema {
        let set_of = |name, validator: Validator| {
            Attr::string_set(name)
                .optional()
                .validate(not_empty())
                .validate(each(validator))
        };
        ObjectSchema::new(
            "A GPU fleet: a Karpenter NodePool whose nodes have the GPUs, taints and labels one kind of work needs. Workloads use `node_selector` and `tolerations` to land on it.",
            vec![
                Attr::string("id").computed().use_state_for_unknown().describe("The NodePool name."),
                Attr::string("name")
                    .required()
                    .requires_replace()
                    .validate(dns1123_subdomain())
                    .describe("NodePool name (at most 63 characters: nodes carry it in the `karpenter.sh/nodepool` label)."),
                set_of("accelerators", catalog::known_name())
                    .describe("GPU models the nodes may have, e.g. `[\"H100\"]`: names from the accelerator catalog (see `gpufleet_accelerators`), in any case."),
                Attr::nested(
                    "accelerator_count",
                    Nesting::Single,
                    vec![
                        Attr::number("min").optional().validate(integer_between(1, MAX_GPUS_PER_NODE, "")),
                        Attr::number("max").optional().validate(integer_between(1, MAX_GPUS_PER_NODE, "")),
                    ],
                )
                .optional()
                .describe("GPUs per node, e.g. `{ min = 8, max = 8 }`."),
                Attr::number("accelerator_memory_min_gib")
                    .optional()
                    .validate(integer_between(1, 10_000, ""))
                    .describe("Least memory per GPU in GiB, as NVIDIA states it (an L4 has 24). Not with the azure label scheme."),
                set_of("capacity_types", one_of(CAPACITY_TYPES))
                    .describe("`on-demand`, `spot` and/or `reserved`."),
                set_of("instance_families", label_value())
                    .describe("Instance families, e.g. `[\"p5\"]` (the scheme's instance family label)."),
                set_of("providers", label_value())
                    .describe("Clouds, as `cfke.io/provider` values (`aws`, `gcp`, `hetzner`); cfke label scheme only."),
                set_of("zones", label_value()).describe("Zones (`topology.kubernetes.io/zone`)."),
                set_of("architectures", one_of(ARCHITECTURES)).describe("`amd64` and/or `arm64`."),
                Attr::nested(
                    "node_class",
                    Nesting::Single,
                    vec![
                        Attr::string("group").required().requires_replace().validate(not_empty())
                            .describe("e.g. `karpenter.k8s.aws`. Immutable in Karpenter: a change replaces the fleet."),
                        Attr::string("kind").required().requires_replace().validate(not_empty())
                            .describe("e.g. `EC2NodeClass`. Immutable in Karpenter: a change replaces the fleet."),
                        Attr::string("name").required().validate(not_empty()),
                    ],
                )
                .required()
                .describe("The cloud-specific node class the nodes are built from."),
                Attr::nested("taints", Nesting::List, taint_attrs())
                    .optional()
                    .describe("Taints on every node; only pods tolerating them (see `tolerations`) land there."),
                Attr::nested("startup_taints", Nesting::List, taint_attrs())
                    .optional()
                    .describe("Taints something removes once a node is ready (e.g. a driver installer); pods need not tolerate them."),
                Attr::string_map("labels")
                    .optional()
                    .validate(labels())
                    .describe("Labels on every node. Karpenter's domains are reserved."),
                Attr::nested(
                    "limits",
                    Nesting::Single,
                    vec![
                        Attr::number("gpus")
                            .optional()
                            .validate(integer_between(0, i64::from(i32::MAX), " (a limit cannot be negative)"))
                            .describe("Most GPUs (`nvidia.com/gpu`) across the fleet's nodes."),
                        Attr::string("cpu").optional().validate(non_negative_quantity())
                            .describe("Most CPU across the fleet's nodes, a quantity such as `1000`."),
                        Attr::string("memory").optional().validate(non_negative_quantity())
                            .describe("Most memory across the fleet's nodes, a quantity such as `4000Gi`."),
                    ],
                )
                .optional()
                .describe("Caps on the capacity the fleet may launch."),
                Attr::nested(
                    "disruption",
                    Nesting::Single,
                    vec![
                        Attr::string("consolidation_policy")
                            .default(Value::string(DEFAULT_CONSOLIDATION_POLICY))
                            .validate(one_of(CONSOLIDATION_POLICIES))
                            .describe("`WhenEmptyOrUnderutilized` (default), `WhenEmpty` or `Balanced`."),
                        Attr::string("consolidate_after")
                            .default(Value::string(DEFAULT_CONSOLIDATE_AFTER))
                            .validate(matching(is_karpenter_duration, "a duration such as \"30s\" or \"1h30m\", or \"Never\""))
                            .describe("How long a node must be consolidatable before Karpenter acts; default `0s`."),
                        Attr::nested(
                            "budgets",
                            Nesting::List,
                            vec![
                                Attr::string("nodes")
                                    .required()
                                    .validate(matching(is_budget_nodes, "a node count such as \"5\" or a percentage such as \"10%\""))
                                    .describe("Most nodes disrupted at once: a count or a percentage."),
                                Attr::string("schedule")
                                    .optional()
                                    .validate(matching(is_cron_schedule, "a cron schedule (five fields) or a macro such as \"@daily\""))
                                    .describe("When the budget starts to apply (cron, UTC); with `duration`."),
                                Attr::string("duration")
                                    .optional()
                                    .validate(matching(is_budget_duration, "a duration in hours and minutes such as \"1h30m\""))
                                    .describe("How long the budget applies after each `schedule` hit."),
                                Attr::string_set("reasons")
                                    .optional()
                                    .validate(each(one_of(DISRUPTION_REASONS)))
                                    .describe("Disruption reasons the budget limits: `Underutilized`, `Empty`, `Drifted`; all when unset."),
                            ],
                        )
                        .default(default_budgets())
                        .describe("Default: `[{ nodes = \"10%\" }]`."),
                    ],
                )
                .default(default_disruption())
                .describe("When Karpenter may remove or replace nodes; Karpenter's defaults when unset."),
                Attr::number("weight")
                    .optional()
                    .validate(integer_between(1, 100, ""))
                    .describe("Priority among NodePools that fit a pod, 1 to 100; higher first."),
                Attr::string("expire_after")
                    .default(Value::string(DEFAULT_EXPIRE_AFTER))
                    .validate(matching(is_karpenter_duration, "a duration such as \"720h\", or \"Never\""))
                    .describe("Node lifetime before replacement; default `720h`. A change rolls the fleet's nodes."),
                Attr::nested(
                    "requirements",
                    Nesting::List,
                    vec![
                        Attr::string("key").required().validate(qualified_name()),
                        Attr::string("operator").required().validate(one_of(OPERATORS)),
                        Attr::string_list("values").optional().validate(each(label_value())),
                        Attr::number("min_values").optional().validate(integer_between(1, 50, "")),
                    ],
                )
                .optional()
                .describe("More node requirements, added after the ones the attributes above generate."),
                Attr::string("label_scheme")
                    .optional()
                    .validate(one_of(LABEL_SCHEMES))
                    .describe("Node labels GPU constraints map to: `cfke`, `aws` or `azure`; the provider's `label_scheme` when unset."),
                Attr::string_map("node_selector")
                    .computed()
                    .describe("Node selector for workloads: `{ \"karpenter.sh/nodepool\" = name }`."),
                Attr::nested(
                    "tolerations",
                    Nesting::List,
                    ["key", "operator", "value", "effect"]
                        .map(|name| Attr::string(name).computed())
                        .into(),
                )
                .computed()
                .describe("Tolerations for workloads, one per taint."),
            ],
        )
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        if let Some(name) = config.attr("name").as_str()
            && name.len() > 63
        {
            diagnostics.error_at(
                AttributePath::attr("name"),
                "Name too long",
                format!(
                    "{name:?} has {} characters; Karpenter labels each node with its NodePool's name, and label values hold at most 63.",
                    name.len()
                ),
            );
        }
        check_counts(config, diagnostics);
        check_limits(config, diagnostics);
        check_taints(config, diagnostics);
        check_labels(config, diagnostics);
        check_budgets(config, diagnostics);
        check_requirements(config, diagnostics);
    }

    fn modify_plan(
        &self,
        client: &Client,
        plan: &mut Plan,
        _prior: &Value,
        config: &Value,
        diagnostics: &mut Diagnostics,
    ) {
        let name = config.attr("name");
        set(&mut plan.planned, "id", name.clone());
        set(&mut plan.planned, "node_selector", node_selector(name));
        set(
            &mut plan.planned,
            "tolerations",
            tolerations(config.attr("taints")),
        );
        // What the label scheme cannot express fails the plan, not the apply.
        let setting = config.attr("label_scheme");
        let constraints = Value::Object(
            CONSTRAINT_ATTRS
                .iter()
                .map(|attr| (attr.to_string(), config.attr(attr).clone()))
                .collect(),
        );
        if !setting.is_wholly_known() || !constraints.is_wholly_known() {
            return;
        }
        let scheme = effective_scheme(setting.as_str(), client.label_scheme);
        if let Err(d) = typed::<Constraints>(&constraints).and_then(|c| c.requirements(scheme)) {
            diagnostics.extend(d);
        }
    }

    async fn create(&self, client: &Client, planned: &Value) -> Result<Stored, Diagnostics> {
        let name = planned.attr("name").as_str().unwrap_or_default();
        let api = Self::node_pools(client).await?;
        client
            .kubernetes
            .ensure_absent(&api, name, &format!("NodePool {name:?}"), KIND)
            .await?;
        self.apply_state(client, planned, "create").await
    }

    async fn read(
        &self,
        client: &Client,
        current: &Value,
        private: &[u8],
    ) -> Result<Option<Stored>, Diagnostics> {
        let (prior, prior_constraints): (State, Constraints) = (typed(current)?, typed(current)?);
        let api = Self::node_pools(client).await?;
        let object = format!("NodePool {:?}", prior.name);
        let live = client
            .kubernetes
            .read(&api, &prior.name, &object, KIND)
            .await?;
        let Some(live) = live else { return Ok(None) };
        let state = self.state_from(
            &live,
            &prior,
            &prior_constraints,
            importing(private),
            client.label_scheme,
        )?;
        Ok(Some(state.into()))
    }

    async fn update(
        &self,
        client: &Client,
        _prior: &Value,
        planned: &Value,
        _private: &[u8],
    ) -> Result<Stored, Diagnostics> {
        self.apply_state(client, planned, "update").await
    }

    async fn delete(
        &self,
        client: &Client,
        prior: &Value,
        _private: &[u8],
    ) -> Result<(), Diagnostics> {
        let name = prior.attr("name").as_str().unwrap_or_default();
        let api = Self::node_pools(client).await?;
        client
            .kubernetes
            .remove(&api, name, &format!("NodePool {name:?}"), KIND)
            .await
    }

    fn import(&self, id: &str) -> Result<Stored, Diagnostics> {
        check_import_name(id, "NodePool name")?;
        let state = State {
            id: Some(id.to_string()),
            name: id.to_string(),
            ..Default::default()
        };
        Ok(Stored {
            state: self.state_value(&state, &Constraints::default())?,
            private: IMPORTING.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::schema::AttrKind;
    use crate::framework::{plan, validate_config};
    use crate::protocol::codec::from_json;
    use serde_json::json;

    const NODE_CLASS: fn() -> serde_json::Value =
        || json!({"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"});

    fn training() -> serde_json::Value {
        json!({
            "name": "training",
            "accelerators": ["H100"],
            "accelerator_count": {"min": 8, "max": 8},
            "node_class": NODE_CLASS(),
            "taints": [{"key": "workload", "value": "training", "effect": "NoSchedule"}],
            "limits": {"gpus": 64},
        })
    }

    fn inference() -> serde_json::Value {
        json!({
            "name": "inference",
            "accelerators": ["L4"],
            "node_class": NODE_CLASS(),
            "taints": [{"key": "workload", "value": "inference", "effect": "NoSchedule"}],
        })
    }

    /// Everything set, in the spellings a user might choose.
    fn everything() -> serde_json::Value {
        json!({
            "name": "everything",
            "accelerators": ["a100-80gb", "H100"],
            "accelerator_count": {"min": 1},
            "accelerator_memory_min_gib": 80,
            "capacity_types": ["spot", "on-demand"],
            "instance_families": ["p5", "p4d"],
            "zones": ["eu-central-1a"],
            "architectures": ["amd64"],
            "node_class": NODE_CLASS(),
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            "startup_taints": [{"key": "driver", "value": "installing", "effect": "NoExecute"}],
            "labels": {"team": "ml", "karpenter.sh/capacity-type": "spot"},
            "limits": {"gpus": 16, "cpu": "1000", "memory": "4000Gi"},
            "disruption": {"consolidation_policy": "WhenEmpty", "budgets": [
                {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted"]},
                {"nodes": "20%"},
            ]},
            "weight": 50,
            "expire_after": "Never",
            "requirements": [
                {"key": "example.com/rack", "operator": "NotIn", "values": ["r1"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "Exists"},
            ],
        })
    }

    fn with(mut base: serde_json::Value, changes: serde_json::Value) -> serde_json::Value {
        for (key, value) in changes.as_object().unwrap() {
            base[key] = value.clone();
        }
        base
    }

    fn value(config: serde_json::Value) -> Value {
        from_json(&config, &Fleet.schema().value_type(), "").unwrap()
    }

    /// Terraform's proposed new state: configured values, and prior values
    /// of computed attributes the configuration leaves unset.
    fn proposed(attrs: &[Attr], prior: &Value, config: &Value) -> Value {
        Value::Object(
            attrs
                .iter()
                .map(|attr| {
                    let (configured, prior) = (config.attr(attr.name), prior.attr(attr.name));
                    let value = match &attr.kind {
                        _ if configured.is_null() && attr.flags.computed => prior.clone(),
                        AttrKind::Nested(Nesting::Single, nested) if !configured.is_null() => {
                            proposed(nested, prior, configured)
                        }
                        _ => configured.clone(),
                    };
                    (attr.name.to_string(), value)
                })
                .collect(),
        )
    }

    fn plan_for(prior: &Value, config: &Value, scheme: LabelScheme) -> (Plan, Diagnostics) {
        let schema = Fleet.schema();
        let mut planned = plan::plan(
            &schema,
            prior,
            &proposed(&schema.attrs, prior, config),
            config,
        );
        let mut diagnostics = Diagnostics::default();
        Fleet.modify_plan(
            &Client::offline(scheme),
            &mut planned,
            prior,
            config,
            &mut diagnostics,
        );
        (planned, diagnostics)
    }

    fn planned(config: serde_json::Value, scheme: LabelScheme) -> Value {
        let (plan, diagnostics) = plan_for(&Value::Null, &value(config), scheme);
        assert!(!diagnostics.has_errors(), "{diagnostics:?}");
        plan.planned
    }

    /// (path, detail) of every error validation and planning report.
    fn errors(config: serde_json::Value, scheme: LabelScheme) -> Vec<(String, String)> {
        let config = value(config);
        let mut d = validate_config(&Fleet.schema().attrs, &config);
        Fleet.validate(&config, &mut d);
        if !d.has_errors() {
            d = plan_for(&Value::Null, &config, scheme).1;
        }
        d.located()
    }

    fn error_at(config: serde_json::Value, scheme: LabelScheme) -> (String, String) {
        let found = errors(config, scheme);
        assert_eq!(found.len(), 1, "{found:#?}");
        found.into_iter().next().unwrap()
    }

    /// What the API server answers an apply with: the object as sent, plus
    /// fields of its own.
    fn served(planned: &Value, scheme: LabelScheme) -> serde_json::Value {
        let (state, _, spec) = Fleet::planned_spec(planned, scheme).unwrap();
        let mut object = serde_json::to_value(node_pool(&state.name, &spec)).unwrap();
        object["metadata"]["uid"] = json!("7c1f0e7e");
        object["metadata"]["generation"] = json!(1);
        object["status"] = json!({"conditions": [{"type": "Ready", "status": "Unknown"}]});
        object
    }

    fn read(
        live: &serde_json::Value,
        prior: &Value,
        importing: bool,
        scheme: LabelScheme,
    ) -> Value {
        let live: DynamicObject = serde_json::from_value(live.clone()).unwrap();
        let (state, constraints) = (typed(prior).unwrap(), typed(prior).unwrap());
        Fleet
            .state_from(&live, &state, &constraints, importing, scheme)
            .unwrap()
    }

    fn import(live: &serde_json::Value, scheme: LabelScheme) -> Value {
        let name = live["metadata"]["name"].as_str().unwrap();
        let skeleton = Fleet.import(name).unwrap();
        assert_eq!(skeleton.private, IMPORTING);
        read(live, &skeleton.state, true, scheme)
    }

    /// Equality as Terraform sees it (sets in any order).
    fn assert_same(found: &Value, expected: &Value, what: &str) {
        assert!(
            found.semantically_eq(expected),
            "{what}:\n found {}\n expected {}",
            found.to_json(),
            expected.to_json()
        );
    }

    fn requirements(planned: &Value, scheme: LabelScheme) -> serde_json::Value {
        served(planned, scheme)["spec"]["template"]["spec"]["requirements"].clone()
    }

    #[test]
    fn the_training_fleet_maps_to_a_node_pool() {
        let planned = planned(training(), LabelScheme::Cfke);
        let mut object = served(&planned, LabelScheme::Cfke);
        object["metadata"] = json!({"name": object["metadata"]["name"]});
        object.as_object_mut().unwrap().remove("status");
        assert_eq!(
            object,
            json!({
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": "training"},
                "spec": {
                    "template": {"spec": {
                        "nodeClassRef": NODE_CLASS(),
                        "requirements": [
                            {"key": "cfke.io/accelerator-name", "operator": "In", "values": ["H100"]},
                            {"key": "cfke.io/accelerator-count", "operator": "Gte", "values": ["8"]},
                            {"key": "cfke.io/accelerator-count", "operator": "Lte", "values": ["8"]},
                        ],
                        "taints": [{"key": "workload", "value": "training", "effect": "NoSchedule"}],
                        "expireAfter": "720h",
                    }},
                    "disruption": {
                        "consolidationPolicy": "WhenEmptyOrUnderutilized",
                        "consolidateAfter": "0s",
                        "budgets": [{"nodes": "10%"}],
                    },
                    "limits": {"nvidia.com/gpu": "64"},
                },
            })
        );
    }

    #[test]
    fn each_label_scheme_has_its_own_keys_values_and_units() {
        let training_requirements = |scheme| requirements(&planned(training(), scheme), scheme);
        assert_eq!(
            training_requirements(LabelScheme::Aws),
            json!([
                {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]},
                {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["8"]},
                {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lte", "values": ["8"]},
            ])
        );
        assert_eq!(
            training_requirements(LabelScheme::Azure),
            json!([
                {"key": "karpenter.azure.com/sku-gpu-name", "operator": "In", "values": ["H100"]},
                {"key": "karpenter.azure.com/sku-gpu-count", "operator": "Gte", "values": ["8"]},
                {"key": "karpenter.azure.com/sku-gpu-count", "operator": "Lte", "values": ["8"]},
            ])
        );
        let inference_requirements = |scheme| requirements(&planned(inference(), scheme), scheme);
        assert_eq!(
            inference_requirements(LabelScheme::Cfke),
            json!([{"key": "cfke.io/accelerator-name", "operator": "In", "values": ["L4"]}])
        );
        assert_eq!(
            inference_requirements(LabelScheme::Aws),
            json!([{"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]}])
        );
        // Memory: GiB on cfke; on AWS the MiB EC2 reports for a 24 GB L4.
        let memory = json!({"accelerator_memory_min_gib": 24});
        let with_memory = |scheme| {
            requirements(&planned(with(inference(), memory.clone()), scheme), scheme)[1].clone()
        };
        assert_eq!(
            with_memory(LabelScheme::Cfke),
            json!({"key": "cfke.io/accelerator-memory", "operator": "Gte", "values": ["24"]})
        );
        assert_eq!(
            with_memory(LabelScheme::Aws),
            json!({"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Gte", "values": ["22888"]})
        );
        // A fleet's own scheme wins over the provider's.
        let own = planned(
            with(inference(), json!({"label_scheme": "aws"})),
            LabelScheme::Cfke,
        );
        assert_eq!(
            requirements(&own, LabelScheme::Cfke)[0]["values"],
            json!(["l4"])
        );
    }

    #[test]
    fn everything_maps_in_a_fixed_order_with_raw_requirements_last() {
        let planned = planned(everything(), LabelScheme::Cfke);
        let object = served(&planned, LabelScheme::Cfke);
        let keys: Vec<(&str, &str)> = object["spec"]["template"]["spec"]["requirements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["key"].as_str().unwrap(), r["operator"].as_str().unwrap()))
            .collect();
        assert_eq!(
            keys,
            [
                ("cfke.io/accelerator-name", "In"),
                ("cfke.io/accelerator-count", "Gte"),
                ("cfke.io/accelerator-memory", "Gte"),
                ("karpenter.sh/capacity-type", "In"),
                ("cfke.io/instance-family", "In"),
                ("topology.kubernetes.io/zone", "In"),
                ("kubernetes.io/arch", "In"),
                ("example.com/rack", "NotIn"),
                ("node.kubernetes.io/instance-type", "Exists"),
            ]
        );
        let spec = &object["spec"];
        assert_eq!(
            spec["template"]["spec"]["requirements"][0]["values"],
            json!(["A100", "H100"])
        );
        assert_eq!(spec["template"]["metadata"]["labels"]["team"], "ml");
        assert_eq!(
            spec["limits"],
            json!({"nvidia.com/gpu": "16", "cpu": "1000", "memory": "4000Gi"})
        );
        assert_eq!(
            spec["disruption"],
            json!({
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "0s",
                "budgets": [
                    {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted"]},
                    {"nodes": "20%"},
                ],
            })
        );
        assert_eq!(spec["weight"], 50);
        assert_eq!(spec["template"]["spec"]["expireAfter"], "Never");
        assert_eq!(
            spec["template"]["spec"]["startupTaints"],
            json!([{"key": "driver", "value": "installing", "effect": "NoExecute"}])
        );
    }

    #[test]
    fn plans_are_fully_known_and_carry_workload_settings() {
        let planned = planned(training(), LabelScheme::Cfke);
        assert!(planned.is_wholly_known(), "{planned:?}");
        assert_eq!(planned.attr("id"), &Value::string("training"));
        assert_eq!(
            planned.attr("node_selector").to_json(),
            json!({"karpenter.sh/nodepool": "training"})
        );
        assert_eq!(
            planned.attr("tolerations").to_json(),
            json!([{"key": "workload", "operator": "Equal", "value": "training", "effect": "NoSchedule"}])
        );
        assert_eq!(planned.attr("expire_after"), &Value::string("720h"));
        assert_eq!(
            planned.attr("disruption").to_json()["budgets"],
            json!([{
                "nodes": "10%", "schedule": null, "duration": null, "reasons": null
            }])
        );
        let everything = self::planned(everything(), LabelScheme::Cfke);
        assert_eq!(
            everything.attr("tolerations").to_json(),
            json!([{"key": "nvidia.com/gpu", "operator": "Exists", "value": null, "effect": "NoSchedule"}])
        );
    }

    #[test]
    fn unknown_values_do_not_block_planning() {
        let mut config = value(with(training(), json!({"accelerators": ["A100-80GB"]})));
        let class = config.attr_mut("node_class").unwrap();
        set(class, "name", Value::UNKNOWN);
        // An unknown constraint postpones the scheme check to apply.
        set(&mut config, "accelerators", Value::UNKNOWN);
        let (plan, diagnostics) = plan_for(&Value::Null, &config, LabelScheme::Cfke);
        assert!(!diagnostics.has_errors(), "{diagnostics:?}");
        assert!(plan.planned.attr("tolerations").is_wholly_known());
        let mut validation = Diagnostics::default();
        Fleet.validate(&config, &mut validation);
        assert!(validation.0.is_empty(), "{validation:?}");
    }

    #[test]
    fn after_apply_a_second_plan_is_empty() {
        let cases = [
            (training(), LabelScheme::Cfke),
            (training(), LabelScheme::Aws),
            (training(), LabelScheme::Azure),
            (inference(), LabelScheme::Cfke),
            (inference(), LabelScheme::Aws),
            (everything(), LabelScheme::Cfke),
            (
                with(
                    everything(),
                    json!({"label_scheme": "aws", "accelerators": ["H100"]}),
                ),
                LabelScheme::Cfke,
            ),
        ];
        for (config, scheme) in cases {
            let planned = planned(config.clone(), scheme);
            let state = read(&served(&planned, scheme), &planned, false, scheme);
            assert_same(
                &state,
                &planned,
                &format!("apply result vs plan ({scheme})"),
            );
            let (again, diagnostics) = plan_for(&state, &value(config), scheme);
            assert!(!diagnostics.has_errors(), "{diagnostics:?}");
            assert_same(&again.planned, &state, &format!("second plan ({scheme})"));
            assert!(again.requires_replace.is_empty());
        }
    }

    #[test]
    fn import_gives_an_empty_plan() {
        let cases = [
            (training(), LabelScheme::Cfke, LabelScheme::Cfke),
            (inference(), LabelScheme::Aws, LabelScheme::Aws),
            (training(), LabelScheme::Azure, LabelScheme::Azure),
            (
                with(everything(), json!({"accelerators": ["A100-80GB", "H100"]})),
                LabelScheme::Cfke,
                LabelScheme::Cfke,
            ),
            // Written with another scheme than the provider's: import finds it.
            (
                with(inference(), json!({"label_scheme": "aws"})),
                LabelScheme::Cfke,
                LabelScheme::Cfke,
            ),
        ];
        for (config, scheme, provider) in cases {
            let live = served(&planned(config.clone(), scheme), scheme);
            let imported = import(&live, provider);
            let (plan, diagnostics) = plan_for(&imported, &value(config), provider);
            assert!(!diagnostics.has_errors(), "{diagnostics:?}");
            assert_same(&plan.planned, &imported, &format!("import plan ({scheme})"));
            assert!(plan.requires_replace.is_empty());
        }
    }

    #[test]
    fn drift_on_owned_fields_shows_and_foreign_fields_do_not() {
        let planned = planned(training(), LabelScheme::Cfke);
        let mut live = served(&planned, LabelScheme::Cfke);
        let spec = &mut live["spec"];
        spec["template"]["spec"]["requirements"][0]["values"] = json!(["H200"]);
        spec["template"]["spec"]["taints"][0]["effect"] = json!("NoExecute");
        spec["disruption"]["consolidateAfter"] = json!("5m");
        spec["limits"] = json!({"nvidia.com/gpu": 128, "nodes": "10"});
        spec["template"]["metadata"] = json!({"annotations": {"someone": "else"}});
        let state = read(&live, &planned, false, LabelScheme::Cfke);
        assert_eq!(state.attr("accelerators").to_json(), json!(["H200"]));
        assert_eq!(state.attr("taints").to_json()[0]["effect"], "NoExecute");
        assert_eq!(
            state.attr("disruption").attr("consolidate_after"),
            &Value::string("5m")
        );
        assert_eq!(
            state.attr("limits").to_json(),
            json!({"gpus": 128, "cpu": null, "memory": null})
        );
        assert!(state.attr("labels").is_null());
        let (plan, _) = plan_for(&state, &value(training()), LabelScheme::Cfke);
        assert_same(
            &plan.planned,
            &planned,
            "the plan restores the configuration",
        );
        // A requirement that is no longer what an attribute generates, and one added behind
        // Terraform's back, show as raw requirements.
        let mut live = served(&planned, LabelScheme::Cfke);
        let requirements = &mut live["spec"]["template"]["spec"]["requirements"];
        requirements[0]["values"] = json!(["X999"]);
        requirements
            .as_array_mut()
            .unwrap()
            .push(json!({"key": "zone", "operator": "Exists"}));
        let state = read(&live, &planned, false, LabelScheme::Cfke);
        assert!(state.attr("accelerators").is_null());
        assert_eq!(
            state.attr("requirements").to_json(),
            json!([
                {"key": "cfke.io/accelerator-name", "operator": "In", "values": ["X999"], "min_values": null},
                {"key": "zone", "operator": "Exists", "values": null, "min_values": null},
            ])
        );
    }

    #[test]
    fn equivalent_spellings_are_kept() {
        let config = with(training(), json!({"accelerators": ["nvidia h100"]}));
        let planned = planned(config, LabelScheme::Aws);
        let state = read(
            &served(&planned, LabelScheme::Aws),
            &planned,
            false,
            LabelScheme::Aws,
        );
        assert_eq!(state.attr("accelerators").to_json(), json!(["nvidia h100"]));
    }

    #[test]
    fn unknown_accelerators_get_a_suggestion() {
        let (path, detail) = error_at(
            with(training(), json!({"accelerators": ["H10"]})),
            LabelScheme::Cfke,
        );
        assert_eq!(path, "accelerators");
        assert!(detail.contains("did you mean `H100`?"), "{detail}");
    }

    #[test]
    fn bad_inputs_are_reported_at_their_attribute() {
        let cases = [
            (
                json!({"labels": {"karpenter.sh/nodepool": "x"}}),
                r#"labels["karpenter.sh/nodepool"]"#,
            ),
            (
                json!({"labels": {"kubernetes.io/hostname": "x"}}),
                r#"labels["kubernetes.io/hostname"]"#,
            ),
            (
                json!({"labels": {"karpenter.k8s.aws/instance-gpu-name": "h100"}}),
                r#"labels["karpenter.k8s.aws/instance-gpu-name"]"#,
            ),
            (json!({"labels": {"bad key": "x"}}), "labels"),
            (
                json!({"taints": [{"key": "workload", "effect": "NoScheduled"}]}),
                "taints[0].effect",
            ),
            (
                json!({"taints": [{"key": "-bad", "effect": "NoSchedule"}]}),
                "taints[0].key",
            ),
            (
                json!({"startup_taints": [{"key": "workload", "value": "other", "effect": "NoSchedule"}]}),
                "startup_taints[0]",
            ),
            (
                json!({"accelerator_count": {"min": 16, "max": 8}}),
                "accelerator_count.min",
            ),
            (json!({"accelerator_count": {}}), "accelerator_count"),
            (
                json!({"accelerator_count": {"min": 0}}),
                "accelerator_count.min",
            ),
            (json!({"limits": {"gpus": -1}}), "limits.gpus"),
            (json!({"limits": {"cpu": "-4"}}), "limits.cpu"),
            (json!({"limits": {"memory": "lots"}}), "limits.memory"),
            (json!({"limits": {}}), "limits"),
            (json!({"capacity_types": ["cheap"]}), "capacity_types"),
            (json!({"capacity_types": []}), "capacity_types"),
            (json!({"architectures": ["x86"]}), "architectures"),
            (json!({"weight": 101}), "weight"),
            (json!({"expire_after": "30d"}), "expire_after"),
            (json!({"label_scheme": "gcp"}), "label_scheme"),
            (json!({"name": "a".repeat(64)}), "name"),
            (json!({"name": "Training"}), "name"),
            (
                json!({"node_class": {"group": "", "kind": "K", "name": "n"}}),
                "node_class.group",
            ),
            (
                json!({"disruption": {"budgets": [{"nodes": "10%", "schedule": "@daily"}]}}),
                "disruption.budgets[0].duration",
            ),
            (
                json!({"disruption": {"budgets": [{"nodes": "110%"}]}}),
                "disruption.budgets[0].nodes",
            ),
            (
                json!({"disruption": {"consolidation_policy": "Sometimes"}}),
                "disruption.consolidation_policy",
            ),
            (
                json!({"requirements": [{"key": "karpenter.sh/nodepool", "operator": "Exists"}]}),
                "requirements[0].key",
            ),
            (
                json!({"requirements": [{"key": "k", "operator": "In"}]}),
                "requirements[0].values",
            ),
            (
                json!({"requirements": [{"key": "k", "operator": "Gt", "values": ["1.5"]}]}),
                "requirements[0].values",
            ),
            (
                json!({"requirements": [{"key": "k", "operator": "Exists", "values": ["a"]}]}),
                "requirements[0].values",
            ),
            (
                json!({"requirements": [{"key": "k", "operator": "In", "values": ["a"], "min_values": 2}]}),
                "requirements[0].min_values",
            ),
            (
                json!({"requirements": [{"key": "k", "operator": "Like"}]}),
                "requirements[0].operator",
            ),
        ];
        for (change, path) in cases {
            let found = errors(with(training(), change.clone()), LabelScheme::Cfke);
            let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
            assert_eq!(paths, [path], "{change}: {found:#?}");
        }
        assert!(
            errors(
                with(
                    training(),
                    json!({"labels": {"karpenter.sh/capacity-type": "spot"}})
                ),
                LabelScheme::Cfke
            )
            .is_empty()
        );
    }

    #[test]
    fn what_a_label_scheme_cannot_express_fails_the_plan() {
        let cases = [
            (
                training(),
                json!({"accelerator_memory_min_gib": 24}),
                LabelScheme::Azure,
                "accelerator_memory_min_gib",
                "no GPU memory label",
            ),
            (
                inference(),
                json!({}),
                LabelScheme::Azure,
                "accelerators",
                "`L4` cannot be selected with the azure label scheme",
            ),
            (
                training(),
                json!({"providers": ["aws"]}),
                LabelScheme::Aws,
                "providers",
                "no cloud provider label",
            ),
            (
                training(),
                json!({"accelerators": ["A100-80GB"]}),
                LabelScheme::Cfke,
                "accelerators",
                "also launch \"A100-40GB\"",
            ),
            (
                training(),
                json!({"accelerators": ["A100-80GB"]}),
                LabelScheme::Aws,
                "accelerators",
                "also launch \"A100-40GB\"",
            ),
            (
                inference(),
                json!({"accelerator_memory_min_gib": 48}),
                LabelScheme::Cfke,
                "accelerator_memory_min_gib",
                "`L4` has 24 GiB",
            ),
            (
                training(),
                json!({"requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}),
                LabelScheme::Cfke,
                "requirements[0]",
                "set `zones` instead",
            ),
            (
                training(),
                json!({"requirements": [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["1"]}]}),
                LabelScheme::Aws,
                "requirements[0]",
                "set `accelerator_count.min` instead",
            ),
        ];
        for (base, change, scheme, path, detail) in cases {
            let (found_path, found_detail) = error_at(with(base, change.clone()), scheme);
            assert_eq!(found_path, path, "{change}");
            assert!(found_detail.contains(detail), "{change}: {found_detail}");
        }
        // The same through the fleet's own setting; Azure tells A100 sizes apart by name alone.
        let (path, _) = error_at(
            with(inference(), json!({"label_scheme": "azure"})),
            LabelScheme::Cfke,
        );
        assert_eq!(path, "accelerators");
        assert!(
            errors(
                with(training(), json!({"accelerators": ["A100-80GB"]})),
                LabelScheme::Azure
            )
            .is_empty()
        );
        assert!(
            errors(
                with(
                    training(),
                    json!({"accelerators": ["A100-80GB"], "accelerator_memory_min_gib": 80})
                ),
                LabelScheme::Cfke
            )
            .is_empty()
        );
        // The same raw requirement is fine where no attribute generates it.
        let rack = json!({"requirements": [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["1"]}]});
        assert!(errors(with(training(), rack), LabelScheme::Cfke).is_empty());
    }

    #[test]
    fn memory_bounds_select_exactly_the_nominal_sizes() {
        for gib in 1..=300 {
            for unit in [MemoryUnit::GiB, MemoryUnit::MiB] {
                let bound = memory_bound(unit, gib);
                let by_label: Vec<&str> = catalog::all()
                    .iter()
                    .filter(|a| a.memory_in(unit) >= bound)
                    .map(|a| a.name)
                    .collect();
                let nominal: Vec<&str> = catalog::all()
                    .iter()
                    .filter(|a| a.memory_gib >= gib)
                    .map(|a| a.name)
                    .collect();
                assert_eq!(by_label, nominal, "{gib} GiB in {unit:?}");
                let back = memory_gib_for_bound(unit, bound).unwrap();
                assert_eq!(memory_bound(unit, back), bound);
            }
        }
        assert_eq!(memory_bound(MemoryUnit::MiB, 24), 22_888);
        for accelerator in catalog::all() {
            let bound = memory_bound(MemoryUnit::MiB, accelerator.memory_gib);
            assert_eq!(
                memory_gib_for_bound(MemoryUnit::MiB, bound),
                Some(accelerator.memory_gib)
            );
        }
    }

    #[test]
    fn constraint_attrs_are_the_constraints_fields() {
        let fields = serde_json::to_value(Constraints::default()).unwrap();
        let fields: Vec<&str> = fields
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields, CONSTRAINT_ATTRS);
    }

    #[test]
    fn duration_and_schedule_syntax() {
        for ok in ["720h", "1h30m", "30s", "Never", "0s"] {
            assert!(is_karpenter_duration(ok), "{ok}");
        }
        for bad in ["", "30d", "h", "1.5h", "never", "1h 30m"] {
            assert!(!is_karpenter_duration(bad), "{bad}");
        }
        for ok in ["1h", "30m", "1h30m", "8h0s"] {
            assert!(is_budget_duration(ok), "{ok}");
        }
        for bad in ["10s", "30m1h", "0s", "1h30m15s"] {
            assert!(!is_budget_duration(bad), "{bad}");
        }
        assert!(is_budget_nodes("0") && is_budget_nodes("100%") && is_budget_nodes("5%"));
        assert!(!is_budget_nodes("101%") && !is_budget_nodes("%") && !is_budget_nodes("ten"));
        assert!(is_cron_schedule("@daily") && is_cron_schedule("0 9 * * mon-fri"));
        assert!(!is_cron_schedule("@often") && !is_cron_schedule("0 9 * *"));
    }
}
