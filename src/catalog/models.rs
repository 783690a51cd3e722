//! The catalog data: one [`Accelerator`] per supported GPU model.
//!
//! Where each column comes from:
//!
//! * memory and model names: NVIDIA's product datasheets (nominal "GB" figures, which the
//!   ecosystem, including MIG profile names and the Cloudfleet memory label, treats as GiB);
//! * compute capability: NVIDIA's table of CUDA GPUs;
//! * architecture: the family names GPU Feature Discovery derives from the compute capability;
//! * MIG profiles: NVIDIA's MIG user guide, checked against the default layouts NVIDIA's
//!   mig-manager ships (tests/offline/upstream_nvidia.rs);
//! * AWS label values, MiB figures and architectures: the GPU name and memory EC2 reports for
//!   each instance type, as Karpenter's AWS provider labels nodes with them (name lower-cased,
//!   spaces turned into dashes), and the CPU architecture of those types (Graviton's g5g
//!   alone is arm64), checked against EC2's instance types (tests/acceptance/fleet/ec2.rs);
//! * Azure label values: the accelerator token of the VM size name (an upper-case letter and
//!   digits), which Karpenter's Azure provider copies into `sku-gpu-name`. Sizes whose name
//!   carries no such token (`NC6s_v3`, `ND40rs_v2`, `ND96asr_v4`) or one that does not parse
//!   (`ND128isr_NDR_GB200_v6`, `NC..._xl_RTXPRO6000BSE_v6`) get no `sku-gpu-name` label;
//! * Cloudfleet label values: `cfke.io/accelerator-name` is the model name without vendor
//!   prefix in upper case (`L4`, `T4`, `A100`, `H100`, `L40S`, `V100`). Memory sizes are not
//!   part of the name, so `A100-40GB` and `A100-80GB` are told apart by
//!   `cfke.io/accelerator-memory`.

use super::{Accelerator, Architecture, AwsGpu, Form, Labels, MigProfile, Part};

const fn mig(name: &'static str, max_instances: u8) -> MigProfile {
    MigProfile {
        name,
        max_instances,
    }
}

const fn labels(cfke: &'static str, aws: Option<AwsGpu>, azure: Option<&'static str>) -> Labels {
    Labels {
        cfke: Some(cfke),
        aws,
        azure,
    }
}

/// EC2 instance types of x86 CPUs (Intel's or AMD's), and of Graviton's.
const AMD64: &[&str] = &["amd64"];
const ARM64: &[&str] = &["arm64"];

const fn aws(
    name: &'static str,
    memory_mib: u32,
    architectures: &'static [&'static str],
) -> Option<AwsGpu> {
    Some(AwsGpu {
        name,
        memory_mib,
        architectures,
    })
}

/// A100 40GB (also A800 40GB).
const MIG_A100_40GB: &[MigProfile] = &[
    mig("1g.5gb", 7),
    mig("1g.5gb+me", 1),
    mig("1g.10gb", 4),
    mig("2g.10gb", 3),
    mig("3g.20gb", 2),
    mig("4g.20gb", 1),
    mig("7g.40gb", 1),
];

/// A100 80GB and H100 80GB (also A800/H800 80GB).
const MIG_80GB: &[MigProfile] = &[
    mig("1g.10gb", 7),
    mig("1g.10gb+me", 1),
    mig("1g.20gb", 4),
    mig("2g.20gb", 3),
    mig("3g.40gb", 2),
    mig("4g.40gb", 1),
    mig("7g.80gb", 1),
];

/// The 96 GB Hopper parts: H100 96GB, GH200 96GB and H20.
const MIG_HOPPER_96GB: &[MigProfile] = &[
    mig("1g.12gb", 7),
    mig("1g.12gb+me", 1),
    mig("1g.24gb", 4),
    mig("2g.24gb", 3),
    mig("3g.48gb", 2),
    mig("4g.48gb", 1),
    mig("7g.96gb", 1),
];

