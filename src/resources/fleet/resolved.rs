//! The catalog names a fleet uses, resolved once per provider call: the
//! label scheme its GPU constraints map to, the catalog models its
//! `accelerators` name and the scheme's GPU name values that select them.
//! Planning resolves them once for its checks; an apply once, before the
//! NodePool is built, for the NodePool and the fleet's sharing both (see
//! `AppliedObject::resolve`); validation and derivation need the models
//! alone, and a read the models of what it read. An apply's sharing also
//! keeps here the GPU Operator's ClusterPolicy, listed once.

use std::collections::BTreeSet;

use super::constraints::Constraints;
use crate::catalog::{self, Accelerator, LabelScheme, MemoryRange, Part, selected_by};
use crate::framework::validators::quoted_list;
use crate::protocol::{AttributePath, Diagnostic};
use crate::resources::sharing::cluster_policy::FoundOnce;

/// A fleet's label scheme and models.
pub struct Resolved {
    pub(super) scheme: LabelScheme,
    pub(super) models: Models,
    /// The scheme's GPU name values selecting exactly `models` within the
    /// GPU memory bounds, or why no values do.
    pub(super) gpu_names: Result<Vec<String>, Diagnostic>,
    /// The GPU Operator's ClusterPolicy, which an apply's sharing reads
    /// once: to check before the NodePool, and to write its key after.
    pub(super) cluster_policy: FoundOnce,
}

/// The catalog models of `accelerators`, in its order.
#[derive(Default)]
pub(super) struct Models {
    /// The models the names find.
    pub(super) known: Vec<&'static Accelerator>,
    /// The parts the names single out (`H200-NVL`).
    pub(super) parts: Vec<&'static Part>,
    /// Why the first name that finds none does not (the schema's
    /// validator refuses it first, so only a plan of an unvalidated
    /// configuration meets it).
    pub(super) unknown: Option<Diagnostic>,
}

impl Models {
    pub(super) fn resolve<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut models = Self::default();
        for name in names {
            models.parts.extend(catalog::part_named(name));
            match catalog::lookup(name) {
                Ok(accelerator) => models.known.push(accelerator),
                Err(e) if models.unknown.is_none() => {
                    models.unknown = Some(
                        Diagnostic::error("Unknown accelerator", e.to_string())
                            .at(AttributePath::attr("accelerators")),
                    );
                }
                Err(_) => {}
            }
        }
        models
    }

    /// Models selected from the catalog already, not by name.
    pub(super) fn selected(known: Vec<&'static Accelerator>) -> Self {
        Self {
            known,
            ..Self::default()
        }
    }

    /// The models of `constraints`' accelerators.
    pub(super) fn of(constraints: &Constraints) -> Self {
        Self::resolve(
            constraints
                .accelerators
                .iter()
                .flatten()
                .map(String::as_str),
        )
    }
}

impl Resolved {
    /// `constraints` under `scheme`.
    pub(super) fn of(constraints: &Constraints, scheme: LabelScheme) -> Self {
        Self::with_models(constraints, scheme, Models::of(constraints))
    }

    /// `constraints` under `scheme`, their accelerators being `models`.
    pub(super) fn with_models(
        constraints: &Constraints,
        scheme: LabelScheme,
        models: Models,
    ) -> Self {
        Self {
            gpu_names: gpu_name_values(&models, constraints.memory_range(), scheme),
            scheme,
            models,
            cluster_policy: FoundOnce::default(),
        }
    }

    /// `constraints` under the label scheme [`effective_scheme`] gives.
    pub(super) fn with_setting(
        constraints: &Constraints,
        setting: Option<&str>,
        node_class_group: &str,
        provider: LabelScheme,
    ) -> Self {
        Self::of(
            constraints,
            effective_scheme(setting, node_class_group, provider),
        )
    }
}

/// The label scheme a fleet uses: its own `label_scheme`, else the one of
/// its node class's cloud (an EC2NodeClass's nodes carry EC2's labels
/// whatever the provider block says), else the provider's.
pub(super) fn effective_scheme(
    setting: Option<&str>,
    node_class_group: &str,
    provider: LabelScheme,
) -> LabelScheme {
    setting
        .and_then(LabelScheme::parse)
        .or_else(|| LabelScheme::of_node_class(node_class_group))
        .unwrap_or(provider)
}

/// The GPU name label values selecting exactly `models` (with the memory
/// bound, if any). Errors when a model has no value under the
/// scheme, when the memory bound excludes a named model, and when the
/// values would also select models that are not named (memory sizes share
/// a value).
fn gpu_name_values(
    models: &Models,
    memory: MemoryRange,
    scheme: LabelScheme,
) -> Result<Vec<String>, Diagnostic> {
    let path = AttributePath::attr("accelerators");
    if let Some(unknown) = &models.unknown {
        return Err(unknown.clone());
    }
    let requested = &models.known;
    let mut values = BTreeSet::new();
    for accelerator in requested {
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
        let gib = accelerator.memory_gib;
        let passed = [
            (
                memory.min.filter(|&min| gib < min),
                "less",
                "accelerator_memory_min_gib",
            ),
            (
                memory.max.filter(|&max| gib > max),
                "more",
                "accelerator_memory_max_gib",
            ),
        ];
        if let Some((bound, than, attribute)) = passed
            .into_iter()
            .find_map(|(bound, than, attribute)| bound.map(|b| (b, than, attribute)))
        {
            return Err(Diagnostic::error(
                "Contradictory GPU memory",
                format!(
                    "`{}` has {gib} GiB per GPU, {than} than {attribute} = {bound}: no node could match.",
                    accelerator.name
                ),
            )
            .at(AttributePath::attr(attribute)));
        }
        values.insert(value.to_string());
    }
    let values: Vec<String> = values.into_iter().collect();
    let extra: Vec<&Accelerator> = selected_by(&values, memory, scheme)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| !requested.contains(a))
        .collect();
    if !extra.is_empty() {
        let names: Vec<&str> = extra.iter().map(|a| a.name).collect();
        let sizes = requested.iter().map(|a| a.memory_gib);
        let (least, most) = (sizes.clone().min(), sizes.max());
        let bound = match (least, most) {
            _ if scheme.label_keys().memory.is_none() => None,
            (_, Some(most)) if extra.iter().all(|a| a.memory_gib > most) => {
                Some(format!("accelerator_memory_max_gib = {most}"))
            }
            (Some(least), _) if extra.iter().all(|a| a.memory_gib < least) => {
                Some(format!("accelerator_memory_min_gib = {least}"))
            }
            _ => None,
        };
        let fix = match bound {
            Some(bound) => format!("List them too, or set {bound} to tell the memory sizes apart."),
            None => "List them too.".to_string(),
        };
        return Err(Diagnostic::error(
            "Accelerators not expressible exactly",
            format!(
                "With the {scheme} label scheme this fleet would also launch {}: they share a `{}` value \
                 with a listed model. {fix}",
                quoted_list(&names),
                scheme.label_keys().name
            ),
        )
        .at(path));
    }
    Ok(values)
}
