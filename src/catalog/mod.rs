//! Built-in catalog of NVIDIA data-centre and inference GPUs.
//!
//! The fleet resource, the accelerator data source and the GPU sharing resource use it to turn
//! a model name typed by a user (`"a100 80gb"`, `"H100"`, `"rtx pro 6000"`) into the node
//! labels each cloud's Karpenter understands, and to check which sharing modes (time-slicing,
//! MPS, MIG) and MIG profiles the model supports.
//!
//! # Names
//!
//! Canonical names are NVIDIA's model names in upper case with dashes for spaces (`T4`,
//! `L40S`, `GH200`, `RTX-PRO-6000`). When the catalog holds more than one memory size of a
//! model, every size carries a `-<N>GB` suffix (`A100-40GB`/`A100-80GB`,
//! `V100-16GB`/`V100-32GB`) and the bare model name (`A100`) is rejected as ambiguous. A
//! model with a single entry keeps its bare name even where NVIDIA sells sizes the catalog
//! does not cover: `H100` is the 80 GB SXM/PCIe part, `GH200` the 96 GB one, `H20` the 96 GB
//! one.
//!
//! [`lookup`] ignores ASCII case, treats spaces, underscores and dashes alike (it drops them),
//! skips a leading `NVIDIA` or `Tesla`, and also accepts each model's
//! [`aliases`](Accelerator::aliases), which include the product names GPU Feature Discovery
//! reports (`NVIDIA-A100-SXM4-80GB`).
//!
//! # Figures
//!
//! Memory is NVIDIA's nominal per-GPU figure from the product datasheets. NVIDIA writes "GB";
//! the rest of the ecosystem (MIG profile names, `cfke.io/accelerator-memory`, EC2's
//! `SizeInMiB` = GB × 1024 for most models) treats it as GiB, and so does this catalog.
//! Compute capabilities are from NVIDIA's CUDA GPU list. The sharing rules: time-slicing
//! works on any GPU the device plugin manages; CUDA MPS needs compute capability 3.5 (NVIDIA's
//! Multi-Process Service documentation, which also says that only from Volta on each client
//! has its own address space and a provisioned share of the GPU), and the device plugin's MPS
//! control daemon serves at most 48 clients per GPU from compute capability 7.5 on and 16
//! below (NVIDIA k8s-device-plugin, cmd/mps-control-daemon/mps/device.go; its check is
//! named `isAtLeastVolta` but compares with 7.5); MIG is available only on the parts listed
//! with profiles. The per-column sources are listed in the `models` module.

/// The `as_str` spellings of an enum's `ALL` variants, as a constant array.
macro_rules! spellings {
    ($enum:ty) => {{
        let mut names = [""; <$enum>::ALL.len()];
        let mut i = 0;
        while i < names.len() {
            names[i] = <$enum>::ALL[i].as_str();
            i += 1;
        }
        names
    }};
}

mod advertised;
mod interconnect;
mod labels;
mod lookup;
mod models;
mod parts;

pub use advertised::{
    GPU_RESOURCE, MIG_BALANCED, MIG_DISABLED, MIG_ENABLED, MigLayout, SHARED_SUFFIX,
    is_known_layout, mig_resource, shared_resource, single_profile_layout,
};
pub use interconnect::{EFA_RESOURCE, ec2_efa_interfaces};
pub use labels::{
    LabelKeys, LabelScheme, MemoryLabel, MemoryRange, MemoryUnit, canonical_names, selected_by,
};
pub use lookup::{UnknownAccelerator, known_name, lookup, part_named};
pub use parts::{Form, Part};

use std::fmt;