/// H200 141GB, SXM and NVL (see [`PARTS`] for what tells them apart).
const MIG_H200: &[MigProfile] = &[
    mig("1g.18gb", 7),
    mig("1g.18gb+me", 1),
    mig("1g.35gb", 4),
    mig("2g.35gb", 3),
    mig("3g.71gb", 2),
    mig("4g.71gb", 1),
    mig("7g.141gb", 1),
];

/// B200 180GB.
const MIG_B200: &[MigProfile] = &[
    mig("1g.23gb", 7),
    mig("1g.23gb+me", 1),
    mig("1g.45gb", 4),
    mig("2g.45gb", 3),
    mig("3g.90gb", 2),
    mig("4g.90gb", 1),
    mig("7g.180gb", 1),
];

/// GB200 186GB.
const MIG_GB200: &[MigProfile] = &[
    mig("1g.23gb", 7),
    mig("1g.23gb+me", 1),
    mig("1g.47gb", 4),
    mig("2g.47gb", 3),
    mig("3g.93gb", 2),
    mig("4g.93gb", 1),
    mig("7g.186gb", 1),
];

/// B300.
const MIG_B300: &[MigProfile] = &[
    mig("1g.34gb", 7),
    mig("1g.34gb+me", 1),
    mig("1g.67gb", 4),
    mig("2g.67gb", 3),
    mig("3g.135gb", 2),
    mig("4g.135gb", 1),
    mig("7g.269gb", 1),
];

/// GB300.
const MIG_GB300: &[MigProfile] = &[
    mig("1g.35gb", 7),
    mig("1g.35gb+me", 1),
    mig("1g.70gb", 4),
    mig("2g.70gb", 3),
    mig("3g.139gb", 2),
    mig("4g.139gb", 1),
    mig("7g.278gb", 1),
];

/// A30 24GB: four slices, not seven.
const MIG_A30: &[MigProfile] = &[
    mig("1g.6gb", 4),
    mig("1g.6gb+me", 1),
    mig("2g.12gb", 2),
    mig("2g.12gb+me", 1),
    mig("4g.24gb", 1),
];

/// RTX PRO 6000 Blackwell Server Edition: four slices. Only the plain compute profiles are
/// listed; the graphics and media variants (`+gfx`, `-me`, `+me.all`) are left out.
const MIG_RTX_PRO_6000: &[MigProfile] = &[mig("1g.24gb", 4), mig("2g.48gb", 2), mig("4g.96gb", 1)];

