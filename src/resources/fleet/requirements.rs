//! The requirements engine: the requirements the fleet's node constraints
//! generate ([`Constraint::generate`]) on the node labels of a label scheme,
//! checked as a list (too few values for a `minValues`, a lower bound past
//! its upper one, contradictions, the CRD's count), then those the
//! constraints imply, then the raw `requirements`. A raw requirement is
//! refused only when it contradicts what an attribute generates (see
//! [`super::allowed`]). Live requirements decompose back into
//! the same constraints in `decompose`. Pure: no Kubernetes, no protocol
//! plumbing beyond diagnostics.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::allowed::Allowed;
use super::constraints::{CONSTRAINTS, Constraint, Constraints, Slot};
use super::model::Model;
use super::resolved::Resolved;
use crate::catalog::{self, Accelerator, LabelScheme};
use crate::framework::validators::quoted_list;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

/// The CRD's bound on `spec.template.spec.requirements`.
const MAX_REQUIREMENTS: usize = 100;

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

/// `node_pool_requirements`: the NodePool's requirements under the fleet's
/// label scheme; `None` while the scheme is not known, or when the
/// constraints cannot become requirements (the plan fails then).
pub(super) fn derive(model: &mut Model) {
    let scheme = model.label_scheme.as_deref().and_then(LabelScheme::parse);
    let constraints = &model.constraints;
    model.node_pool_requirements = scheme
        .and_then(|scheme| {
            constraints
                .requirements(&Resolved::of(constraints, scheme))
                .ok()
        })
        .map(|all| all.into_iter().map(RawRequirement::from).collect());
}

/// A requirement an attribute generates.
struct Generated {
    constraint: &'static Constraint,
    requirement: Requirement,
}

/// Why the constraints cannot become requirements, and which constraints
/// are to blame (so a decomposition can leave them raw instead).
pub(super) struct Problem {
    pub(super) blame: Vec<&'static Constraint>,
    diagnostic: Diagnostic,
}

impl Problem {
    fn new(blame: impl IntoIterator<Item = &'static Constraint>, diagnostic: Diagnostic) -> Self {
        Self {
            blame: blame.into_iter().collect(),
            diagnostic,
        }
    }
}

/// A requirement no attribute owns, which the attributes imply where the
/// scheme's cloud needs it, after the generated ones. Spelled apart from
/// any attribute's, so that a NodePool reads back as it was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Implied {
    /// Whole GPUs: where the cloud sells fractional ones (a part of a GPU,
    /// a GPU count of 0, no `nvidia.com/gpu`), a fleet that asks for GPUs
    /// and sets no `accelerator_count.min` gets the GPU count `NotIn
    /// ["0"]`, so that a pod asking for `nvidia.com/gpu` never gets a node
    /// with none. `accelerator_count.min = 0` lets fractional GPUs in.
    WholeGpus,
    /// NVIDIA GPUs: where the cloud sells other makers' GPUs, a fleet that
    /// asks for GPUs (a count or GPU memory) but names no model (catalog
    /// models are NVIDIA's) gets the GPU maker `In ["nvidia"]`.
    NvidiaGpus,
}

impl Implied {
    pub(super) const ALL: [Self; 2] = [Self::WholeGpus, Self::NvidiaGpus];

    /// The requirement under `scheme`; `None` where its cloud needs none.
    pub(super) fn requirement(self, scheme: LabelScheme) -> Option<Requirement> {
        let (key, operator, value) = match self {
            Self::WholeGpus => (
                scheme
                    .sells_fractional_gpus()
                    .then_some(scheme.label_keys().count)?,
                "NotIn",
                "0",
            ),
            Self::NvidiaGpus => (scheme.gpu_manufacturer_key()?, "In", "nvidia"),
        };
        Some(Requirement {
            key: key.to_string(),
            operator: operator.to_string(),
            values: Some(vec![value.to_string()]),
            min_values: None,
        })
    }

    /// Whether `constraints` imply it (where their scheme needs it).
    pub(super) fn implied_by(self, constraints: &Constraints) -> bool {
        constraints.asks_for_gpus()
            && match self {
                Self::WholeGpus => constraints
                    .accelerator_count
                    .as_ref()
                    .is_none_or(|c| c.min.is_none()),
                Self::NvidiaGpus => constraints.accelerators.is_none(),
            }
    }
}

impl Constraints {
    /// The NodePool requirements, with catalog names as `resolved` has
    /// them: the generated ones in [`CONSTRAINTS`] order, then the raw
    /// ones. Errors point at what the scheme cannot express, at
    /// `min_values` that cannot be met, and at raw requirements that
    /// contradict an attribute.
    pub(super) fn requirements(
        &self,
        resolved: &Resolved,
    ) -> Result<Vec<Requirement>, Diagnostics> {
        let (generated, problems) = self.checked(resolved);
        if !problems.is_empty() {
            return Err(Diagnostics(
                problems.into_iter().map(|p| p.diagnostic).collect(),
            ));
        }
        Ok(generated
            .into_iter()
            .map(|g| g.requirement)
            .chain(self.implied(resolved.scheme))
            .chain(self.raw().iter().cloned().map(Requirement::from))
            .collect())
    }

    /// Whether the fleet asks for GPUs: a model, GPU memory, or a GPU
    /// count other than `min = 0` alone (which bounds nothing).
    pub(super) fn asks_for_gpus(&self) -> bool {
        let count = self
            .accelerator_count
            .as_ref()
            .is_some_and(|c| c.min.is_some_and(|n| n > 0) || c.max.is_some());
        self.accelerators.is_some()
            || count
            || self.accelerator_memory_min_gib.is_some()
            || self.accelerator_memory_max_gib.is_some()
    }

