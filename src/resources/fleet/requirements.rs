//! The requirements engine: the fleet's node constraints (GPU models, GPUs
//! per node, GPU memory, capacity types, ...) become NodePool requirements
//! on the node labels of a label scheme, each with the `minValues` the
//! `min_values` attribute gives it, followed by the raw `requirements`. A
//! raw requirement is refused only when it contradicts what an attribute
//! generates (see [`super::allowed`]). Live requirements decompose back into
//! the same constraints in `decompose`. Pure: no Kubernetes, no protocol
//! plumbing beyond diagnostics.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::allowed::Allowed;
use crate::catalog::{self, LabelScheme, MemoryUnit, selected_by};
use crate::framework::validators::quoted_list;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

pub(super) const CAPACITY_TYPE_LABEL: &str = "karpenter.sh/capacity-type";
pub(super) const CAPACITY_TYPES: &[&str] = &["on-demand", "spot", "reserved"];
pub(super) const ARCHITECTURES: &[&str] = &["amd64", "arm64"];
pub(super) const MAX_GPUS_PER_NODE: u32 = 1024;
pub(super) const MAX_GPU_MEMORY_GIB: u32 = 10_000;
/// Karpenter's bound on `minValues`.
pub(super) const MAX_MIN_VALUES: u32 = 50;
/// The CRD's bound on `spec.template.spec.requirements`.
const MAX_REQUIREMENTS: usize = 100;
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
    pub(super) min_values: Option<MinValues>,
    pub(super) requirements: Option<Vec<RawRequirement>>,
}

/// GPUs per node.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct GpuCount {
    pub(super) min: Option<u32>,
    pub(super) max: Option<u32>,
}

/// Karpenter's `minValues` for the requirements the constraint attributes
/// generate: at least this many distinct label values among the instance
/// types a node may be launched from. `accelerator_count` applies to both
/// of its requirements.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct MinValues {
    pub(super) accelerators: Option<u32>,
    pub(super) accelerator_count: Option<u32>,
    pub(super) accelerator_memory_min_gib: Option<u32>,
    pub(super) capacity_types: Option<u32>,
    pub(super) instance_families: Option<u32>,
    pub(super) providers: Option<u32>,
    pub(super) zones: Option<u32>,
    pub(super) architectures: Option<u32>,
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