/// Every accelerator the catalog knows, oldest architecture first.
pub(super) const ACCELERATORS: &[Accelerator] = &[
    // Pascal. The 12 GB PCIe variant is not covered.
    Accelerator {
        name: "P100",
        aliases: &["P100-16GB", "P100-SXM2-16GB", "P100-PCIE-16GB"],
        architecture: Architecture::Pascal,
        compute_capability: (6, 0),
        memory_gib: 16,
        mig_profiles: &[],
        labels: labels("P100", None, None),
    },
    // Volta. EC2 p3 carries the 16 GB part, p3dn the 32 GB one; both report `v100`.
    Accelerator {
        name: "V100-16GB",
        aliases: &["V100-16G", "V100-SXM2-16GB", "V100-PCIE-16GB"],
        architecture: Architecture::Volta,
        compute_capability: (7, 0),
        memory_gib: 16,
        mig_profiles: &[],
        labels: labels("V100", aws("v100", 16_384, AMD64), None),
    },
    Accelerator {
        name: "V100-32GB",
        aliases: &["V100-32G", "V100-SXM2-32GB", "V100-PCIE-32GB", "V100S"],
        architecture: Architecture::Volta,
        compute_capability: (7, 0),
        memory_gib: 32,
        mig_profiles: &[],
        labels: labels("V100", aws("v100", 32_768, AMD64), None),
    },
    // Turing. EC2 reports 16384 MiB for the T4 of g4dn (moto's copy of DescribeInstanceTypes).
    Accelerator {
        name: "T4",
        aliases: &["T4-16GB"],
        architecture: Architecture::Turing,
        compute_capability: (7, 5),
        memory_gib: 16,
        mig_profiles: &[],
        labels: labels("T4", aws("t4", 16_384, AMD64), Some("T4")),
    },
    // The T4 of EC2's Graviton g5g instances, which EC2 names `T4g` (16384 MiB) and AWS's
    // G5g page calls "NVIDIA T4G Tensor Core GPUs": the same Turing chip (compute
    // capability 7.5). Azure sells no T4G.
    Accelerator {
        name: "T4G",
        aliases: &["T4G-16GB"],
        architecture: Architecture::Turing,
        compute_capability: (7, 5),
        memory_gib: 16,
        mig_profiles: &[],
        labels: labels("T4G", aws("t4g", 16_384, ARM64), None),
    },
    // Ampere.
    Accelerator {
        name: "A100-40GB",
        aliases: &["A100-40G", "A100-SXM4-40GB", "A100-PCIE-40GB"],
        architecture: Architecture::Ampere,
        compute_capability: (8, 0),
        memory_gib: 40,
        mig_profiles: MIG_A100_40GB,
        // Azure's 40 GB size (ND96asr_v4) carries no accelerator token, hence no label.
        labels: labels("A100", aws("a100", 40_960, AMD64), None),
    },
    Accelerator {
        name: "A100-80GB",
        aliases: &[
            "A100-80G",
            "A100-SXM4-80GB",
            "A100-PCIE-80GB",
            "A100-80GB-PCIE",
        ],
        architecture: Architecture::Ampere,
        compute_capability: (8, 0),
        memory_gib: 80,
        mig_profiles: MIG_80GB,
        labels: labels("A100", aws("a100", 81_920, AMD64), Some("A100")),
    },
    Accelerator {
        name: "A30",
        aliases: &["A30-24GB"],
        architecture: Architecture::Ampere,
        compute_capability: (8, 0),
        memory_gib: 24,
        mig_profiles: MIG_A30,
        labels: labels("A30", None, None),
    },
    Accelerator {
        name: "A10",
        aliases: &["A10-24GB"],
        architecture: Architecture::Ampere,
        compute_capability: (8, 6),
        memory_gib: 24,
        mig_profiles: &[],
        labels: labels("A10", None, Some("A10")),
    },
    // AWS-only variant of the A10; EC2 reports 22888 MiB usable.
    Accelerator {
        name: "A10G",
        aliases: &["A10G-24GB"],
        architecture: Architecture::Ampere,
        compute_capability: (8, 6),
        memory_gib: 24,
        mig_profiles: &[],
        labels: labels("A10G", aws("a10g", 22_888, AMD64), None),
    },
    Accelerator {
        name: "A40",
        aliases: &["A40-48GB"],
        architecture: Architecture::Ampere,
        compute_capability: (8, 6),
        memory_gib: 48,
        mig_profiles: &[],
        labels: labels("A40", None, None),
    },
    // Ada Lovelace.
    Accelerator {
        name: "L4",
        aliases: &["L4-24GB"],
        architecture: Architecture::AdaLovelace,
        compute_capability: (8, 9),
        memory_gib: 24,
        mig_profiles: &[],
        labels: labels("L4", aws("l4", 22_888, AMD64), None),
    },
    Accelerator {
        name: "L40",
        aliases: &["L40-48GB"],
        architecture: Architecture::AdaLovelace,
        compute_capability: (8, 9),
        memory_gib: 48,
        mig_profiles: &[],
        labels: labels("L40", None, None),
    },
    Accelerator {
        name: "L40S",
        aliases: &["L40S-48GB"],
        architecture: Architecture::AdaLovelace,
        compute_capability: (8, 9),
        memory_gib: 48,
        mig_profiles: &[],
        labels: labels("L40S", aws("l40s", 45_776, AMD64), None),
    },
    // Hopper. The H100 NVL (94 GB) and H100 96GB parts have other MIG profiles and are not
    // covered; note that Azure labels its H100 NVL sizes (NC..ads_H100_v5) `H100` too.
    Accelerator {
        name: "H100",
        aliases: &[
            "H100-80GB",
            "H100-SXM",
            "H100-SXM5-80GB",
            "H100-80GB-HBM3",
            "H100-PCIE",
            "H100-PCIE-80GB",
        ],
        architecture: Architecture::Hopper,
        compute_capability: (9, 0),
        memory_gib: 80,
        mig_profiles: MIG_80GB,
        labels: labels("H100", aws("h100", 81_920, AMD64), Some("H100")),
    },
    Accelerator {
        name: "H200",
        aliases: &["H200-141GB", "H200-SXM", "H200-NVL"],
        architecture: Architecture::Hopper,
        compute_capability: (9, 0),
        memory_gib: 141,
        mig_profiles: MIG_H200,
        labels: labels("H200", aws("h200", 144_384, AMD64), Some("H200")),
    },
    // The 96 GB H20; a later 141 GB variant is not covered.
    Accelerator {
        name: "H20",
        aliases: &["H20-96GB"],
        architecture: Architecture::Hopper,
        compute_capability: (9, 0),
        memory_gib: 96,
        mig_profiles: MIG_HOPPER_96GB,
        labels: labels("H20", None, None),
    },
    // The 96 GB HBM3 GH200; the 144 GB HBM3e variant (MIG 1g.18gb .. 7g.144gb) is not
    // covered.
    Accelerator {
        name: "GH200",
        aliases: &["GH200-96GB"],
        architecture: Architecture::Hopper,
        compute_capability: (9, 0),
        memory_gib: 96,
        mig_profiles: MIG_HOPPER_96GB,
        labels: labels("GH200", None, None),
    },
    // Blackwell. EC2 reports 183359 MiB for the B200 and 275040 MiB for the B300, below the
    // nominal 180 GB / 288 GB.
    Accelerator {
        name: "B200",
        aliases: &["B200-180GB"],
        architecture: Architecture::Blackwell,
        compute_capability: (10, 0),
        memory_gib: 180,
        mig_profiles: MIG_B200,
        labels: labels("B200", aws("b200", 183_359, AMD64), None),
    },
    // EC2 p6e-gb200 is sold only as UltraServer capacity and is absent from Karpenter's
    // instance-type list, so no AWS label value is claimed.
    Accelerator {
        name: "GB200",
        aliases: &["GB200-186GB"],
        architecture: Architecture::Blackwell,
        compute_capability: (10, 0),
        memory_gib: 186,
        mig_profiles: MIG_GB200,
        labels: labels("GB200", None, None),
    },
    Accelerator {
        name: "B300",
        aliases: &["B300-288GB"],
        architecture: Architecture::Blackwell,
        compute_capability: (10, 3),
        memory_gib: 288,
        mig_profiles: MIG_B300,
        labels: labels("B300", aws("b300", 275_040, AMD64), None),
    },
    // EC2 p6e-gb300 and Azure ND GB300 v6 are in the same position as their GB200
    // counterparts.
    Accelerator {
        name: "GB300",
        aliases: &["GB300-288GB"],
        architecture: Architecture::Blackwell,
        compute_capability: (10, 3),
        memory_gib: 288,
        mig_profiles: MIG_GB300,
        labels: labels("GB300", None, None),
    },
    Accelerator {
        name: "RTX-PRO-6000",
        aliases: &[
            "RTX-PRO-6000-96GB",
            "RTX-PRO-6000-BSE",
            "RTX-PRO-6000-Blackwell",
            "RTX-PRO-6000-Blackwell-Server-Edition",
            "RTX-PRO-SERVER-6000",
        ],
        architecture: Architecture::Blackwell,
        compute_capability: (12, 0),
        memory_gib: 96,
        mig_profiles: MIG_RTX_PRO_6000,
        labels: labels(
            "RTX-PRO-6000",
            aws("rtx-pro-server-6000", 98_304, AMD64),
            None,
        ),
    },
    // RTX PRO 4500 Blackwell Server Edition: 32 GB GDDR7 (NVIDIA's datasheet), compute
    // capability 12.0 (CUDA GPUs list). The MIG user guide lists it with two instances from
    // R610 drivers on; its MIG profiles are not covered. EC2 g7 reports it as `RTX PRO 4500`
    // with 32768 MiB (moto's copy of DescribeInstanceTypes); Azure sells none.
    Accelerator {
        name: "RTX-PRO-4500",
        aliases: &[
            "RTX-PRO-4500-32GB",
            "RTX-PRO-4500-Blackwell",
            "RTX-PRO-4500-Blackwell-Server-Edition",
        ],
        architecture: Architecture::Blackwell,
        compute_capability: (12, 0),
        memory_gib: 32,
        mig_profiles: &[],
        labels: labels("RTX-PRO-4500", aws("rtx-pro-4500", 32_768, AMD64), None),
    },
];

