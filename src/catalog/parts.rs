//! The parts of a model the catalog tells apart because mig-manager's default MIG
//! configuration does: it applies some layouts only to the PCI devices its `device-filter`
//! names (GPU Operator, assets/state-mig-manager/0400_configmap.yaml, from v25.10.1).

use super::{Accelerator, models};

/// A part of one catalog model that mig-manager's default MIG configuration tells apart by
/// its PCI device ID where the catalog's single entry covers several (the H200 SXM and NVL).
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    /// The canonical name of the model the part belongs to.
    pub model: &'static str,
    /// The name that singles the part out, one of the model's aliases.
    pub name: &'static str,
    /// The PCI device ID of vendor 0x10DE (NVIDIA); mig-manager's `device-filter` writes
    /// `0x233510DE` for device 0x2335.
    pub pci_device_id: u16,
    /// The model's MIG layouts mig-manager's default configuration does not apply to this
    /// part: no entry of the layout matches its device, so the GPU keeps the MIG
    /// configuration it had.
    pub layouts_not_applied: &'static [&'static str],
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
