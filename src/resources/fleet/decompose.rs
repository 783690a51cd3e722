//! Live NodePool requirements back into the fleet's constraints: each
//! requirement an attribute would generate fills that attribute (with its
//! `minValues` in `min_values`), the rest stay raw `requirements`. After an
//! import every attribute may be filled; while Terraform manages the fleet,
//! only those the prior state sets, so a requirement the user wrote raw
//! stays raw. Whatever would not plan again as it reads (a raw requirement
//! contradicting an attribute, values an attribute cannot hold) is left raw
//! instead, so configuration written from the state plans with no change.

use super::constraints::{CONSTRAINTS, Constraint, Constraints, MinValues, Slot, sorted_unique};
use super::requirements::{Implied, RawRequirement, Requirement, inclusive_bound, same_operator};
use super::resolved::{Models, Resolved};
use crate::catalog::{Accelerator, LabelScheme, canonical_names, selected_by};

impl Constraints {
    /// The constraints `live` expresses under `scheme`. `prior` says which
    /// attributes are managed (all when `importing`) and keeps the user's
    /// spelling of accelerator names and an empty `requirements` list.
    pub(super) fn from_requirements(
        live: &[Requirement],
        scheme: LabelScheme,
        prior: &Constraints,
        importing: bool,
    ) -> Self {
        // The implied requirements present: each is the constraints' if
        // what the rest reads as implies it, else raw (only its first
        // occurrence, as a raw requirement may say the same).
        let mut present: Vec<Requirement> = Implied::ALL
            .into_iter()
            .filter_map(|i| i.requirement(scheme))
            .filter(|r| live.contains(r))
            .collect();
        // Each round leaves at least one more of them raw, so this ends.
        loop {
            let mut rest = live.to_vec();
            for implied in &present {
                if let Some(at) = rest.iter().position(|r| r == implied) {
                    rest.remove(at);
                }
            }
            let constraints = Self::from_rest(&rest, &present, scheme, prior, importing);
            let implied = constraints.implied(scheme);
            if present.iter().all(|r| implied.contains(r)) {
                break constraints;
            }
            present.retain(|r| implied.contains(r));
        }
    }

    /// The constraints `rest` expresses without the implied requirements
    /// `present`, and what the absence of the others means: without the
    /// NVIDIA requirement a fleet that asks for a GPU count or memory alone
    /// admits any maker's GPUs, which no attribute says, so its count and
    /// memory bounds stay raw; without the whole-GPU one a fleet that asks
    /// for GPUs admits fractional ones, which is `accelerator_count.min = 0` (also what a
    /// configured `min = 0` reads back as where no cloud sells them).
    fn from_rest(
        rest: &[Requirement],
        present: &[Requirement],
        scheme: LabelScheme,
        prior: &Constraints,
        importing: bool,
    ) -> Self {
        let absent = |i: Implied| i.requirement(scheme).is_some_and(|r| !present.contains(&r));
        let mut constraints = Self::from_claimed(rest, scheme, prior, importing, &[]);
        if absent(Implied::NvidiaGpus) && Implied::NvidiaGpus.implied_by(&constraints) {
            let gpu_bounds: Vec<&Constraint> =
                CONSTRAINTS.iter().filter(|c| c.bounds_gpus()).collect();
            constraints = Self::from_claimed(rest, scheme, prior, importing, &gpu_bounds);
        }
        let fractional_allowed = absent(Implied::WholeGpus)
            || prior.accelerator_count.as_ref().and_then(|c| c.min) == Some(0);
        if fractional_allowed && Implied::WholeGpus.implied_by(&constraints) {
            constraints.accelerator_count.get_or_insert_default().min = Some(0);
        }
        constraints
    }

