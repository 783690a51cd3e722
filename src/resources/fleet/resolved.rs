//! The catalog names a fleet uses, resolved once per provider call: the
//! label scheme its GPU constraints map to and the catalog models its
//! `accelerators` name. Validation, planning, apply, read and the fleet's
//! sharing take them from here instead of looking the names up again.

use super::constraints::Constraints;
use crate::catalog::{self, Accelerator, LabelScheme, Part};
use crate::protocol::{AttributePath, Diagnostic};

/// A fleet's label scheme and models.
pub(super) struct Resolved {
    pub(super) scheme: LabelScheme,
    pub(super) models: Models,
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
        Self {
            scheme,
            models: Models::of(constraints),
        }
    }

    /// `constraints` under the fleet's `label_scheme` setting, else the
    /// provider's.
    pub(super) fn with_setting(
        constraints: &Constraints,
        setting: Option<&str>,
        provider: LabelScheme,
    ) -> Self {
        Self::of(constraints, effective_scheme(setting, provider))
    }
}

/// The label scheme a fleet uses: its own setting, else the provider's.
pub(super) fn effective_scheme(setting: Option<&str>, provider: LabelScheme) -> LabelScheme {
    setting.and_then(LabelScheme::parse).unwrap_or(provider)
}
