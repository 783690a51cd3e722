//! The fleet's node constraints as one table, [`CONSTRAINTS`]: for each,
//! its attribute and schema, the label and operator of the requirement it
//! generates under each label scheme, and where its value lives in
//! [`Constraints`]. The schema's constraint attributes and `min_values`,
//! the requirement each constraint generates ([`Constraint::generate`])
//! and import are all derived from it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::requirements::{RawRequirement, Requirement};
use super::resolved::Resolved;
use crate::catalog::{self, LabelScheme, MemoryRange, MemoryUnit};
use crate::cluster::names::label_value;
use crate::framework::schema::Attr;
use crate::framework::validators::{
    Validator, at_least_one_of, each, integer_between, not_empty, one_of, quoted_list,
};
use crate::protocol::schema::Nesting;
use crate::protocol::{AttributePath, Diagnostic, Value};

pub(super) const CAPACITY_TYPE_LABEL: &str = "karpenter.sh/capacity-type";
pub(super) const CAPACITY_TYPES: &[&str] = &["on-demand", "spot", "reserved"];
pub(super) const ARCHITECTURES: &[&str] = &["amd64", "arm64"];
pub(super) const MAX_GPUS_PER_NODE: u32 = 1024;
pub(super) const MAX_GPU_MEMORY_GIB: u32 = 10_000;
/// Above any EC2 instance type's bandwidth (p6-b300.48xlarge has 6400 Gbps).
pub(super) const MAX_NETWORK_GBPS: u32 = 100_000;
/// Karpenter's bound on `minValues`.
pub(super) const MAX_MIN_VALUES: u32 = 50;
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const ARCH_LABEL: &str = "kubernetes.io/arch";
const CFKE_PROVIDER_LABEL: &str = "cfke.io/provider";
/// An EC2 instance type's network bandwidth in Mbps, as karpenter-provider-aws
/// labels it from its table of EC2's figures (pkg/providers/instancetype/types.go,
/// zz_generated.bandwidth.go): p5.48xlarge has 3200000.
const AWS_NETWORK_BANDWIDTH_LABEL: &str = "karpenter.k8s.aws/instance-network-bandwidth";

/// What nodes the fleet may launch: the attributes that become
/// `spec.template.spec.requirements`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Constraints {
    pub(super) accelerators: Option<Vec<String>>,
    pub(super) accelerator_count: Option<GpuCount>,
    pub(super) accelerator_memory_min_gib: Option<u32>,
    pub(super) accelerator_memory_max_gib: Option<u32>,
    pub(super) capacity_types: Option<Vec<String>>,
    pub(super) instance_families: Option<Vec<String>>,
    pub(super) providers: Option<Vec<String>>,
    pub(super) zones: Option<Vec<String>>,
    pub(super) architectures: Option<Vec<String>>,
    pub(super) network_bandwidth_min_gbps: Option<u32>,
    pub(super) min_values: Option<MinValues>,
    pub(super) requirements: Option<Vec<RawRequirement>>,
}

impl Constraints {
    /// The GPU memory bounds.
    pub(super) fn memory_range(&self) -> MemoryRange {
        MemoryRange {
            min: self.accelerator_memory_min_gib,
            max: self.accelerator_memory_max_gib,
        }
    }
}

/// GPUs per node.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct GpuCount {
    pub(super) min: Option<u32>,
    pub(super) max: Option<u32>,
}

/// One node constraint: an attribute, or one bound of `accelerator_count`,
/// and the requirement it generates.
#[derive(Debug)]
pub(super) struct Constraint {
    /// As configurations spell it: `zones`, `accelerator_count.min`.
    pub(super) attribute: &'static str,
    /// Its top-level attribute, also its field of `min_values`.
    pub(super) field: &'static str,
    /// The schema of `field`; the bounds of `accelerator_count` share one.
    schema: fn() -> Attr,
    /// The label the requirement is on under a scheme; `None` without one.
    label: fn(LabelScheme) -> Option<&'static str>,
    /// What that label tells, for the error where a scheme has none.
    pub(super) label_tells: &'static str,
    pub(super) operator: &'static str,
    pub(super) slot: Slot,
}