    /// The constraints `live` expresses, the `withheld` ones left raw.
    fn from_claimed(
        live: &[Requirement],
        scheme: LabelScheme,
        prior: &Constraints,
        importing: bool,
        withheld: &[&'static Constraint],
    ) -> Self {
        let mut left_raw: Vec<&Constraint> = withheld.to_vec();
        let mut constraints = loop {
            let claimable =
                |c: &Constraint| (importing || c.is_set(prior)) && !left_raw.contains(&c);
            let (constraints, models) = decompose(live, scheme, claimable);
            // The models the live GPU names selected: nothing to look up again.
            let resolved = Resolved::with_models(&constraints, scheme, Models::selected(models));
            let blamed: Vec<&Constraint> = constraints
                .problems(&resolved)
                .into_iter()
                .flat_map(|p| p.blame)
                .filter(|c| !left_raw.contains(c))
                .collect();
            // Each round leaves at least one more constraint raw, so this ends.
            if blamed.is_empty() {
                break constraints;
            }
            left_raw.extend(blamed);
        };
        let same_models = |a: &[String], b: &[String]| canonical_names(a) == canonical_names(b);
        if let (Some(live), Some(prior)) = (&constraints.accelerators, &prior.accelerators)
            && same_models(live, prior)
        {
            constraints.accelerators = Some(prior.clone());
        }
        if constraints.requirements.is_none() && prior.requirements.is_some() {
            constraints.requirements = Some(Vec::new());
        }
        constraints
    }
}

/// What one pass of [`decompose`] has filled so far: the constraints,
/// their `minValues`, and the catalog models the live GPU names selected.
#[derive(Default)]
struct Decomposed {
    constraints: Constraints,
    min_values: MinValues,
    models: Vec<&'static Accelerator>,
}

/// One pass: fills each claimable attribute from the first live requirement
/// it would generate, those whose requirement depends on others' values
/// (accelerator names on the memory bounds) after the others. Also the
/// catalog models the accelerator names stand for.
fn decompose(
    live: &[Requirement],
    scheme: LabelScheme,
    claimable: impl Fn(&Constraint) -> bool,
) -> (Constraints, Vec<&'static Accelerator>) {
    let generated_by = |r: &Requirement| {
        CONSTRAINTS.iter().find(|c| {
            claimable(c)
                && c.requirement(scheme)
                    .is_some_and(|(key, op)| key == r.key && same_operator(op, &r.operator))
        })
    };
    let dependent = |c: &Constraint| CONSTRAINTS.iter().any(|other| c.depends_on(other));
    let mut decomposed = Decomposed::default();
    let mut claimed = vec![false; live.len()];
    for second in [false, true] {
        for (requirement, claimed) in live.iter().zip(&mut claimed) {
            if let Some(constraint) = generated_by(requirement).filter(|&c| dependent(c) == second)
            {
                *claimed = decomposed.claim(constraint, requirement, scheme);
            }
        }
    }
    let raw: Vec<RawRequirement> = live
        .iter()
        .zip(claimed)
        .filter(|(_, claimed)| !claimed)
        .map(|(r, _)| RawRequirement::from(r.clone()))
        .collect();
    let Decomposed {
        mut constraints,
        min_values,
        models,
    } = decomposed;
    constraints.min_values = (!min_values.is_empty()).then_some(min_values);
    constraints.requirements = (!raw.is_empty()).then_some(raw);
    (constraints, models)
}

impl Decomposed {
    /// Fills `constraint` from a live requirement if it is still empty and
    /// the attribute can hold the values; says whether it did.
    fn claim(
        &mut self,
        constraint: &Constraint,
        requirement: &Requirement,
        scheme: LabelScheme,
    ) -> bool {
        let constraints = &mut self.constraints;
        if constraint.is_set(constraints) {
            return false;
        }
        // Constraints sharing a min_values field (accelerator_count's bounds)
        // must agree on it.
        if constraint.siblings().any(|s| s.is_set(constraints))
            && self.min_values.of(constraint) != requirement.min_values
        {
            return false;
        }
        let values = requirement.values.as_deref().unwrap_or_default();
        let filled = match &constraint.slot {
            Slot::Models => match selected_by(values, constraints.memory_range(), scheme) {
                Some(models) => {
                    constraints.accelerators =
                        Some(models.iter().map(|a| a.name.to_string()).collect());
                    self.models = models;
                    true
                }
                None => false,
            },
            Slot::Bound { set, unit, .. } => {
                let at_most = constraint.operator == "Lt";
                match inclusive_bound(&requirement.operator, requirement.values.as_deref())
                    .and_then(|bound| unit.bound_for_label(bound, scheme, at_most))
                {
                    Some(n) => {
                        set(constraints, n);
                        true
                    }
                    None => false,
                }
            }
            Slot::Values { set, allowed, .. } => {
                let fits = !values.is_empty()
                    && allowed
                        .is_none_or(|allowed| values.iter().all(|v| allowed.contains(&v.as_str())));
                if fits {
                    set(constraints, sorted_unique(values));
                }
                fits
            }
        };
        if filled {
            self.min_values.set(constraint, requirement.min_values);
        }
        filled
    }
}