/// The GPU architecture family, spelled as GPU Feature Discovery writes it into the
/// `nvidia.com/gpu.family` node label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Architecture {
    /// Compute capability 6.x (P100).
    Pascal,
    /// Compute capability 7.0 (V100).
    Volta,
    /// Compute capability 7.5 (T4, T4G).
    Turing,
    /// Compute capability 8.0 to 8.6 (A100, A30, A10, A10G, A40).
    Ampere,
    /// Compute capability 8.9 (L4, L40, L40S).
    AdaLovelace,
    /// Compute capability 9.0 (H100, H200, H20, GH200).
    Hopper,
    /// Compute capability 10.x and 12.x (B200, GB200, B300, GB300, RTX PRO 6000 and 4500
    /// Blackwell).
    Blackwell,
}

impl Architecture {
    /// The lower-case name: `pascal`, `volta`, `turing`, `ampere`, `ada-lovelace`, `hopper`
    /// or `blackwell`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pascal => "pascal",
            Self::Volta => "volta",
            Self::Turing => "turing",
            Self::Ampere => "ampere",
            Self::AdaLovelace => "ada-lovelace",
            Self::Hopper => "hopper",
            Self::Blackwell => "blackwell",
        }
    }
}

impl fmt::Display for Architecture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A way of sharing one physical GPU between several pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sharing {
    /// Time-slicing: the device plugin advertises each GPU several times and the GPU
    /// alternates between processes. Works on any GPU the plugin manages.
    TimeSlicing,
    /// CUDA Multi-Process Service: clients run concurrently, each limited to a share of
    /// memory and compute (enforced from Volta on). Needs compute capability 3.5.
    Mps,
    /// Multi-Instance GPU: the GPU is partitioned in hardware into the profiles listed in
    /// [`Accelerator::mig_profiles`].
    Mig,
}

impl Sharing {
    /// Every sharing mode, in declaration order.
    pub const ALL: [Self; 3] = [Self::TimeSlicing, Self::Mps, Self::Mig];

    /// Every mode's [`as_str`](Self::as_str) spelling, in [`ALL`](Self::ALL) order.
    pub const NAMES: &'static [&'static str] = &spellings!(Self);

    /// The configuration spelling: `time_slicing`, `mps` or `mig` (the first two are also
    /// Cloudfleet's `gpu_sharing_strategy` values).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::TimeSlicing => "time_slicing",
            Self::Mps => "mps",
            Self::Mig => "mig",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling, ignoring ASCII case and accepting `-` for
    /// `_` (so the device plugin's `time-slicing` works too).
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        Self::ALL.into_iter().find(|mode| {
            value.len() == mode.as_str().len()
                && value.bytes().zip(mode.as_str().bytes()).all(|(a, b)| {
                    let a = if a == b'-' { b'_' } else { a };
                    a.eq_ignore_ascii_case(&b)
                })
        })
    }
}

impl fmt::Display for Sharing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A MIG profile and how many instances of it fit on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MigProfile {
    /// The profile name as `nvidia-smi` and mig-parted spell it: `<compute slices>g.<memory
    /// GB>gb`, with `+me` for the variant that owns the media engines (`1g.10gb+me`).
    pub name: &'static str,
    /// The most instances of this profile one GPU can hold when it holds nothing else.
    pub max_instances: u8,
}

/// One GPU model. All catalog data is `'static`; get entries from [`all`] or [`lookup`].
#[derive(Debug, PartialEq, Eq)]
pub struct Accelerator {
    /// The canonical name (see the module documentation for the scheme).
    pub name: &'static str,
    /// Other spellings [`lookup`] accepts besides the canonical name. Case, separators and a
    /// leading `NVIDIA`/`Tesla` are ignored anyway, so aliases only list genuinely different
    /// spellings (`A100-SXM4-80GB`, `RTX-PRO-SERVER-6000`).
    pub aliases: &'static [&'static str],
    /// The architecture family.
    pub architecture: Architecture,
    /// The CUDA compute capability as (major, minor).
    pub compute_capability: (u8, u8),
    /// NVIDIA's nominal memory per GPU, in GiB (see the module documentation).
    pub memory_gib: u32,
    /// The MIG profiles, smallest first; empty when the model has no MIG.
    pub mig_profiles: &'static [MigProfile],
    labels: Labels,
}