/// Where a constraint's value lives in [`Constraints`], and its kind.
#[derive(Debug)]
pub(super) enum Slot {
    /// `accelerators`: catalog models, as the scheme's GPU name values;
    /// which values select them depends on the GPU memory bounds.
    Models,
    /// A whole number, bounding the label from below (`Gt`) or above
    /// (`Lt`) in the label's unit.
    Bound {
        get: fn(&Constraints) -> Option<u32>,
        set: fn(&mut Constraints, u32),
        unit: BoundUnit,
        /// The bound on the other side, which this one must not pass.
        upper: Option<Upper>,
    },
    /// Label values, from `allowed` where it is given.
    Values {
        get: fn(&Constraints) -> Option<&Vec<String>>,
        set: fn(&mut Constraints, Vec<String>),
        allowed: Option<&'static [&'static str]>,
    },
}

/// The upper bound a lower [`Slot::Bound`] must not pass, and the title
/// of the error when it does.
#[derive(Debug)]
pub(super) struct Upper {
    pub(super) attribute: &'static str,
    pub(super) title: &'static str,
}

/// What a [`Slot::Bound`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BoundUnit {
    /// GPUs per node, as the count label holds them.
    Gpus,
    /// GiB per GPU, as users write it (nominal sizes), held by the memory
    /// label in the scheme's unit.
    GpuMemoryGib,
    /// Gbps of network bandwidth per node, held by the label in Mbps.
    NetworkGbps,
}