    /// The [`Implied`] requirements these constraints add under `scheme`.
    pub(super) fn implied(&self, scheme: LabelScheme) -> Vec<Requirement> {
        Implied::ALL
            .into_iter()
            .filter(|i| i.implied_by(self))
            .filter_map(|i| i.requirement(scheme))
            .collect()
    }

    /// Everything that keeps these constraints from becoming requirements;
    /// empty when they can.
    pub(super) fn problems(&self, resolved: &Resolved) -> Vec<Problem> {
        self.checked(resolved).1
    }

    /// The problems that involve none of the `unknown` constraints (left
    /// out of `self` because they are known only after apply), nor any
    /// constraint whose requirement depends on one: what can be said now,
    /// at plan.
    pub(super) fn known_problems(
        &self,
        resolved: &Resolved,
        unknown: &[&'static Constraint],
    ) -> Diagnostics {
        let involved = |c: &&Constraint| unknown.iter().any(|u| u == c || c.depends_on(u));
        Diagnostics(
            self.problems(resolved)
                .into_iter()
                .filter(|p| !p.blame.iter().any(involved))
                .map(|p| p.diagnostic)
                .collect(),
        )
    }

    /// A warning when `architectures` excludes every instance type the
    /// label scheme's cloud sells the fleet's models on (EC2 sells the T4
    /// on amd64 only): the NodePool is valid, but Karpenter can never
    /// launch a node for it. Names the same GPUs sold on the allowed
    /// architectures (the T4G on arm64), if any.
    pub(super) fn architecture_mismatch(&self, resolved: &Resolved) -> Option<Diagnostic> {
        let allowed = self.architectures.as_ref()?;
        let (scheme, models) = (resolved.scheme, &resolved.models.known);
        if models.is_empty() || resolved.models.unknown.is_some() {
            return None;
        }
        let fits = |model: &Accelerator| {
            model
                .node_architectures(scheme)
                .is_some_and(|sold| allowed.iter().any(|a| sold.contains(&a.as_str())))
        };
        let mut sold_on = Vec::new();
        for model in models {
            let architectures = model.node_architectures(scheme)?;
            if fits(model) {
                return None;
            }
            sold_on.push(format!(
                "`{}` only on {}",
                model.name,
                architectures.join(" and ")
            ));
        }
        let alternatives: Vec<&str> = catalog::all()
            .iter()
            .filter(|c| fits(c) && models.iter().any(|m| c.same_gpu_as(m)))
            .map(|c| c.name)
            .collect();
        let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
        let fix = match alternatives.as_slice() {
            [] => "Allow those architectures, or choose models sold on these.".to_string(),
            names => format!(
                "On {}, the same GPU is sold as {}: name that in `accelerators`.",
                allowed.join(" and "),
                quoted_list(names)
            ),
        };
        Some(
            Diagnostic::warning(
                "No instance type has these GPUs on these architectures",
                format!(
                    "With the {scheme} label scheme, its cloud sells {}, and `architectures` allows {}: Karpenter can never launch a node for this fleet. {fix}",
                    sold_on.join(", "),
                    quoted_list(&allowed),
                ),
            )
            .at(AttributePath::attr("architectures")),
        )
    }

    fn raw(&self) -> &[RawRequirement] {
        self.requirements.as_deref().unwrap_or_default()
    }

    fn checked(&self, resolved: &Resolved) -> (Vec<Generated>, Vec<Problem>) {
        let (generated, mut problems) = self.generated(resolved);
        problems.extend(self.contradictions(&generated));
        let implied = self.implied(resolved.scheme).len();
        let total = generated.len() + implied + self.raw().len();
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
    fn generated(&self, resolved: &Resolved) -> (Vec<Generated>, Vec<Problem>) {
        let min_values = self.min_values.clone().unwrap_or_default();
        let mut problems = Vec::new();
        let mut generated = Vec::new();
        for constraint in &CONSTRAINTS {
            match constraint.generate(self, resolved) {
                Ok(None) => {}
                Ok(Some(requirement)) => {
                    problems.extend(too_few_values(constraint, &requirement, resolved.scheme));
                    generated.push(Generated {
                        constraint,
                        requirement,
                    });
                }
                Err(d) => problems.push(Problem::new([constraint], d)),
            }
        }
        for constraint in &CONSTRAINTS {
            if let Some((upper, diagnostic)) = constraint.passes_upper(self) {
                problems.push(Problem::new([constraint, upper], diagnostic));
            }
        }
        // Constraints sharing a field (accelerator_count's bounds): check each field once.
        let mut fields = BTreeSet::new();
        for constraint in &CONSTRAINTS {
            let field = constraint.field;
            if !fields.insert(field) || min_values.of(constraint).is_none() {
                continue;
            }
            let attribute_set =
                constraint.is_set(self) || constraint.siblings().any(|c| c.is_set(self));
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
                // The attributes alone: a lower bound above its upper one, reported by validation.
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
    constraint: &'static Constraint,
    requirement: &Requirement,
    scheme: LabelScheme,
) -> Option<Problem> {
    let Requirement {
        key,
        operator,
        values,
        min_values,
    } = requirement;
    let values = values.as_deref().unwrap_or_default();
    let min = min_values.filter(|&min| operator == "In" && values.len() < min as usize)?;
    let field = constraint.field;
    let how = if matches!(constraint.slot, Slot::Models) {
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
                constraint.attribute,
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
                g.constraint.attribute,
                g.requirement.describe()
            )
        })
        .collect();
    let attribute = on_key[0].constraint.field;
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
