//! Live NodePool requirements back into the fleet's constraints: each
//! requirement an attribute would generate fills that attribute (with its
//! `minValues` in `min_values`), the rest stay raw `requirements`. After an
//! import every attribute may be filled; while Terraform manages the fleet,
//! only those the prior state sets, so a requirement the user wrote raw
//! stays raw. Whatever would not plan again as it reads (a raw requirement
//! contradicting an attribute, values an attribute cannot hold) is left raw
//! instead, so configuration written from the state plans with no change.

use super::requirements::{
    ARCHITECTURES, CAPACITY_TYPES, Constraint, Constraints, MAX_GPU_MEMORY_GIB, MAX_GPUS_PER_NODE,
    MinValues, RawRequirement, Requirement, inclusive_bound, same_operator, sorted_unique,
};
use crate::catalog::{LabelScheme, canonical_names, selected_by};

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
        let mut left_raw: Vec<Constraint> = Vec::new();
        let mut constraints = loop {
            let claimable =
                |c: Constraint| (importing || c.is_set(prior)) && !left_raw.contains(&c);
            let constraints = decompose(live, scheme, claimable);
            let blamed: Vec<Constraint> = constraints
                .problems(scheme)
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

/// One pass: fills each claimable attribute from the first live requirement
/// it would generate.
fn decompose(
    live: &[Requirement],
    scheme: LabelScheme,
    claimable: impl Fn(Constraint) -> bool,
) -> Constraints {
    let generated_by = |r: &Requirement| {
        Constraint::ALL.into_iter().find(|&c| {
            claimable(c)
                && c.requirement(scheme)
                    .is_some_and(|(key, op)| key == r.key && same_operator(op, &r.operator))
        })
    };
    // Accelerator names depend on the memory bound, so find that first.
    let memory = live
        .iter()
        .filter(|r| generated_by(r) == Some(Constraint::MinMemory))
        .find_map(|r| memory_min_gib(r, scheme));
    let mut constraints = Constraints::default();
    let mut min_values = MinValues::default();
    let mut raw = Vec::new();
    for requirement in live {
        let claimed = generated_by(requirement).is_some_and(|constraint| {
            claim(
                &mut constraints,
                &mut min_values,
                constraint,
                requirement,
                memory,
                scheme,
            )
        });
        if !claimed {
            raw.push(RawRequirement::from(requirement.clone()));
        }
    }
    constraints.min_values = (!min_values.is_empty()).then_some(min_values);
    constraints.requirements = (!raw.is_empty()).then_some(raw);
    constraints
}

/// The GPU memory bound in GiB a memory requirement stands for, if it is
/// one `accelerator_memory_min_gib` can hold.
fn memory_min_gib(requirement: &Requirement, scheme: LabelScheme) -> Option<u32> {
    let unit = scheme.label_keys().memory?.unit;
    inclusive_bound(&requirement.operator, requirement.values.as_deref())
        .and_then(|bound| unit.gib_for_bound(bound))
        .filter(|gib| (1..=MAX_GPU_MEMORY_GIB).contains(gib))
}

/// Fills `constraint` from a live requirement if it is still empty and the
/// attribute can hold the values; says whether it did.
fn claim(
    constraints: &mut Constraints,
    min_values: &mut MinValues,
    constraint: Constraint,
    requirement: &Requirement,
    memory_min: Option<u32>,
    scheme: LabelScheme,
) -> bool {
    if constraint.is_set(constraints) {
        return false;
    }
    // accelerator_count's two requirements share one min_values field.
    let sibling = match constraint {
        Constraint::MinAccelerators => Some(Constraint::MaxAccelerators),
        Constraint::MaxAccelerators => Some(Constraint::MinAccelerators),
        _ => None,
    };
    if sibling.is_some_and(|s| s.is_set(constraints))
        && min_values.of(constraint) != requirement.min_values
    {
        return false;
    }
    let values = requirement.values.as_deref().unwrap_or_default();
    let count = inclusive_bound(&requirement.operator, requirement.values.as_deref())
        .filter(|n| (1..=MAX_GPUS_PER_NODE).contains(n));
    let set = |allowed: Option<&[&str]>| {
        let fits = !values.is_empty()
            && allowed.is_none_or(|allowed| values.iter().all(|v| allowed.contains(&v.as_str())));
        fits.then(|| sorted_unique(values))
    };
    let filled = match constraint {
        Constraint::Accelerators => selected_by(values, memory_min, scheme)
            .map(|models| {
                constraints.accelerators = Some(models.iter().map(|a| a.name.to_string()).collect())
            })
            .is_some(),
        Constraint::MinAccelerators | Constraint::MaxAccelerators => match count {
            Some(n) => {
                let range = constraints.accelerator_count.get_or_insert_default();
                if constraint == Constraint::MinAccelerators {
                    range.min = Some(n);
                } else {
                    range.max = Some(n);
                }
                true
            }
            None => false,
        },
        Constraint::MinMemory => {
            constraints.accelerator_memory_min_gib = memory_min_gib(requirement, scheme);
            constraints.accelerator_memory_min_gib.is_some()
        }
        Constraint::CapacityTypes => {
            fill(&mut constraints.capacity_types, set(Some(CAPACITY_TYPES)))
        }
        Constraint::InstanceFamilies => fill(&mut constraints.instance_families, set(None)),
        Constraint::Providers => fill(&mut constraints.providers, set(None)),
        Constraint::Zones => fill(&mut constraints.zones, set(None)),
        Constraint::Architectures => fill(&mut constraints.architectures, set(Some(ARCHITECTURES))),
    };
    if filled {
        *min_values.slot(constraint) = requirement.min_values;
    }
    filled
}

fn fill(field: &mut Option<Vec<String>>, values: Option<Vec<String>>) -> bool {
    let filled = values.is_some();
    *field = values;
    filled
}