/// The model's GPU name value per label scheme; `None` where that scheme has no value that
/// selects this model.
#[derive(Debug, PartialEq, Eq)]
struct Labels {
    cfke: Option<&'static str>,
    aws: Option<AwsGpu>,
    azure: Option<&'static str>,
}

/// What EC2 reports for the model: the GPU name (already lower-kebab-cased as Karpenter
/// labels it) and the memory per GPU in MiB, and the CPU architectures of its instance types.
#[derive(Debug, PartialEq, Eq)]
struct AwsGpu {
    name: &'static str,
    memory_mib: u32,
    /// The `kubernetes.io/arch` values of the EC2 instance types carrying it.
    architectures: &'static [&'static str],
}

impl Accelerator {
    /// Whether the model supports a sharing mode: time-slicing always; MPS from compute
    /// capability 3.5 (NVIDIA's Multi-Process Service documentation; the device plugin
    /// itself checks none); MIG when the model has MIG profiles.
    pub fn supports(&self, sharing: Sharing) -> bool {
        match sharing {
            Sharing::TimeSlicing => true,
            Sharing::Mps => self.compute_capability >= (3, 5),
            Sharing::Mig => !self.mig_profiles.is_empty(),
        }
    }

    /// The most MPS clients (device-plugin replicas) per GPU, as NVIDIA's MPS control daemon
    /// allows them (k8s-device-plugin, cmd/mps-control-daemon/mps/device.go): 48 from compute
    /// capability 7.5 on, 16 below, and 0 when the model does not support MPS at all.
    pub fn max_mps_clients(&self) -> u32 {
        if !self.supports(Sharing::Mps) {
            0
        } else if self.compute_capability >= (7, 5) {
            48
        } else {
            16
        }
    }

    /// The value of the scheme's GPU name label ([`LabelKeys::name`]) on nodes with this
    /// model, or `None` when the scheme cannot express the model: the cloud does not sell it
    /// (no `a30` on AWS) or its instance names carry no parsable GPU token (Azure's V100 and
    /// A100 40GB sizes have no `sku-gpu-name` label).
    ///
    /// Memory sizes share one value (`A100` for both A100 sizes on Cloudfleet, `a100` on
    /// AWS); add the memory label ([`LabelKeys::memory`], [`Accelerator::memory_in`]) to
    /// tell them apart.
    pub fn label_value(&self, scheme: LabelScheme) -> Option<&'static str> {
        match scheme {
            LabelScheme::Cfke => self.labels.cfke,
            LabelScheme::Aws => self.labels.aws.as_ref().map(|gpu| gpu.name),
            LabelScheme::Azure => self.labels.azure,
        }
    }

    /// The node architectures (`kubernetes.io/arch` values) of the instance types the
    /// scheme's cloud sells the model on, where the catalog knows them: EC2's, from its
    /// instance types (checked against them in tests/acceptance/fleet/ec2.rs).
    pub fn node_architectures(&self, scheme: LabelScheme) -> Option<&'static [&'static str]> {
        match scheme {
            LabelScheme::Aws => self.labels.aws.as_ref().map(|gpu| gpu.architectures),
            LabelScheme::Cfke | LabelScheme::Azure => None,
        }
    }

    /// Whether `other` is the same GPU sold under another name (the T4 and EC2's T4G
    /// beside Graviton): same architecture, compute capability and memory.
    pub fn same_gpu_as(&self, other: &Accelerator) -> bool {
        (self.architecture, self.compute_capability, self.memory_gib)
            == (
                other.architecture,
                other.compute_capability,
                other.memory_gib,
            )
    }

    /// The memory per GPU in MiB as AWS's `karpenter.k8s.aws/instance-gpu-memory` label
    /// holds it: the figure EC2 reports where EC2 sells the model, otherwise
    /// `memory_gib × 1024`.
    ///
    /// EC2's figure is `memory_gib × 1024` for most models (T4 16384, A100 80GB and H100
    /// 81920, H200 144384) but lower for some (A10G and L4 22888, L40S 45776, B200 183359,
    /// B300 275040).
    pub fn memory_mib(&self) -> u32 {
        match &self.labels.aws {
            Some(gpu) => gpu.memory_mib,
            None => self.memory_gib * 1024,
        }
    }

    /// The memory per GPU in the given unit: [`memory_gib`](Self::memory_gib) or
    /// [`memory_mib`](Self::memory_mib). Use it with [`MemoryLabel::unit`].
    pub fn memory_in(&self, unit: MemoryUnit) -> u32 {
        match unit {
            MemoryUnit::GiB => self.memory_gib,
            MemoryUnit::MiB => self.memory_mib(),
        }
    }

    /// The MIG profile with this name (ASCII case ignored), if the model has it.
    pub fn mig_profile(&self, name: &str) -> Option<&'static MigProfile> {
        let name = name.trim();
        self.mig_profiles
            .iter()
            .find(|profile| profile.name.eq_ignore_ascii_case(name))
    }
}