/// Every node constraint, in the order requirements are generated.
/// Bounds are written `Gt` and `Lt` (one past the bound): the NodePool CRD
/// accepts `Gte` and `Lte` only since Karpenter v1.9, `Gt` and `Lt` in
/// every v1 release (sigs.k8s.io/karpenter,
/// pkg/apis/crds/karpenter.sh_nodepools.yaml).
pub(super) static CONSTRAINTS: [Constraint; 11] = [
    Constraint {
        attribute: "accelerators",
        field: "accelerators",
        schema: || {
            set_of("accelerators", catalog::known_name())
                .describe("GPU models the nodes may have, e.g. `[\"H100\"]`: names from the accelerator catalog (see `gpufleet_accelerators`), in any case.")
        },
        label: |s| Some(s.label_keys().name),
        label_tells: "GPU model",
        operator: "In",
        slot: Slot::Models,
    },
    Constraint {
        attribute: "accelerator_count.min",
        field: "accelerator_count",
        schema: gpu_count_schema,
        label: |s| Some(s.label_keys().count),
        label_tells: "GPU count",
        operator: "Gt",
        slot: Slot::Bound {
            get: |c| c.accelerator_count.as_ref().and_then(|n| n.min),
            set: |c, n| c.accelerator_count.get_or_insert_default().min = Some(n),
            unit: BoundUnit::Gpus,
            upper: Some(Upper {
                attribute: "accelerator_count.max",
                title: "Invalid accelerator count",
            }),
        },
    },
    Constraint {
        attribute: "accelerator_count.max",
        field: "accelerator_count",
        schema: gpu_count_schema,
        label: |s| Some(s.label_keys().count),
        label_tells: "GPU count",
        operator: "Lt",
        slot: Slot::Bound {
            get: |c| c.accelerator_count.as_ref().and_then(|n| n.max),
            set: |c, n| c.accelerator_count.get_or_insert_default().max = Some(n),
            unit: BoundUnit::Gpus,
            upper: None,
        },
    },
    Constraint {
        attribute: "accelerator_memory_min_gib",
        field: "accelerator_memory_min_gib",
        schema: || {
            Attr::number("accelerator_memory_min_gib")
                .optional()
                .validate(integer_between(1, MAX_GPU_MEMORY_GIB.into(), ""))
                .describe("Least memory per GPU in GiB, as NVIDIA states it (an L4 has 24). Without `accelerators`, the aws label scheme also requires NVIDIA GPUs (EC2 sells AMD's too). Not with the azure label scheme.")
        },
        label: |s| s.label_keys().memory.map(|m| m.key),
        label_tells: "GPU memory",
        operator: "Gt",
        slot: Slot::Bound {
            get: |c| c.accelerator_memory_min_gib,
            set: |c, gib| c.accelerator_memory_min_gib = Some(gib),
            unit: BoundUnit::GpuMemoryGib,
            upper: Some(Upper {
                attribute: "accelerator_memory_max_gib",
                title: "Invalid accelerator memory",
            }),
        },
    },
    Constraint {
        attribute: "accelerator_memory_max_gib",
        field: "accelerator_memory_max_gib",
        schema: || {
            Attr::number("accelerator_memory_max_gib")
                .optional()
                .validate(integer_between(1, MAX_GPU_MEMORY_GIB.into(), ""))
                .describe("Most memory per GPU in GiB, as NVIDIA states it. Tells apart models a label scheme names alike: on aws, `accelerators = [\"A100-40GB\"]` with `accelerator_memory_max_gib = 40` (EC2 labels both A100s `a100`). Not with the azure label scheme.")
        },
        label: |s| s.label_keys().memory.map(|m| m.key),
        label_tells: "GPU memory",
        operator: "Lt",
        slot: Slot::Bound {
            get: |c| c.accelerator_memory_max_gib,
            set: |c, gib| c.accelerator_memory_max_gib = Some(gib),
            unit: BoundUnit::GpuMemoryGib,
            upper: None,
        },
    },
    Constraint {
        attribute: "capacity_types",
        field: "capacity_types",
        schema: || {
            set_of("capacity_types", one_of(CAPACITY_TYPES))
                .describe("`on-demand`, `spot` and/or `reserved`.")
        },
        label: |_| Some(CAPACITY_TYPE_LABEL),
        label_tells: "capacity type",
        operator: "In",
        slot: Slot::Values {
            get: |c| c.capacity_types.as_ref(),
            set: |c, v| c.capacity_types = Some(v),
            allowed: Some(CAPACITY_TYPES),
        },
    },
    Constraint {
        attribute: "instance_families",
        field: "instance_families",
        schema: || {
            set_of("instance_families", label_value()).describe(
                "Instance families, e.g. `[\"p5\"]` (the scheme's instance family label).",
            )
        },
        label: |s| Some(s.instance_family_key()),
        label_tells: "instance family",
        operator: "In",
        slot: Slot::Values {
            get: |c| c.instance_families.as_ref(),
            set: |c, v| c.instance_families = Some(v),
            allowed: None,
        },
    },
    Constraint {
        attribute: "providers",
        field: "providers",
        schema: || {
            set_of("providers", label_value())
                .describe("Clouds, as `cfke.io/provider` values (`aws`, `gcp`, `hetzner`); cfke label scheme only.")
        },
        label: |s| (s == LabelScheme::Cfke).then_some(CFKE_PROVIDER_LABEL),
        label_tells: "cloud provider",
        operator: "In",
        slot: Slot::Values {
            get: |c| c.providers.as_ref(),
            set: |c, v| c.providers = Some(v),
            allowed: None,
        },
    },
    Constraint {
        attribute: "zones",
        field: "zones",
        schema: || {
            set_of("zones", label_value()).describe("Zones (`topology.kubernetes.io/zone`).")
        },
        label: |_| Some(ZONE_LABEL),
        label_tells: "zone",
        operator: "In",
        slot: Slot::Values {
            get: |c| c.zones.as_ref(),
            set: |c, v| c.zones = Some(v),
            allowed: None,
        },
    },
    Constraint {
        attribute: "architectures",
        field: "architectures",
        schema: || {
            set_of("architectures", one_of(ARCHITECTURES)).describe("`amd64` and/or `arm64`.")
        },
        label: |_| Some(ARCH_LABEL),
        label_tells: "architecture",
        operator: "In",
        slot: Slot::Values {
            get: |c| c.architectures.as_ref(),
            set: |c, v| c.architectures = Some(v),
            allowed: Some(ARCHITECTURES),
        },
    },
    Constraint {
        attribute: "network_bandwidth_min_gbps",
        field: "network_bandwidth_min_gbps",
        schema: || {
            Attr::number("network_bandwidth_min_gbps")
                .optional()
                .validate(integer_between(1, MAX_NETWORK_GBPS.into(), ""))
                .describe("Least network bandwidth per node in Gbps, as EC2 states it for the instance type (p5.48xlarge: 3200). aws label scheme only.")
        },
        label: |s| (s == LabelScheme::Aws).then_some(AWS_NETWORK_BANDWIDTH_LABEL),
        label_tells: "network bandwidth",
        operator: "Gt",
        slot: Slot::Bound {
            get: |c| c.network_bandwidth_min_gbps,
            set: |c, gbps| c.network_bandwidth_min_gbps = Some(gbps),
            unit: BoundUnit::NetworkGbps,
            upper: None,
        },
    },
];

fn set_of(name: &'static str, validator: Validator) -> Attr {
    Attr::string_set(name)
        .optional()
        .validate(not_empty())
        .validate(each(validator))
}