/// The parts the catalog tells apart within one model, by PCI device ID (the PCI ID
/// Repository's `pci.ids`, whose device names also give the form factor; both checked in
/// tests/offline/upstream_nvidia.rs). The form factors are NVIDIA's datasheets': the A100 and
/// H100 come as SXM modules on HGX boards (NVSwitch) and as PCIe cards, the H200 as SXM
/// modules and as NVL cards joined by NVLink bridges. mig-manager's default MIG
/// configuration (GPU Operator, assets/state-mig-manager/0400_configmap.yaml, from v25.10.1)
/// tells two of them apart too: its `all-1g.35gb` has a device filter naming the H200 SXM
/// (0x2335) and not the H200 NVL (0x233B), whose `all-balanced` entry names both.
pub(super) const PARTS: &[Part] = &[
    Part {
        model: "A100-40GB",
        name: "A100-SXM4-40GB",
        pci_device_id: 0x20B0,
        form: Form::Sxm,
        layouts_not_applied: &[],
    },
    Part {
        model: "A100-40GB",
        name: "A100-PCIE-40GB",
        pci_device_id: 0x20F1,
        form: Form::Pcie,
        layouts_not_applied: &[],
    },
    Part {
        model: "A100-80GB",
        name: "A100-SXM4-80GB",
        pci_device_id: 0x20B2,
        form: Form::Sxm,
        layouts_not_applied: &[],
    },
    Part {
        model: "A100-80GB",
        name: "A100-PCIE-80GB",
        pci_device_id: 0x20B5,
        form: Form::Pcie,
        layouts_not_applied: &[],
    },
    Part {
        model: "H100",
        name: "H100-SXM",
        pci_device_id: 0x2330,
        form: Form::Sxm,
        layouts_not_applied: &[],
    },
    Part {
        model: "H100",
        name: "H100-PCIE",
        pci_device_id: 0x2331,
        form: Form::Pcie,
        layouts_not_applied: &[],
    },
    Part {
        model: "H200",
        name: "H200-SXM",
        pci_device_id: 0x2335,
        form: Form::Sxm,
        layouts_not_applied: &[],
    },
    Part {
        model: "H200",
        name: "H200-NVL",
        pci_device_id: 0x233B,
        form: Form::Nvl,
        layouts_not_applied: &["all-1g.35gb"],
    },
];

/// Variants users may well ask for that the catalog deliberately leaves out, with the note
/// [`lookup`](super::lookup) gives instead of a misleading "did you mean".
pub(super) const NOT_COVERED: &[(&[&str], &str)] = &[
    (
        &["H100-NVL", "H100-94GB", "H100-NVL-94GB"],
        "`H100` is the 80 GB SXM/PCIe part; the 94 GB H100 NVL has other MIG profiles",
    ),
    (
        &["H100-96GB"],
        "`H100` is the 80 GB SXM/PCIe part; the 96 GB H100 has other MIG profiles",
    ),
    (
        &["GH200-144GB", "GH200-144G"],
        "`GH200` is the 96 GB part; the 144 GB (HBM3e) GH200 has other MIG profiles",
    ),
    (
        &["H20-141GB"],
        "`H20` is the 96 GB part; the 141 GB H20 has other MIG profiles",
    ),
    (
        &["P100-12GB", "P100-PCIE-12GB"],
        "`P100` is the 16 GB part; the 12 GB P100 PCIe is not covered",
    ),
];
