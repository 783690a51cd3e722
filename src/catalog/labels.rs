//! Label schemes: the well-known node labels each cloud's Karpenter puts on
//! GPU nodes, and which catalog models a set of label values selects. The
//! fleet resource turns GPU constraints into requirements on these labels
//! and reads them back.

use std::collections::BTreeSet;
use std::fmt;

use super::{Accelerator, all, lookup};

/// A family of well-known node labels that name the GPU model of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LabelScheme {
    /// Cloudfleet (CFKE): `cfke.io/accelerator-*`, upper-case names, memory in GiB.
    Cfke,
    /// Karpenter on AWS: `karpenter.k8s.aws/instance-gpu-*`, lower-case names, memory in MiB.
    Aws,
    /// Karpenter on Azure: `karpenter.azure.com/sku-gpu-*`, upper-case names, no memory label.
    Azure,
}

impl LabelScheme {
    /// Every label scheme, in declaration order.
    pub const ALL: [Self; 3] = [Self::Cfke, Self::Aws, Self::Azure];

    /// Every scheme's [`as_str`](Self::as_str) spelling, in [`ALL`](Self::ALL) order.
    pub const NAMES: &'static [&'static str] = &spellings!(Self);

    /// The configuration spelling: `cfke`, `aws` or `azure`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Cfke => "cfke",
            Self::Aws => "aws",
            Self::Azure => "azure",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling, ignoring ASCII case and surrounding
    /// whitespace.
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        Self::ALL
            .into_iter()
            .find(|scheme| value.eq_ignore_ascii_case(scheme.as_str()))
    }

    /// The label keys of this scheme, as Karpenter's AWS and Azure providers and Cloudfleet
    /// set them on nodes (Azure has no GPU memory label).
    pub const fn label_keys(self) -> LabelKeys {
        match self {
            Self::Cfke => LabelKeys {
                name: "cfke.io/accelerator-name",
                count: "cfke.io/accelerator-count",
                memory: Some(MemoryLabel {
                    key: "cfke.io/accelerator-memory",
                    unit: MemoryUnit::GiB,
                }),
            },
            Self::Aws => LabelKeys {
                name: "karpenter.k8s.aws/instance-gpu-name",
                count: "karpenter.k8s.aws/instance-gpu-count",
                memory: Some(MemoryLabel {
                    key: "karpenter.k8s.aws/instance-gpu-memory",
                    unit: MemoryUnit::MiB,
                }),
            },
            Self::Azure => LabelKeys {
                name: "karpenter.azure.com/sku-gpu-name",
                count: "karpenter.azure.com/sku-gpu-count",
                memory: None,
            },
        }
    }
}

impl LabelScheme {
    /// The scheme of the nodes a Karpenter node class's group stands for:
    /// Karpenter's AWS provider reconciles `karpenter.k8s.aws` node classes
    /// (EC2NodeClass) and labels nodes from EC2's data
    /// (karpenter-provider-aws, pkg/apis/v1/labels.go); its Azure provider
    /// reconciles `karpenter.azure.com` (AKSNodeClass) and labels them from
    /// the VM size (karpenter-provider-azure, pkg/apis/v1beta1/labels.go).
    /// `None` for any other group, whose provider the catalog does not know.
    pub fn of_node_class(group: &str) -> Option<Self> {
        match group {
            "karpenter.k8s.aws" => Some(Self::Aws),
            "karpenter.azure.com" => Some(Self::Azure),
            _ => None,
        }
    }