fn gpu_count_schema() -> Attr {
    let gpus_per_node = |least| integer_between(least, MAX_GPUS_PER_NODE.into(), "");
    Attr::nested(
        "accelerator_count",
        Nesting::Single,
        vec![
            Attr::number("min").optional().validate(gpus_per_node(0)),
            Attr::number("max").optional().validate(gpus_per_node(1)),
        ],
    )
    .optional()
    .validate_object(at_least_one_of(&["min", "max"]))
    .describe("Whole GPUs per node, e.g. `{ min = 8, max = 8 }`. Without `min`, a fleet that asks for GPUs (a model or GPU memory) gets whole GPUs only: where the label scheme's cloud also sells fractional GPUs (aws: G6f and Gr6f, part of one L4 and no `nvidia.com/gpu`), its NodePool requires a GPU count other than 0. `min = 0` lets fractional GPUs in. Without `accelerators`, bounds other than `min = 0` alone make the aws label scheme also require NVIDIA GPUs (EC2 sells AMD's too).")
}

/// The top-level constraint attributes, each once, in table order: also
/// the fields of `min_values`.
pub(super) fn fields() -> Vec<&'static str> {
    let mut seen = BTreeSet::new();
    CONSTRAINTS
        .iter()
        .map(|c| c.field)
        .filter(|field| seen.insert(*field))
        .collect()
}

/// What the NodePool's requirements follow from: the constraint attributes
/// ([`fields`]), `min_values`, `requirements` and the label scheme.
pub(super) const REQUIREMENT_INPUTS: &[&str] = &[
    "accelerators",
    "accelerator_count",
    "accelerator_memory_min_gib",
    "accelerator_memory_max_gib",
    "capacity_types",
    "instance_families",
    "providers",
    "zones",
    "architectures",
    "network_bandwidth_min_gbps",
    "min_values",
    "requirements",
    "label_scheme",
];

/// The schema of the constraint attributes and of `min_values`.
pub(super) fn attributes() -> Vec<Attr> {
    let mut seen = BTreeSet::new();
    let min_values = || integer_between(1, MAX_MIN_VALUES.into(), "");
    let fields = fields();
    CONSTRAINTS
        .iter()
        .filter(|c| seen.insert(c.field))
        .map(|c| (c.schema)())
        .chain([Attr::nested(
            "min_values",
            Nesting::Single,
            fields
                .iter()
                .map(|&name| Attr::number(name).optional().validate(min_values()))
                .collect(),
        )
        .optional()
        .validate_object(at_least_one_of(&fields))
        .describe("Karpenter's `minValues` for the requirement an attribute above generates: at least this many distinct values of its label among the instance types Karpenter may choose from, e.g. `{ instance_families = 3 }` for flexibility with spot. `accelerator_count` applies to both of its bounds.")])
        .collect()
}

impl PartialEq for Constraint {
    fn eq(&self, other: &Self) -> bool {
        self.attribute == other.attribute
    }
}

