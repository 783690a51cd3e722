//! The requirements engine: the fleet's node constraints (GPU models, GPUs
//! per node, GPU memory, capacity types, ...) become NodePool requirements
//! on the node labels of a label scheme, and live requirements decompose
//! back into the same constraints, so drift and imports show where the user
//! wrote them. Pure: no Kubernetes, no protocol plumbing beyond diagnostics.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::catalog::{self, LabelScheme, MemoryUnit, canonical_names, selected_by};
use crate::framework::validators::quoted_list;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

pub(super) const CAPACITY_TYPE_LABEL: &str = "karpenter.sh/capacity-type";
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const ARCH_LABEL: &str = "kubernetes.io/arch";
const CFKE_PROVIDER_LABEL: &str = "cfke.io/provider";

/// What nodes the fleet may launch: the attributes that become
/// `spec.template.spec.requirements`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Constraints {
    pub(super) accelerators: Option<Vec<String>>,
    pub(super) accelerator_count: Option<GpuCount>,
    pub(super) accelerator_memory_min_gib: Option<u32>,
    pub(super) capacity_types: Option<Vec<String>>,
    pub(super) instance_families: Option<Vec<String>>,
    pub(super) providers: Option<Vec<String>>,
    pub(super) zones: Option<Vec<String>>,
    pub(super) architectures: Option<Vec<String>>,
    pub(super) requirements: Option<Vec<RawRequirement>>,
}

/// GPUs per node.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct GpuCount {
    pub(super) min: Option<u32>,
    pub(super) max: Option<u32>,
}

/// A requirement as the `requirements` attribute holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct RawRequirement {
    pub(super) key: String,
    pub(super) operator: String,
    pub(super) values: Option<Vec<String>>,
    pub(super) min_values: Option<u32>,
}

/// A NodePool requirement, as the API spells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Requirement {
    pub(super) key: String,
    pub(super) operator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) values: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) min_values: Option<u32>,
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
            Self::InstanceFamilies => Some((scheme.instance_family_key(), "In")),
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
    pub(super) fn requirements(
        &self,
        scheme: LabelScheme,
    ) -> Result<Vec<Requirement>, Diagnostics> {
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
                number(self.accelerator_memory_min_gib.map(|gib| unit.bound(gib)))
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
    pub(super) fn from_requirements(
        live: &[Requirement],
        scheme: LabelScheme,
        prior: &Constraints,
    ) -> Self {
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
                .and_then(|bound| unit.gib_for_bound(bound)),
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
        let same_models = |a: &[String], b: &[String]| canonical_names(a) == canonical_names(b);
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
                let models = selected_by(values, memory_min, scheme);
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
    let extra: Vec<&str> = selected_by(&values, memory_min, scheme)
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