/// Every accelerator in the catalog, oldest architecture first.
pub fn all() -> &'static [Accelerator] {
    models::ACCELERATORS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str) -> &'static Accelerator {
        lookup(name).unwrap_or_else(|err| panic!("{err}"))
    }

    fn max_instances(name: &str, profile: &str) -> u8 {
        get(name)
            .mig_profile(profile)
            .unwrap_or_else(|| panic!("{name} has no MIG profile {profile}"))
            .max_instances
    }

    /// A part's name finds its model, so a fleet naming the part gets the
    /// model's label values on every scheme: no label tells parts apart.
    #[test]
    fn a_parts_name_finds_its_model() {
        for model in all() {
            for part in model.parts() {
                assert_eq!(get(part.name).name, model.name, "{}", part.name);
                assert_eq!(part_named(part.name), Some(part));
            }
        }
    }

    /// NVIDIA's product datasheets: nominal GB per GPU (per GPU of a
    /// superchip for GH200, GB200 and GB300).
    #[test]
    fn memory_matches_datasheets() {
        let expected = [
            ("P100", 16),
            ("V100-16GB", 16),
            ("V100-32GB", 32),
            ("T4", 16),
            ("T4G", 16),
            ("A10", 24),
            ("A10G", 24),
            ("A30", 24),
            ("A40", 48),
            ("A100-40GB", 40),
            ("A100-80GB", 80),
            ("L4", 24),
            ("L40", 48),
            ("L40S", 48),
            ("RTX-PRO-6000", 96),
            ("RTX-PRO-4500", 32),
            ("H100", 80),
            ("H200", 141),
            ("H20", 96),
            ("GH200", 96),
            ("B200", 180),
            ("GB200", 186),
            ("B300", 288),
            ("GB300", 288),
        ];
        assert_eq!(expected.len(), all().len());
        for (name, gib) in expected {
            assert_eq!(get(name).memory_gib, gib, "{name}");
        }
    }

    /// NVIDIA's table of CUDA GPUs (developer.nvidia.com/cuda-gpus).
    #[test]
    fn compute_capabilities_match_cuda_list() {
        let expected = [
            ("P100", (6, 0)),
            ("V100-16GB", (7, 0)),
            ("V100-32GB", (7, 0)),
            ("T4", (7, 5)),
            ("T4G", (7, 5)),
            ("A100-40GB", (8, 0)),
            ("A100-80GB", (8, 0)),
            ("A30", (8, 0)),
            ("A10", (8, 6)),
            ("A10G", (8, 6)),
            ("A40", (8, 6)),
            ("L4", (8, 9)),
            ("L40", (8, 9)),
            ("L40S", (8, 9)),
            ("H100", (9, 0)),
            ("H200", (9, 0)),
            ("H20", (9, 0)),
            ("GH200", (9, 0)),
            ("B200", (10, 0)),
            ("GB200", (10, 0)),
            ("B300", (10, 3)),
            ("GB300", (10, 3)),
            ("RTX-PRO-6000", (12, 0)),
            ("RTX-PRO-4500", (12, 0)),
        ];
        assert_eq!(expected.len(), all().len());
        for (name, cc) in expected {
            assert_eq!(get(name).compute_capability, cc, "{name}");
        }
    }

    /// GPU Feature Discovery derives `nvidia.com/gpu.family` from the compute capability;
    /// the stored architecture must agree with it.
    #[test]
    fn architecture_agrees_with_compute_capability() {
        for accelerator in all() {
            let expected = match accelerator.compute_capability {
                (6, _) => Architecture::Pascal,
                (7, minor) if minor < 5 => Architecture::Volta,
                (7, _) => Architecture::Turing,
                (8, minor) if minor < 9 => Architecture::Ampere,
                (8, _) => Architecture::AdaLovelace,
                (9, _) => Architecture::Hopper,
                (10 | 12, _) => Architecture::Blackwell,
                other => panic!(
                    "{}: unexpected compute capability {other:?}",
                    accelerator.name
                ),
            };
            assert_eq!(accelerator.architecture, expected, "{}", accelerator.name);
        }
        assert_eq!(Architecture::AdaLovelace.as_str(), "ada-lovelace");
        assert_eq!(Architecture::Blackwell.to_string(), "blackwell");
    }

    /// The MIG user guide's tables for B300 and GB300. The other models'
    /// profiles and instance counts are checked against mig-manager's
    /// default layouts (tests/offline/upstream_nvidia.rs), which the pinned
    /// snapshot predates for these two.
    #[test]
    fn mig_profiles_of_parts_mig_manager_predates() {
        assert_eq!(max_instances("B300", "1g.34gb"), 7);
        assert_eq!(max_instances("B300", "7g.269gb"), 1);
        assert_eq!(max_instances("GB300", "1g.35gb"), 7);
        assert_eq!(max_instances("GB300", "1g.70gb"), 4);
        assert_eq!(max_instances("GB300", "7g.278gb"), 1);
    }

    #[test]
    fn mig_profile_lookup() {
        let h100 = get("H100");
        assert_eq!(
            h100.mig_profile("1G.10GB+ME").map(|p| p.name),
            Some("1g.10gb+me")
        );
        assert_eq!(h100.mig_profile("1g.5gb"), None);
        assert_eq!(get("T4").mig_profile("1g.5gb"), None);
    }

    #[test]
    fn no_mig_on_parts_without_it() {
        for name in [
            "P100",
            "T4",
            "V100-16GB",
            "V100-32GB",
            "A10",
            "A10G",
            "A40",
            "L4",
            "L40",
            "L40S",
        ] {
            let accelerator = get(name);
            assert!(!accelerator.supports(Sharing::Mig), "{name}");
            assert!(accelerator.mig_profiles.is_empty(), "{name}");
        }
    }

    /// Every profile is well formed, fits the GPU, and the full-GPU profile is there.
    #[test]
    fn mig_profiles_are_consistent() {
        for accelerator in all().iter().filter(|a| a.supports(Sharing::Mig)) {
            assert!(
                accelerator.compute_capability >= (8, 0),
                "{}",
                accelerator.name
            );
            let mut total_slices = 0;
            for profile in accelerator.mig_profiles {
                let (slices, rest) = profile.name.split_once("g.").expect(profile.name);
                let slices: u32 = slices.parse().expect(profile.name);
                let memory = rest.strip_suffix("+me").unwrap_or(rest);
                let memory: u32 = memory
                    .strip_suffix("gb")
                    .and_then(|gb| gb.parse().ok())
                    .expect(profile.name);
                assert!(memory <= accelerator.memory_gib, "{}", profile.name);
                assert!((1..=7).contains(&profile.max_instances), "{}", profile.name);
                total_slices = total_slices.max(slices);
                if profile.name.ends_with("+me") {
                    assert_eq!(profile.max_instances, 1, "{}", profile.name);
                }
            }
            let full = accelerator.mig_profiles.last().expect("profiles");
            assert_eq!(full.max_instances, 1, "{}", accelerator.name);
            assert!(full.name.starts_with(&format!("{total_slices}g.")));
        }
    }

    /// Time slicing everywhere; MPS clients per GPU as the MPS control
    /// daemon allows them, 16 below compute capability 7.5 and 48 from it
    /// (Volta against Turing).
    #[test]
    fn sharing_support() {
        for accelerator in all() {
            assert!(
                accelerator.supports(Sharing::TimeSlicing),
                "{}",
                accelerator.name
            );
        }
        assert_eq!(get("V100-32GB").max_mps_clients(), 16);
        assert_eq!(get("T4").max_mps_clients(), 48);
    }

    /// Cloudfleet's value is the model name without its memory size, so
    /// sizes of one model share it. (The AWS values are EC2's, checked
    /// against EC2's instance types in tests/acceptance/fleet/ec2.rs.)
    #[test]
    fn cfke_values_are_the_name_without_the_memory_size() {
        for accelerator in all() {
            let name = accelerator.name;
            let model = name
                .rsplit_once('-')
                .filter(|(_, size)| size.ends_with("GB"))
                .map_or(name, |(model, _)| model);
            assert_eq!(accelerator.label_value(LabelScheme::Cfke), Some(model));
        }
    }

    /// Azure's value is the token of the VM size names, and there is none
    /// where the sizes carry no parsable token (see models.rs): no Azure
    /// data here to check them against, so these are the sizes' names.
    #[test]
    fn azure_values_are_the_vm_sizes_tokens() {
        for (name, size) in [
            ("H100", Some("Standard_ND96isr_H100_v5")),
            ("H200", Some("Standard_ND96isr_H200_v5")),
            ("A100-80GB", Some("Standard_NC24ads_A100_v4")),
            ("A10", Some("Standard_NV36ads_A10_v5")),
            ("T4", Some("Standard_NC4as_T4_v3")),
            ("A100-40GB", None), // Standard_ND96asr_v4
            ("V100-32GB", None), // Standard_ND40rs_v2
            ("GB200", None),     // Standard_ND128isr_NDR_GB200_v6
        ] {
            let token = size.map(|s| s.split('_').nth(2).unwrap());
            assert_eq!(get(name).label_value(LabelScheme::Azure), token, "{name}");
        }
    }

    /// AWS values are lower-case, Azure and Cloudfleet values upper-case, and every value is
    /// a valid Kubernetes label value.
    #[test]
    fn label_values_have_the_scheme_case() {
        for accelerator in all() {
            for scheme in LabelScheme::ALL {
                let Some(value) = accelerator.label_value(scheme) else {
                    continue;
                };
                let context = format!("{} {scheme}: {value}", accelerator.name);
                assert!(!value.is_empty() && value.len() <= 63, "{context}");
                assert!(
                    value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-'),
                    "{context}"
                );
                assert!(
                    !value.starts_with('-') && !value.ends_with('-'),
                    "{context}"
                );
                match scheme {
                    LabelScheme::Aws => assert_eq!(value, value.to_ascii_lowercase(), "{context}"),
                    LabelScheme::Cfke | LabelScheme::Azure => {
                        assert_eq!(value, value.to_ascii_uppercase(), "{context}");
                    }
                }
            }
            assert!(
                accelerator.label_value(LabelScheme::Cfke).is_some(),
                "{}",
                accelerator.name
            );
        }
    }

    /// EC2's figure where EC2 sells the model (checked against EC2's
    /// instance types in tests/acceptance/fleet/ec2.rs), never above the
    /// nominal size, and the nominal size in MiB elsewhere.
    #[test]
    fn memory_mib_is_ec2s_figure_or_the_nominal_size() {
        for accelerator in all() {
            let nominal = accelerator.memory_gib * 1024;
            assert!(accelerator.memory_mib() <= nominal, "{}", accelerator.name);
            if accelerator.label_value(LabelScheme::Aws).is_none() {
                assert_eq!(accelerator.memory_mib(), nominal, "{}", accelerator.name);
            }
            assert_eq!(
                accelerator.memory_in(MemoryUnit::GiB),
                accelerator.memory_gib
            );
            assert_eq!(
                accelerator.memory_in(MemoryUnit::MiB),
                accelerator.memory_mib()
            );
        }
    }

    #[test]
    fn label_keys_per_scheme() {
        let cfke = LabelScheme::Cfke.label_keys();
        assert_eq!(cfke.name, "cfke.io/accelerator-name");
        assert_eq!(cfke.count, "cfke.io/accelerator-count");
        assert_eq!(
            cfke.memory,
            Some(MemoryLabel {
                key: "cfke.io/accelerator-memory",
                unit: MemoryUnit::GiB
            })
        );
        let aws = LabelScheme::Aws.label_keys();
        assert_eq!(aws.name, "karpenter.k8s.aws/instance-gpu-name");
        assert_eq!(aws.count, "karpenter.k8s.aws/instance-gpu-count");
        assert_eq!(
            aws.memory,
            Some(MemoryLabel {
                key: "karpenter.k8s.aws/instance-gpu-memory",
                unit: MemoryUnit::MiB
            })
        );
        let azure = LabelScheme::Azure.label_keys();
        assert_eq!(azure.name, "karpenter.azure.com/sku-gpu-name");
        assert_eq!(azure.count, "karpenter.azure.com/sku-gpu-count");
        assert_eq!(azure.memory, None);

        let h100 = get("H100");
        let memory = aws.memory.expect("aws memory label");
        assert_eq!(h100.memory_in(memory.unit), 81_920);
    }

    #[test]
    fn enums_round_trip() {
        for mode in Sharing::ALL {
            assert_eq!(Sharing::parse(mode.as_str()), Some(mode));
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert_eq!(Sharing::TimeSlicing.as_str(), "time_slicing");
        assert_eq!(Sharing::Mps.as_str(), "mps");
        assert_eq!(Sharing::Mig.as_str(), "mig");
        assert_eq!(Sharing::parse("Time-Slicing"), Some(Sharing::TimeSlicing));
        assert_eq!(Sharing::parse(" MPS "), Some(Sharing::Mps));
        assert_eq!(Sharing::parse("timeslicing"), None);
        assert_eq!(Sharing::parse("none"), None);

        for scheme in LabelScheme::ALL {
            assert_eq!(LabelScheme::parse(scheme.as_str()), Some(scheme));
            assert_eq!(scheme.to_string(), scheme.as_str());
        }
        assert_eq!(LabelScheme::parse("AWS"), Some(LabelScheme::Aws));
        assert_eq!(LabelScheme::parse("gcp"), None);
    }

    #[test]
    fn canonical_names_follow_the_scheme() {
        for accelerator in all() {
            let name = accelerator.name;
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-'),
                "{name}"
            );
            // A memory suffix appears exactly when another entry is the same model.
            let model = name
                .rsplit_once('-')
                .filter(|(_, size)| size.ends_with("GB"))
                .map(|(model, _)| model);
            let siblings = all()
                .iter()
                .filter(|other| {
                    other.name != name
                        && other.name.rsplit_once('-').map(|(m, _)| m)
                            == Some(model.unwrap_or(name))
                })
                .count();
            assert_eq!(model.is_some(), siblings > 0, "{name}");
        }
    }
}