impl Requirement {
    /// As a user would read it: `key In ["a", "b"] (minValues 2)`.
    fn describe(&self) -> String {
        let mut text = format!("{} {}", self.key, self.operator);
        if let Some(values) = &self.values {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            text.push_str(&format!(" [{}]", quoted_list(&values)));
        }
        if let Some(min) = self.min_values {
            text.push_str(&format!(" (minValues {min})"));
        }
        text
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

/// One node constraint attribute, in the order requirements are generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Constraint {
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
    pub(super) const ALL: [Self; 9] = [
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
    pub(super) fn attribute(self) -> &'static str {
        match self {
            Self::MinAccelerators => "accelerator_count.min",
            Self::MaxAccelerators => "accelerator_count.max",
            _ => self.min_values_attribute(),
        }
    }

    /// The attribute of `min_values` that gives this constraint's `minValues`.
    pub(super) fn min_values_attribute(self) -> &'static str {
        match self {
            Self::Accelerators => "accelerators",
            Self::MinAccelerators | Self::MaxAccelerators => "accelerator_count",
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
    /// scheme has no label for this constraint. Bounds are written `Gt` and
    /// `Lt` (one past the bound): the NodePool CRD accepts `Gte` and `Lte`
    /// only since Karpenter v1.9, `Gt` and `Lt` in every v1 release
    /// (sigs.k8s.io/karpenter, pkg/apis/crds/karpenter.sh_nodepools.yaml).
    pub(super) fn requirement(self, scheme: LabelScheme) -> Option<(&'static str, &'static str)> {
        let gpu = scheme.label_keys();
        match self {
            Self::Accelerators => Some((gpu.name, "In")),
            Self::MinAccelerators => Some((gpu.count, "Gt")),
            Self::MaxAccelerators => Some((gpu.count, "Lt")),
            Self::MinMemory => gpu.memory.map(|memory| (memory.key, "Gt")),
            Self::CapacityTypes => Some((CAPACITY_TYPE_LABEL, "In")),
            Self::InstanceFamilies => Some((scheme.instance_family_key(), "In")),
            Self::Providers => (scheme == LabelScheme::Cfke).then_some((CFKE_PROVIDER_LABEL, "In")),
            Self::Zones => Some((ZONE_LABEL, "In")),
            Self::Architectures => Some((ARCH_LABEL, "In")),
        }
    }

    /// Whether `key` is a label only some schemes generate requirements on,
    /// and `scheme` is one of them.
    pub(super) fn is_scheme_label(key: &str, scheme: LabelScheme) -> bool {
        let generated_under = |s: LabelScheme| {
            Self::ALL
                .into_iter()
                .any(|c| c.requirement(s).is_some_and(|(k, _)| k == key))
        };
        generated_under(scheme) && !LabelScheme::ALL.into_iter().all(generated_under)
    }

    /// Whether `constraints` sets this constraint's attribute.
    pub(super) fn is_set(self, constraints: &Constraints) -> bool {
        let count = constraints.accelerator_count.as_ref();
        match self {
            Self::Accelerators => constraints.accelerators.is_some(),
            Self::MinAccelerators => count.is_some_and(|c| c.min.is_some()),
            Self::MaxAccelerators => count.is_some_and(|c| c.max.is_some()),
            Self::MinMemory => constraints.accelerator_memory_min_gib.is_some(),
            Self::CapacityTypes => constraints.capacity_types.is_some(),
            Self::InstanceFamilies => constraints.instance_families.is_some(),
            Self::Providers => constraints.providers.is_some(),
            Self::Zones => constraints.zones.is_some(),
            Self::Architectures => constraints.architectures.is_some(),
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

impl MinValues {
    /// The `minValues` of `constraint`'s requirement.
    pub(super) fn of(&self, constraint: Constraint) -> Option<u32> {
        *self.slot_ref(constraint)
    }

    fn slot_ref(&self, constraint: Constraint) -> &Option<u32> {
        match constraint {
            Constraint::Accelerators => &self.accelerators,
            Constraint::MinAccelerators | Constraint::MaxAccelerators => &self.accelerator_count,
            Constraint::MinMemory => &self.accelerator_memory_min_gib,
            Constraint::CapacityTypes => &self.capacity_types,
            Constraint::InstanceFamilies => &self.instance_families,
            Constraint::Providers => &self.providers,
            Constraint::Zones => &self.zones,
            Constraint::Architectures => &self.architectures,
        }
    }

    /// The field holding `constraint`'s `minValues`.
    pub(super) fn slot(&mut self, constraint: Constraint) -> &mut Option<u32> {
        match constraint {
            Constraint::Accelerators => &mut self.accelerators,
            Constraint::MinAccelerators | Constraint::MaxAccelerators => {
                &mut self.accelerator_count
            }
            Constraint::MinMemory => &mut self.accelerator_memory_min_gib,
            Constraint::CapacityTypes => &mut self.capacity_types,
            Constraint::InstanceFamilies => &mut self.instance_families,
            Constraint::Providers => &mut self.providers,
            Constraint::Zones => &mut self.zones,
            Constraint::Architectures => &mut self.architectures,
        }
    }

    /// Whether any `minValues` is set.
    pub(super) fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A requirement an attribute generates.
struct Generated {
    constraint: Constraint,
    requirement: Requirement,
}

/// Why the constraints cannot become requirements, and which constraints
/// are to blame (so a decomposition can leave them raw instead).
pub(super) struct Problem {
    pub(super) blame: Vec<Constraint>,
    diagnostic: Diagnostic,
}

impl Problem {
    fn new(blame: impl IntoIterator<Item = Constraint>, diagnostic: Diagnostic) -> Self {
        Self {
            blame: blame.into_iter().collect(),
            diagnostic,
        }
    }
}

pub(super) fn sorted_unique(values: &[String]) -> Vec<String> {
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
    /// the scheme cannot express, at `min_values` that cannot be met, and
    /// at raw requirements that contradict an attribute.
    pub(super) fn requirements(
        &self,
        scheme: LabelScheme,
    ) -> Result<Vec<Requirement>, Diagnostics> {
        let (generated, problems) = self.checked(scheme);
        if !problems.is_empty() {
            return Err(Diagnostics(
                problems.into_iter().map(|p| p.diagnostic).collect(),
            ));
        }
        Ok(generated
            .into_iter()
            .map(|g| g.requirement)
            .chain(self.raw().iter().cloned().map(Requirement::from))
            .collect())
    }

    /// Everything that keeps these constraints from becoming requirements
    /// under `scheme`; empty when they can.
    pub(super) fn problems(&self, scheme: LabelScheme) -> Vec<Problem> {
        self.checked(scheme).1
    }

    /// The problems under `scheme` that involve none of the `unknown`
    /// constraints (left out of `self` because they are known only after
    /// apply): what can be said now, at plan.
    pub(super) fn known_problems(
        &self,
        scheme: LabelScheme,
        unknown: &[Constraint],
    ) -> Diagnostics {
        // The models' label values depend on the memory bound.
        let involved = |c: &Constraint| {
            unknown.contains(c)
                || (*c == Constraint::Accelerators && unknown.contains(&Constraint::MinMemory))
        };
        Diagnostics(
            self.problems(scheme)
                .into_iter()
                .filter(|p| !p.blame.iter().any(involved))
                .map(|p| p.diagnostic)
                .collect(),
        )
    }

    fn raw(&self) -> &[RawRequirement] {
        self.requirements.as_deref().unwrap_or_default()
    }

    fn checked(&self, scheme: LabelScheme) -> (Vec<Generated>, Vec<Problem>) {
        let (generated, mut problems) = self.generate(scheme);
        problems.extend(self.contradictions(&generated));
        let total = generated.len() + self.raw().len();
        if total > MAX_REQUIREMENTS {
            problems.push(Problem::new(
                [],
                Diagnostic::error(
                    "Too many requirements",
                    format!(
                        "The attributes and `requirements` make {total} NodePool requirements; Karpenter allows at most {MAX_REQUIREMENTS}."
                    ),
                )
                .at(AttributePath::attr("requirements")),
            ));
        }
        (generated, problems)
    }

    /// The requirements the attributes generate, with their `minValues`.
    fn generate(&self, scheme: LabelScheme) -> (Vec<Generated>, Vec<Problem>) {
        let min_values = self.min_values.clone().unwrap_or_default();
        let mut problems = Vec::new();
        let mut generated = Vec::new();
        for constraint in Constraint::ALL {
            let min = min_values.of(constraint);
            match (
                self.values(constraint, scheme),
                constraint.requirement(scheme),
            ) {
                (Ok(None), _) => {}
                (Ok(Some(values)), Some((key, operator))) => {
                    if let Some(problem) =
                        too_few_values(constraint, key, operator, &values, min, scheme)
                    {
                        problems.push(problem);
                    }
                    generated.push(Generated {
                        constraint,
                        requirement: Requirement {
                            key: key.to_string(),
                            operator: operator.to_string(),
                            values: Some(values),
                            min_values: min,
                        },
                    });
                }
                (Ok(Some(_)), None) => {
                    problems.push(Problem::new([constraint], constraint.inexpressible(scheme)));
                }
                (Err(d), _) => problems.push(Problem::new([constraint], d)),
            }
        }
        if let Some(GpuCount {
            min: Some(min),
            max: Some(max),
        }) = self.accelerator_count
            && min > max
        {
            problems.push(Problem::new(
                [Constraint::MinAccelerators, Constraint::MaxAccelerators],
                Diagnostic::error(
                    "Invalid accelerator count",
                    format!("accelerator_count.min ({min}) is greater than accelerator_count.max ({max})."),
                )
                .at(Constraint::MinAccelerators.path()),
            ));
        }
        // accelerator_count's two constraints share a field: check each field once.
        let mut fields = BTreeSet::new();
        for constraint in Constraint::ALL {
            let field = constraint.min_values_attribute();
            if !fields.insert(field) || min_values.of(constraint).is_none() {
                continue;
            }
            let attribute_set = Constraint::ALL
                .into_iter()
                .any(|c| c.min_values_attribute() == field && c.is_set(self));
            if !attribute_set {
                problems.push(Problem::new(
                    [],
                    Diagnostic::error(
                        "min_values without its attribute",
                        format!(
                            "min_values.{field} gives `minValues` to the requirement `{field}` generates, but `{field}` is not set. Set `{field}`, or put the requirement with its `min_values` in `requirements`."
                        ),
                    )
                    .at(AttributePath::attr("min_values").join_attr(field)),
                ));
            }
        }
        (generated, problems)
    }

    /// Raw requirements that leave no node a label value the attributes
    /// on the same key allow (or fewer values than a `minValues` asks for),
    /// reported at the first raw requirement that does, per key.
    fn contradictions(&self, generated: &[Generated]) -> Vec<Problem> {
        let keys: BTreeSet<&str> = generated
            .iter()
            .map(|g| g.requirement.key.as_str())
            .collect();
        let mut problems = Vec::new();
        for key in keys {
            let on_key: Vec<&Generated> = generated
                .iter()
                .filter(|g| g.requirement.key == key)
                .collect();
            let Some(mut allowed) = on_key
                .iter()
                .map(|g| Allowed::of(&g.requirement))
                .reduce(|a, b| a.and(&b))
            else {
                continue;
            };
            if !allowed.satisfiable() {
                // The attributes alone: accelerator_count.min > max, reported by validation.
                continue;
            }
            let mut earlier = Vec::new();
            for (index, raw) in self.raw().iter().enumerate().filter(|(_, r)| r.key == key) {
                let requirement = Requirement::from(raw.clone());
                let next = allowed.and(&Allowed::of(&requirement));
                if !next.satisfiable() {
                    problems.push(Problem::new(
                        on_key.iter().map(|g| g.constraint),
                        contradiction(index, &requirement, &on_key, &earlier, &next),
                    ));
                    break;
                }
                allowed = next;
                earlier.push(index);
            }
        }
        problems
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
            // Validation keeps both bounds at 1 or more, so `Gt` stays at 0
            // or more, as the CRD requires.
            Constraint::MinAccelerators => number(count.and_then(|c| c.min).map(|n| n - 1)),
            Constraint::MaxAccelerators => number(count.and_then(|c| c.max).map(|n| n + 1)),
            Constraint::MinMemory => {
                // Without a memory label the value goes unused: that is an error.
                let unit = scheme
                    .label_keys()
                    .memory
                    .map_or(MemoryUnit::GiB, |label| label.unit);
                number(
                    self.accelerator_memory_min_gib
                        .map(|gib| unit.bound(gib) - 1),
                )
            }
            Constraint::CapacityTypes => set(&self.capacity_types),
            Constraint::InstanceFamilies => set(&self.instance_families),
            Constraint::Providers => set(&self.providers),
            Constraint::Zones => set(&self.zones),
            Constraint::Architectures => set(&self.architectures),
        })
    }
}

/// Whether a live requirement's operator states the kind of bound
/// `generated` does: `Gt` reads `Gte` too and `Lt` reads `Lte`, the forms
/// Karpenter v1.9 added (and gpufleet wrote before).
pub(super) fn same_operator(generated: &str, live: &str) -> bool {
    generated == live || matches!((generated, live), ("Gt", "Gte") | ("Lt", "Lte"))
}

/// The inclusive bound a live `Gt`, `Gte`, `Lt` or `Lte` requirement on a
/// whole-number label states: `Gt 7` and `Gte 8` both say 8.
pub(super) fn inclusive_bound(operator: &str, values: Option<&[String]>) -> Option<u32> {
    let [value] = values? else { return None };
    let n: u32 = value.parse().ok()?;
    match operator {
        "Gte" | "Lte" => Some(n),
        "Gt" => n.checked_add(1),
        "Lt" => n.checked_sub(1),
        _ => None,
    }
}

/// An `In` requirement must list at least `minValues` values (a CRD rule).
fn too_few_values(
    constraint: Constraint,
    key: &str,
    operator: &str,
    values: &[String],
    min: Option<u32>,
    scheme: LabelScheme,
) -> Option<Problem> {
    let min = min.filter(|&min| operator == "In" && values.len() < min as usize)?;
    let field = constraint.min_values_attribute();
    let how = if constraint == Constraint::Accelerators {
        format!(" (models that share a `{key}` value under the {scheme} label scheme count once)")
    } else {
        String::new()
    };
    Some(Problem::new(
        [constraint],
        Diagnostic::error(
            "min_values above the number of values",
            format!(
                "min_values.{field} is {min}, but `{}` gives {} `{key}` value{}{how}: Karpenter needs at least that many to choose from. List more, or lower min_values.{field}.",
                constraint.attribute(),
                values.len(),
                if values.len() == 1 { "" } else { "s" },
            ),
        )
        .at(AttributePath::attr("min_values").join_attr(field)),
    ))
}

fn contradiction(
    index: usize,
    raw: &Requirement,
    on_key: &[&Generated],
    earlier: &[usize],
    together: &Allowed,
) -> Diagnostic {
    let attributes: Vec<String> = on_key
        .iter()
        .map(|g| {
            format!(
                "`{}` (`{}`)",
                g.constraint.attribute(),
                g.requirement.describe()
            )
        })
        .collect();
    let attribute = on_key[0].constraint.min_values_attribute();
    let with_earlier = match earlier {
        [] => String::new(),
        _ => format!(
            " together with {}",
            earlier
                .iter()
                .map(|i| format!("requirements[{i}]"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let why = if together.has_a_value() {
        "fewer values are left than `minValues` asks for"
    } else {
        "no node can have a value that meets both"
    };
    Diagnostic::error(
        "Requirement contradicts an attribute",
        format!(
            "requirements[{index}] (`{}`){with_earlier} contradicts {}: on `{}` {why}, so Karpenter could never launch a node. \
             Say what nodes may have in `{attribute}` alone and drop this requirement, or unset `{attribute}` and keep the requirement.",
            raw.describe(),
            attributes.join(" and "),
            raw.key,
        ),
    )
    .at(AttributePath::attr("requirements").join_index(index))
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