impl Constraint {
    /// The constraint configurations spell `attribute`.
    pub(super) fn named(attribute: &str) -> &'static Constraint {
        CONSTRAINTS
            .iter()
            .find(|c| c.attribute == attribute)
            .expect("a constraint of the table")
    }

    pub(super) fn path(&self) -> AttributePath {
        self.attribute
            .split('.')
            .fold(AttributePath::root(), |path, name| path.join_attr(name))
    }

    /// The requirement key and operator under `scheme`; `None` when the
    /// scheme has no label for this constraint.
    pub(super) fn requirement(&self, scheme: LabelScheme) -> Option<(&'static str, &'static str)> {
        (self.label)(scheme).map(|key| (key, self.operator))
    }

    /// Whether `key` is a label only some schemes generate requirements on,
    /// and `scheme` is one of them.
    pub(super) fn is_scheme_label(key: &str, scheme: LabelScheme) -> bool {
        let generated_under =
            |s: LabelScheme| CONSTRAINTS.iter().any(|c| (c.label)(s) == Some(key));
        generated_under(scheme) && !LabelScheme::ALL.into_iter().all(generated_under)
    }

    /// The schemes with a label for this constraint.
    pub(super) fn schemes(&self) -> Vec<LabelScheme> {
        LabelScheme::ALL
            .into_iter()
            .filter(|&s| (self.label)(s).is_some())
            .collect()
    }

    /// Whether `constraints` sets this constraint's attribute.
    pub(super) fn is_set(&self, constraints: &Constraints) -> bool {
        match &self.slot {
            Slot::Models => constraints.accelerators.is_some(),
            Slot::Bound { get, .. } => get(constraints).is_some(),
            Slot::Values { get, .. } => get(constraints).is_some(),
        }
    }

    /// Whether the requirement this constraint generates depends on the
    /// value of `other` (GPU names select models by memory bound too).
    pub(super) fn depends_on(&self, other: &Constraint) -> bool {
        matches!(self.slot, Slot::Models) && other.bounds_gpu_memory()
    }

    /// Whether this is a bound on GPU memory.
    pub(super) fn bounds_gpu_memory(&self) -> bool {
        matches!(
            self.slot,
            Slot::Bound {
                unit: BoundUnit::GpuMemoryGib,
                ..
            }
        )
    }

    /// Whether this is a bound on the GPUs per node or their memory.
    pub(super) fn bounds_gpus(&self) -> bool {
        matches!(
            self.slot,
            Slot::Bound {
                unit: BoundUnit::Gpus | BoundUnit::GpuMemoryGib,
                ..
            }
        )
    }

    /// The upper bound this lower bound passes in `constraints`, with the
    /// error saying so.
    pub(super) fn passes_upper(
        &self,
        constraints: &Constraints,
    ) -> Option<(&'static Constraint, Diagnostic)> {
        let (upper, upper_constraint) = self.upper()?;
        let (min, max) = (
            self.bound(constraints)?,
            upper_constraint.bound(constraints)?,
        );
        (min > max).then(|| {
            (
                upper_constraint,
                self.passing(upper, min.into(), max.into()),
            )
        })
    }

    /// The same check on a configuration, at validation.
    pub(super) fn passes_upper_in(&self, config: &Value) -> Option<Diagnostic> {
        let (upper, _) = self.upper()?;
        let at = |attribute: &str| {
            attribute
                .split('.')
                .fold(config, |value, name| value.attr(name))
                .as_i64()
        };
        let (min, max) = (at(self.attribute)?, at(upper.attribute)?);
        (min > max).then(|| self.passing(upper, min, max))
    }

    /// A bound's value in `constraints`.
    fn bound(&self, constraints: &Constraints) -> Option<u32> {
        match &self.slot {
            Slot::Bound { get, .. } => get(constraints),
            _ => None,
        }
    }

    fn upper(&self) -> Option<(&Upper, &'static Constraint)> {
        match &self.slot {
            Slot::Bound {
                upper: Some(upper), ..
            } => Some((upper, Constraint::named(upper.attribute))),
            _ => None,
        }
    }

    fn passing(&self, upper: &Upper, min: i64, max: i64) -> Diagnostic {
        Diagnostic::error(
            upper.title,
            format!(
                "{} ({min}) is greater than {} ({max}).",
                self.attribute, upper.attribute
            ),
        )
        .at(self.path())
    }

    /// The constraints sharing this one's `min_values` field.
    pub(super) fn siblings(&self) -> impl Iterator<Item = &'static Constraint> {
        CONSTRAINTS
            .iter()
            .filter(move |c| c.field == self.field && *c != self)
    }

    /// The requirement this constraint generates from `constraints`, with
    /// catalog names as `resolved` has them and its `minValues`: `None`
    /// when its attribute is unset, an error when the scheme has no label
    /// for it or its value cannot be expressed.
    pub(super) fn generate(
        &self,
        constraints: &Constraints,
        resolved: &Resolved,
    ) -> Result<Option<Requirement>, Diagnostic> {
        let Some(values) = self.values(constraints, resolved)? else {
            return Ok(None);
        };
        let (key, operator) = self
            .requirement(resolved.scheme)
            .ok_or_else(|| self.inexpressible(resolved.scheme))?;
        let min_values = constraints.min_values.as_ref();
        Ok(Some(Requirement {
            key: key.to_string(),
            operator: operator.to_string(),
            values: Some(values),
            min_values: min_values.and_then(|m| m.of(self)),
        }))
    }

    /// The values of the requirement this constraint generates, if it is set.
    fn values(
        &self,
        constraints: &Constraints,
        resolved: &Resolved,
    ) -> Result<Option<Vec<String>>, Diagnostic> {
        Ok(match &self.slot {
            Slot::Models => match &constraints.accelerators {
                Some(_) => Some(resolved.gpu_names.clone()?),
                None => None,
            },
            // A lower bound of 0 bounds nothing (`accelerator_count.min = 0`
            // lets fractional GPUs in, see `Implied::WholeGpus`); validation keeps
            // the others at 1 or more, so `Gt` stays at 0 or more, as the
            // CRD requires.
            Slot::Bound { get, unit, .. } => get(constraints).filter(|&n| n > 0).map(|n| {
                let bound = unit.label_bound(n, resolved.scheme, self.operator == "Lt");
                let past = if self.operator == "Gt" {
                    bound - 1
                } else {
                    bound + 1
                };
                vec![past.to_string()]
            }),
            Slot::Values { get, .. } => get(constraints).map(|v| sorted_unique(v)),
        })
    }

    fn inexpressible(&self, scheme: LabelScheme) -> Diagnostic {
        let schemes: Vec<&str> = self
            .schemes()
            .into_iter()
            .map(LabelScheme::as_str)
            .collect();
        Diagnostic::error(
            "Not expressible with this label scheme",
            format!(
                "`{}` cannot be expressed with the {scheme} label scheme: it has no {} label. \
                 Remove it, or set `label_scheme` to one that has: {}.",
                self.attribute,
                self.label_tells,
                quoted_list(&schemes)
            ),
        )
        .at(self.path())
    }
}