    /// The node labels only this scheme's nodes carry and requirements use:
    /// the GPU name, count and memory, and the instance family.
    pub fn own_labels(self) -> Vec<&'static str> {
        let keys = self.label_keys();
        [
            Some(keys.name),
            Some(keys.count),
            keys.memory.map(|m| m.key),
        ]
        .into_iter()
        .flatten()
        .chain([self.instance_family_key()])
        .collect()
    }

    /// The label naming the GPU's maker, where the scheme's cloud sells GPUs
    /// of other makers than NVIDIA alongside a memory label that would
    /// select them: EC2's g4ad has AMD GPUs (karpenter-provider-aws,
    /// pkg/providers/instancetype/types.go, labels the maker from EC2's
    /// GpuInfo in lower case: `nvidia`, `amd`).
    pub const fn gpu_manufacturer_key(self) -> Option<&'static str> {
        match self {
            Self::Aws => Some("karpenter.k8s.aws/instance-gpu-manufacturer"),
            Self::Cfke | Self::Azure => None,
        }
    }

    /// Whether the scheme's cloud sells fractional GPUs, instance types
    /// with a part of one GPU that carry its name but a GPU count of 0 and
    /// no `nvidia.com/gpu`: EC2's G6f and Gr6f (an eighth to a half of an
    /// L4; karpenter-provider-aws, pkg/providers/instancetype/types.go,
    /// labels them from EC2's GpuInfo, whose count is 0).
    pub const fn sells_fractional_gpus(self) -> bool {
        matches!(self, Self::Aws)
    }
}

impl fmt::Display for LabelScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The node label keys of one [`LabelScheme`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LabelKeys {
    /// Key of the GPU model label; its values come from [`Accelerator::label_value`].
    pub name: &'static str,
    /// Key of the label holding the number of GPUs per node.
    pub count: &'static str,
    /// Key and unit of the per-GPU memory label, if the scheme has one.
    pub memory: Option<MemoryLabel>,
}

/// A per-GPU memory label: its key and the unit of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemoryLabel {
    /// The label key.
    pub key: &'static str,
    /// The unit of the label value; pass it to [`Accelerator::memory_in`].
    pub unit: MemoryUnit,
}

/// The unit of a memory label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryUnit {
    /// Gibibytes (Cloudfleet's `cfke.io/accelerator-memory`).
    GiB,
    /// Mebibytes (AWS's `karpenter.k8s.aws/instance-gpu-memory`).
    MiB,
}

impl LabelScheme {
    /// The label naming a node's instance family under this scheme.
    pub const fn instance_family_key(self) -> &'static str {
        match self {
            Self::Cfke => "cfke.io/instance-family",
            Self::Aws => "karpenter.k8s.aws/instance-family",
            Self::Azure => "karpenter.azure.com/sku-family",
        }
    }

    /// Whether `key` is one of this scheme's GPU labels (name, count or memory).
    pub fn is_gpu_label(self, key: &str) -> bool {
        let keys = self.label_keys();
        key == keys.name || key == keys.count || keys.memory.is_some_and(|m| m.key == key)
    }
}

impl MemoryUnit {
    /// The memory label value that selects GPUs with at least `gib` GiB.
    /// GiB labels hold nominal sizes. AWS's MiB figures are below nominal ×
    /// 1024 for some models (an L4's 24 GB are 22888 MiB), so the MiB bound
    /// is the smallest figure among catalog models of at least `gib` GiB,
    /// and at most `gib` × 1024.
    pub fn bound(self, gib: u32) -> u32 {
        match self {
            Self::GiB => gib,
            Self::MiB => all()
                .iter()
                .filter(|a| a.memory_gib >= gib)
                .map(Accelerator::memory_mib)
                .fold(gib.saturating_mul(1024), u32::min),
        }
    }

    /// The memory label value that selects GPUs with at most `gib` GiB: for
    /// MiB, `gib` × 1024 or, where a catalog model of more GiB reports no
    /// more MiB than that, just below its figure.
    pub fn upper_bound(self, gib: u32) -> u32 {
        match self {
            Self::GiB => gib,
            Self::MiB => all()
                .iter()
                .filter(|a| a.memory_gib > gib)
                .map(|a| a.memory_mib() - 1)
                .fold(gib.saturating_mul(1024), u32::min),
        }
    }

    /// The GiB figure [`upper_bound`](Self::upper_bound) maps to `bound`, if
    /// any; the largest one where several do.
    pub fn gib_for_upper_bound(self, bound: u32) -> Option<u32> {
        match self {
            Self::GiB => Some(bound),
            // A model's own figure, a multiple of 1024, or just below the
            // next model's figure (a GiB short of its size).
            Self::MiB => all()
                .iter()
                .filter_map(|a| {
                    let mib = a.memory_mib();
                    (mib == bound)
                        .then_some(a.memory_gib)
                        .or((mib - 1 == bound).then(|| a.memory_gib - 1))
                })
                .chain(bound.is_multiple_of(1024).then_some(bound / 1024))
                .filter(|&gib| self.upper_bound(gib) == bound)
                .max(),
        }
    }

