//! The parts of a model the catalog tells apart by PCI device ID: their form factor says
//! how the GPUs of one node are linked (NVLink through NVSwitch, NVLink bridges, or PCIe
//! alone), which training across GPUs depends on, and mig-manager's default MIG
//! configuration applies some layouts only to the devices its `device-filter` names (GPU
//! Operator, assets/state-mig-manager/0400_configmap.yaml, from v25.10.1).

use super::{Accelerator, models};

/// A part of one catalog model, told apart by its PCI device ID where the catalog's single
/// entry covers several (the A100 and H100 SXM and PCIe, the H200 SXM and NVL).
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    /// The canonical name of the model the part belongs to.
    pub model: &'static str,
    /// The name that singles the part out, one of the model's aliases.
    pub name: &'static str,
    /// The PCI device ID of vendor 0x10DE (NVIDIA); mig-manager's `device-filter` writes
    /// `0x233510DE` for device 0x2335.
    pub pci_device_id: u16,
    /// The form factor, which sets how the GPUs of one node are linked.
    pub form: Form,
    /// The model's MIG layouts mig-manager's default configuration does not apply to this
    /// part: no entry of the layout matches its device, so the GPU keeps the MIG
    /// configuration it had.
    pub layouts_not_applied: &'static [&'static str],
}

/// A part's form factor, as NVIDIA's datasheets name it and the PCI ID Repository's device
/// names spell it (checked in tests/offline/upstream_nvidia.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A module on an HGX board, whose NVSwitch chips link every GPU to every other with
    /// NVLink.
    Sxm,
    /// PCIe cards sold to be joined by NVLink bridges, two or four to a bridge (H200 NVL).
    Nvl,
    /// A PCIe card: its GPUs reach each other over PCIe unless an NVLink bridge joins a pair.
    Pcie,
}

impl Form {
    /// The spelling the data source gives: `sxm`, `nvl` or `pcie`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sxm => "sxm",
            Self::Nvl => "nvl",
            Self::Pcie => "pcie",
        }
    }

    /// How the GPUs of one node are linked: `nvswitch` (all to all), `nvlink-bridge`
    /// (within a bridged group) or `pcie`.
    pub const fn gpu_link(self) -> &'static str {
        match self {
            Self::Sxm => "nvswitch",
            Self::Nvl => "nvlink-bridge",
            Self::Pcie => "pcie",
        }
    }

    /// How the PCI ID Repository's device names spell the form factor (`GH100 [H100 SXM5
    /// 80GB]`, `GA100 [A100 PCIe 40GB]`, `GH100 [H200 NVL]`).
    pub const fn pci_name_token(self) -> &'static str {
        match self {
            Self::Sxm => "SXM",
            Self::Nvl => "NVL",
            Self::Pcie => "PCIe",
        }
    }
}

impl Part {
    /// The device as mig-manager's `device-filter` spells it (`0x233B10DE`).
    pub fn device_filter(&self) -> String {
        format!("0x{:04X}10DE", self.pci_device_id)
    }

    /// Whether mig-manager's default configuration applies `layout` to this part.
    pub fn applies(&self, layout: &str) -> bool {
        !self.layouts_not_applied.contains(&layout)
    }
}

impl Accelerator {
    /// The parts of this model the catalog tells apart (none for most models).
    pub fn parts(&self) -> impl Iterator<Item = &'static Part> {
        let name = self.name;
        models::PARTS.iter().filter(move |part| part.model == name)
    }
}
