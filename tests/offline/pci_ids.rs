//! The catalog's parts against the PCI ID Repository (`pci.ids`, as the
//! pci-ids crate ships it): each part's device ID is NVIDIA's device of
//! that model, and the device's name spells the part's form factor, which
//! sets how the GPUs of one node are linked.

use gpufleet::catalog;
use pci_ids::Device;

const NVIDIA: u16 = 0x10DE;

#[test]
fn parts_are_the_pci_id_repositorys_devices_of_their_form() {
    let mut checked = Vec::new();
    for model in catalog::all() {
        for part in model.parts() {
            let device = Device::from_vid_pid(NVIDIA, part.pci_device_id).unwrap_or_else(|| {
                panic!(
                    "{}: no NVIDIA device {:#06x}",
                    part.name, part.pci_device_id
                )
            });
            let name = device.name();
            // `A100-40GB` is listed as `A100 ... 40GB`, `H200` as `H200 ...`.
            let family = model.name.split('-').next().unwrap();
            assert!(
                name.contains(family),
                "{}: {name:?} is not an {family}",
                part.name
            );
            assert!(
                name.contains(part.form.pci_name_token()),
                "{}: {name:?} is not {:?}",
                part.name,
                part.form
            );
            if name.contains("GB") {
                let memory = format!("{}GB", model.memory_gib);
                assert!(
                    name.contains(&memory),
                    "{}: {name:?} has no {memory}",
                    part.name
                );
            }
            checked.push(part.name);
        }
    }
    // Literal facts of NVIDIA's datasheets: the A100 and H100 as SXM and
    // PCIe, the H200 as SXM and NVL.
    assert_eq!(
        checked,
        [
            "A100-SXM4-40GB",
            "A100-PCIE-40GB",
            "A100-SXM4-80GB",
            "A100-PCIE-80GB",
            "H100-SXM",
            "H100-PCIE",
            "H200-SXM",
            "H200-NVL",
        ]
    );
}