    /// The GiB figure [`bound`](Self::bound) maps to `bound`, if any; the
    /// largest one where several do, as users write nominal sizes (`24`, not
    /// `23`, for 22888 MiB).
    pub fn gib_for_bound(self, bound: u32) -> Option<u32> {
        match self {
            Self::GiB => Some(bound),
            Self::MiB => all()
                .iter()
                .filter(|a| a.memory_mib() == bound)
                .map(|a| a.memory_gib)
                .chain(bound.is_multiple_of(1024).then_some(bound / 1024))
                .filter(|&gib| self.bound(gib) == bound)
                .max(),
        }
    }
}

/// Bounds on the memory per GPU, in GiB, as NVIDIA states it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRange {
    /// At least this many GiB.
    pub min: Option<u32>,
    /// At most this many GiB.
    pub max: Option<u32>,
}

impl MemoryRange {
    /// Whether `accelerator`'s memory is in the range.
    pub fn holds(self, accelerator: &Accelerator) -> bool {
        self.min.is_none_or(|min| accelerator.memory_gib >= min)
            && self.max.is_none_or(|max| accelerator.memory_gib <= max)
    }
}

/// The catalog models that GPU name label `values` select under `scheme`
/// together with memory bounds; `None` when a value selects none.
pub fn selected_by(
    values: &[String],
    memory: MemoryRange,
    scheme: LabelScheme,
) -> Option<Vec<&'static Accelerator>> {
    let selects =
        |a: &Accelerator, value: &str| a.label_value(scheme) == Some(value) && memory.holds(a);
    let each_selects = values.iter().all(|v| all().iter().any(|a| selects(a, v)));
    each_selects.then(|| {
        all()
            .iter()
            .filter(|a| values.iter().any(|v| selects(a, v)))
            .collect()
    })
}

/// The canonical names of accelerator names; `None` if one is unknown.
pub fn canonical_names(names: &[String]) -> Option<BTreeSet<&'static str>> {
    names
        .iter()
        .map(|name| lookup(name).ok().map(|a| a.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_bounds_select_exactly_the_nominal_sizes() {
        for gib in 1..=300 {
            for unit in [MemoryUnit::GiB, MemoryUnit::MiB] {
                let bound = unit.bound(gib);
                let by_label: Vec<&str> = all()
                    .iter()
                    .filter(|a| a.memory_in(unit) >= bound)
                    .map(|a| a.name)
                    .collect();
                let nominal: Vec<&str> = all()
                    .iter()
                    .filter(|a| a.memory_gib >= gib)
                    .map(|a| a.name)
                    .collect();
                assert_eq!(by_label, nominal, "{gib} GiB in {unit:?}");
                let back = unit.gib_for_bound(bound).unwrap();
                assert_eq!(unit.bound(back), bound);
                let upper = unit.upper_bound(gib);
                let at_most = |by: &dyn Fn(&Accelerator) -> bool| -> Vec<&str> {
                    all().iter().filter(|a| by(a)).map(|a| a.name).collect()
                };
                assert_eq!(
                    at_most(&|a| a.memory_in(unit) <= upper),
                    at_most(&|a| a.memory_gib <= gib),
                    "at most {gib} GiB in {unit:?}"
                );
                let back = unit.gib_for_upper_bound(upper).unwrap();
                assert_eq!(unit.upper_bound(back), upper);
            }
        }
        assert_eq!(MemoryUnit::MiB.bound(24), 22_888);
        assert_eq!(MemoryUnit::MiB.upper_bound(40), 40_960);
        for accelerator in all() {
            let gib = Some(accelerator.memory_gib);
            let bound = MemoryUnit::MiB.bound(accelerator.memory_gib);
            assert_eq!(MemoryUnit::MiB.gib_for_bound(bound), gib);
            let upper = MemoryUnit::MiB.upper_bound(accelerator.memory_gib);
            assert_eq!(MemoryUnit::MiB.gib_for_upper_bound(upper), gib);
        }
    }
}