/// Label values as a requirement lists them: sorted, each once.
pub(super) fn sorted_unique(values: &[String]) -> Vec<String> {
    values
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

impl BoundUnit {
    /// The inclusive label value a lower (or, `at_most`, upper) bound of
    /// `n` stands for under `scheme`.
    pub(super) fn label_bound(self, n: u32, scheme: LabelScheme, at_most: bool) -> u32 {
        match self {
            Self::Gpus => n,
            // Without a memory label the value goes unused: that is an error.
            Self::GpuMemoryGib if at_most => memory_unit(scheme).upper_bound(n),
            Self::GpuMemoryGib => memory_unit(scheme).bound(n),
            Self::NetworkGbps => n * 1000,
        }
    }

    /// The lower (or, `at_most`, upper) bound an inclusive label value
    /// stands for under `scheme`, if the attribute can hold it.
    pub(super) fn bound_for_label(
        self,
        value: u32,
        scheme: LabelScheme,
        at_most: bool,
    ) -> Option<u32> {
        match self {
            Self::Gpus => Some(value).filter(|n| (1..=MAX_GPUS_PER_NODE).contains(n)),
            Self::GpuMemoryGib => {
                scheme.label_keys().memory?;
                let unit = memory_unit(scheme);
                if at_most {
                    unit.gib_for_upper_bound(value)
                } else {
                    unit.gib_for_bound(value)
                }
                .filter(|gib| (1..=MAX_GPU_MEMORY_GIB).contains(gib))
            }
            Self::NetworkGbps => Some(value / 1000)
                .filter(|gbps| value.is_multiple_of(1000) && (1..=MAX_NETWORK_GBPS).contains(gbps)),
        }
    }
}

fn memory_unit(scheme: LabelScheme) -> MemoryUnit {
    scheme
        .label_keys()
        .memory
        .map_or(MemoryUnit::GiB, |label| label.unit)
}

/// Karpenter's `minValues` for the requirements the constraint attributes
/// generate, by [`fields`] name: at least this many distinct label values
/// among the instance types a node may be launched from.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct MinValues(BTreeMap<&'static str, u32>);

impl MinValues {
    /// The `minValues` of `constraint`'s requirement.
    pub(super) fn of(&self, constraint: &Constraint) -> Option<u32> {
        self.0.get(constraint.field).copied()
    }

    pub(super) fn set(&mut self, constraint: &Constraint, min: Option<u32>) {
        match min {
            Some(min) => self.0.insert(constraint.field, min),
            None => self.0.remove(constraint.field),
        };
    }

    /// Whether any `minValues` is set.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// As the `min_values` attribute holds it: every field, null when unset.
impl Serialize for MinValues {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let all: BTreeMap<&str, Option<u32>> = fields()
            .into_iter()
            .map(|field| (field, self.0.get(field).copied()))
            .collect();
        all.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MinValues {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = BTreeMap::<String, Option<u32>>::deserialize(deserializer)?;
        Ok(Self(
            fields()
                .into_iter()
                .filter_map(|field| read.get(field).copied().flatten().map(|n| (field, n)))
                .collect(),
        ))
    }
}
