//! `gpufleet_accelerators`: the built-in GPU catalog, filtered, so that
//! configurations can choose models by what they offer (memory, sharing
//! modes, MIG profiles and layouts, the resources nodes advertise) instead
//! of hard-coding names. It needs no cluster.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::catalog::{self, Accelerator, MigLayout, Sharing};
use crate::framework::DataSource;
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::validators::{each, integer_between, one_of};
use crate::kit::Cluster;
use crate::kit::permissions::Permission;
use crate::protocol::Diagnostics;
use crate::protocol::schema::Nesting;

/// The `gpufleet_accelerators` data source.
pub struct Accelerators;

/// It reads the built-in catalog, never the cluster.
pub const PERMISSIONS: &[Permission] = &[];

/// The filters, and the models that pass them.
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct Model {
    sharing: Option<String>,
    min_memory_gib: Option<u32>,
    names: Option<Vec<String>>,
    accelerators: Option<Vec<Entry>>,
}

/// One catalog model, as the data source lists it.
#[derive(Debug, Deserialize, Serialize)]
pub struct Entry {
    name: String,
    architecture: String,
    compute_capability: String,
    memory_gib: u32,
    time_slicing: bool,
    mps: bool,
    mig: bool,
    max_mps_clients: u32,
    mig_profiles: Vec<Profile>,
    mig_layouts: Vec<Layout>,
    resource_names: Vec<String>,
    parts: Vec<PartEntry>,
}

/// A part of a model the catalog tells apart by PCI device ID, how the
/// GPUs of one node of that part are linked, and the MIG layouts
/// mig-manager applies to it.
#[derive(Debug, Deserialize, Serialize)]
pub struct PartEntry {
    name: String,
    pci_device_id: String,
    device_filter: String,
    form: String,
    gpu_link: String,
    mig_layouts: Vec<Layout>,
}

/// A MIG profile of a model.
#[derive(Debug, Deserialize, Serialize)]
pub struct Profile {
    name: String,
    max_instances: u8,
    resource: String,
}

/// A MIG layout of a model and what one GPU advertises in it.
#[derive(Debug, Deserialize, Serialize)]
pub struct Layout {
    name: String,
    resources: BTreeMap<String, u32>,
}

impl From<MigLayout> for Layout {
    fn from(layout: MigLayout) -> Self {
        Self {
            resources: layout.resources().into_iter().collect(),
            name: layout.name,
        }
    }
}

/// The model's MIG layouts mig-manager's default configuration applies
/// wherever `applies` says it does.
fn layouts(model: &Accelerator, applies: impl Fn(&str) -> bool) -> Vec<Layout> {
    model
        .mig_layouts()
        .into_iter()
        .filter(|l| applies(&l.name))
        .map(Layout::from)
        .collect()
}

impl From<&'static Accelerator> for Entry {
    fn from(a: &'static Accelerator) -> Self {
        let (major, minor) = a.compute_capability;
        Self {
            name: a.name.to_string(),
            architecture: a.architecture.as_str().to_string(),
            compute_capability: format!("{major}.{minor}"),
            memory_gib: a.memory_gib,
            time_slicing: a.supports(Sharing::TimeSlicing),
            mps: a.supports(Sharing::Mps),
            mig: a.supports(Sharing::Mig),
            max_mps_clients: a.max_mps_clients(),
            mig_profiles: a
                .mig_profiles
                .iter()
                .map(|p| Profile {
                    name: p.name.to_string(),
                    max_instances: p.max_instances,
                    resource: catalog::mig_resource(p.name),
                })
                .collect(),
            mig_layouts: layouts(a, |layout| a.parts().all(|p| p.applies(layout))),
            resource_names: a.resource_names(),
            parts: a
                .parts()
                .map(|p| PartEntry {
                    name: p.name.to_string(),
                    pci_device_id: format!("0x{:04X}", p.pci_device_id),
                    device_filter: p.device_filter(),
                    form: p.form.as_str().to_string(),
                    gpu_link: p.form.gpu_link().to_string(),
                    mig_layouts: layouts(a, |layout| p.applies(layout)),
                })
                .collect(),
        }
    }
}

impl Model {
    /// Catalog entries passing every filter, in catalog order.
    fn apply(&self) -> Vec<&'static Accelerator> {
        let sharing = self.sharing.as_deref().and_then(Sharing::parse);
        let named = |a: &Accelerator| {
            self.names.as_ref().is_none_or(|names| {
                names
                    .iter()
                    .any(|n| catalog::lookup(n).is_ok_and(|found| found.name == a.name))
            })
        };
        catalog::all()
            .iter()
            .filter(|a| sharing.is_none_or(|mode| a.supports(mode)))
            .filter(|a| self.min_memory_gib.is_none_or(|gib| a.memory_gib >= gib))
            .filter(|a| named(a))
            .collect()
    }
}

/// A list of MIG layouts (GPU Operator, assets/state-mig-manager/0400_configmap.yaml) and
/// what one GPU advertises in each.
fn mig_layouts() -> Attr {
    Attr::nested(
        "mig_layouts",
        Nesting::List,
        vec![
            Attr::string("name").computed().describe(
                "A layout mig-manager knows, for a fleet's `gpu_sharing.mig_layout`: `all-disabled`, `all-enabled`, `all-balanced` or `all-<profile>`.",
            ),
            Attr::number_map("resources").computed().describe(
                "What one GPU advertises in it: resource name to count (`nvidia.com/gpu = 1` with MIG off).",
            ),
        ],
    )
    .computed()
}

#[async_trait]
impl DataSource<Cluster> for Accelerators {
    type Model = Model;

    fn name(&self) -> &'static str {
        "accelerators"
    }

    fn schema(&self) -> ObjectSchema {
        let computed = |attr: Attr| attr.computed();
        ObjectSchema::new(
            "GPU models gpufleet knows, with their memory, compute capability and sharing support. Filters narrow the list; all filters must match.",
            vec![
                Attr::string("sharing")
                    .optional()
                    .validate(one_of(Sharing::NAMES))
                    .describe(
                        "Only models supporting this sharing mode: `time_slicing`, `mps` or `mig`.",
                    ),
                Attr::number("min_memory_gib")
                    .optional()
                    .validate(integer_between(0, 10_000, ""))
                    .describe("Only models with at least this much memory per GPU, in GiB."),
                Attr::string_set("names")
                    .optional()
                    .validate(each(catalog::known_name()))
                    .describe("Only these models (catalog names, any case)."),
                Attr::nested(
                    "accelerators",
                    Nesting::List,
                    vec![
                        computed(Attr::string("name")).describe("Catalog name, e.g. `H100`."),
                        computed(Attr::string("architecture")).describe("e.g. `hopper`."),
                        computed(Attr::string("compute_capability"))
                            .describe("CUDA compute capability, e.g. `9.0`."),
                        computed(Attr::number("memory_gib")).describe("Memory per GPU in GiB."),
                        computed(Attr::bool("time_slicing")),
                        computed(Attr::bool("mps")),
                        computed(Attr::bool("mig")),
                        computed(Attr::number("max_mps_clients"))
                            .describe("Most MPS clients per GPU; 0 without MPS."),
                        computed(Attr::nested(
                            "mig_profiles",
                            Nesting::List,
                            vec![
                                computed(Attr::string("name")).describe("e.g. `1g.10gb`."),
                                computed(Attr::number("max_instances"))
                                    .describe("Most instances per GPU."),
                                computed(Attr::string("resource")).describe(
                                    "The resource its devices are advertised as with the mixed MIG strategy, e.g. `nvidia.com/mig-1g.10gb`.",
                                ),
                            ],
                        )),
                        mig_layouts().describe(
                            "The MIG layouts mig-manager's default configuration applies to every part of the model; empty without MIG. A layout it applies to some parts only (`all-1g.35gb`: the H200 SXM, not the H200 NVL) is listed under those `parts`.",
                        ),
                        computed(Attr::string_list("resource_names")).describe(
                            "Every resource name nodes with this model can advertise: `nvidia.com/gpu`, `nvidia.com/gpu.shared` when sharing renames, and each MIG device (also `.shared`).",
                        ),
                        computed(Attr::nested(
                            "parts",
                            Nesting::List,
                            vec![
                                computed(Attr::string("name")).describe(
                                    "The name that singles the part out in `accelerators`, e.g. `H100-SXM`.",
                                ),
                                computed(Attr::string("pci_device_id"))
                                    .describe("NVIDIA's PCI device ID, e.g. `0x2330`."),
                                computed(Attr::string("device_filter")).describe(
                                    "The part as a `device-filter` of mig-manager's configuration names it, e.g. `0x233010DE`.",
                                ),
                                computed(Attr::string("form"))
                                    .describe("The form factor: `sxm`, `nvl` or `pcie`."),
                                computed(Attr::string("gpu_link")).describe(
                                    "How the GPUs of one node are linked: `nvswitch` (SXM modules on an HGX board, NVLink from every GPU to every other), `nvlink-bridge` (NVL cards, NVLink within each bridged group) or `pcie` (PCIe cards, unless a bridge joins a pair).",
                                ),
                                mig_layouts().describe(
                                    "The MIG layouts mig-manager's default configuration applies to this part: the model's `mig_layouts` and those it applies to this part by PCI device ID only; empty without MIG.",
                                ),
                            ],
                        ))
                        .describe("The parts of the model the catalog tells apart by PCI device ID, with their form factor and MIG layouts; empty where the catalog tells none apart."),
                    ],
                )
                .computed()
                .describe("The matching models, oldest architecture first."),
            ],
        )
    }

    async fn read(&self, _: &Cluster, mut model: Model) -> Result<Model, Diagnostics> {
        model.accelerators = Some(model.apply().into_iter().map(Entry::from).collect());
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::LabelScheme;
    use serde_json::json;

    /// The data source's answer for `filters`, as JSON.
    fn list(filters: serde_json::Value) -> serde_json::Value {
        let model: Model = serde_json::from_value(filters).unwrap();
        let cluster = Cluster::offline(LabelScheme::Cfke);
        let listed = futures::executor::block_on(Accelerators.read(&cluster, model)).unwrap();
        serde_json::to_value(listed).unwrap()
    }

    fn names(filters: serde_json::Value) -> Vec<String> {
        let listing = list(filters);
        listing["accelerators"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap().to_string())
            .collect()
    }

    fn errors(filters: serde_json::Value) -> Vec<(String, String)> {
        let schema = Accelerators.schema();
        let config = crate::protocol::codec::from_json(&filters, &schema.value_type()).unwrap();
        schema.validate_config(&config).located()
    }

    /// Without filters, every supported model, oldest architecture first.
    #[test]
    fn lists_the_whole_catalog_without_filters() {
        assert_eq!(
            names(json!({})),
            [
                "P100",
                "V100-16GB",
                "V100-32GB",
                "T4",
                "T4G",
                "A100-40GB",
                "A100-80GB",
                "A30",
                "A10",
                "A10G",
                "A40",
                "L4",
                "L40",
                "L40S",
                "H100",
                "H200",
                "H20",
                "GH200",
                "B200",
                "GB200",
                "B300",
                "GB300",
                "RTX-PRO-6000",
                "RTX-PRO-4500",
            ]
        );
    }

    #[test]
    fn filters_combine() {
        let mig_80 = names(json!({"sharing": "mig", "min_memory_gib": 80}));
        assert!(mig_80.contains(&"H100".to_string()));
        assert!(mig_80.contains(&"A100-80GB".to_string()));
        assert!(!mig_80.contains(&"A100-40GB".to_string()));
        assert!(!mig_80.contains(&"L40S".to_string()));
        // Any spelling; catalog order (oldest architecture first).
        assert_eq!(
            names(json!({"names": ["h100", "nvidia l4"]})),
            ["L4", "H100"]
        );
        assert!(names(json!({"names": ["L4"], "sharing": "mig"})).is_empty());
    }

    #[test]
    fn entries_describe_the_model() {
        let listing = list(json!({"names": ["H100"], "sharing": "mps"}));
        let h100 = &listing["accelerators"][0];
        assert_eq!(h100["compute_capability"], "9.0");
        assert_eq!(h100["architecture"], "hopper");
        assert_eq!(h100["memory_gib"], 80);
        assert_eq!(
            (&h100["time_slicing"], &h100["mps"], &h100["mig"]),
            (&json!(true), &json!(true), &json!(true))
        );
        assert_eq!(h100["max_mps_clients"], 48);
        assert_eq!(
            h100["mig_profiles"][0],
            json!({"name": "1g.10gb", "max_instances": 7, "resource": "nvidia.com/mig-1g.10gb"})
        );
        let layouts = h100["mig_layouts"].as_array().unwrap();
        assert_eq!(
            layouts[0],
            json!({"name": "all-disabled", "resources": {"nvidia.com/gpu": 1}})
        );
        assert!(
            layouts.contains(
                &json!({"name": "all-1g.10gb", "resources": {"nvidia.com/mig-1g.10gb": 7}})
            )
        );
        assert!(
            h100["resource_names"]
                .as_array()
                .unwrap()
                .contains(&json!("nvidia.com/mig-1g.10gb"))
        );
        let l4 = &list(json!({"names": ["L4"]}))["accelerators"][0];
        assert_eq!(l4["mig_layouts"], json!([]));
        assert_eq!(
            l4["resource_names"],
            json!(["nvidia.com/gpu", "nvidia.com/gpu.shared"])
        );
        // The filters stay as configured.
        assert_eq!(listing["names"], json!(["H100"]));
        assert_eq!(listing["sharing"], "mps");
    }

    /// mig-manager's default configuration applies `all-1g.35gb` to the H200 SXM only: the
    /// model lists the layouts every part gets, each part all of its own.
    #[test]
    fn layouts_only_some_parts_get_are_listed_under_those_parts() {
        let names = |layouts: &serde_json::Value| -> Vec<String> {
            layouts
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["name"].as_str().unwrap().to_string())
                .collect()
        };
        let listing = list(json!({"names": ["H200", "H100"]}));
        let [h100, h200] = [&listing["accelerators"][0], &listing["accelerators"][1]];
        let every_part = names(&h200["mig_layouts"]);
        assert_eq!(
            every_part,
            [
                "all-disabled",
                "all-enabled",
                "all-balanced",
                "all-1g.18gb",
                "all-1g.18gb.me",
                "all-2g.35gb",
                "all-3g.71gb",
                "all-4g.71gb",
                "all-7g.141gb",
            ]
        );
        let (sxm, nvl) = (&h200["parts"][0], &h200["parts"][1]);
        assert_eq!(
            (&sxm["name"], &sxm["device_filter"]),
            (&json!("H200-SXM"), &json!("0x233510DE"))
        );
        let mut sxm_only = names(&sxm["mig_layouts"]);
        sxm_only.retain(|l| !every_part.contains(l));
        assert_eq!(sxm_only, ["all-1g.35gb"]);
        assert!(
            sxm["mig_layouts"].as_array().unwrap().contains(
                &json!({"name": "all-1g.35gb", "resources": {"nvidia.com/mig-1g.35gb": 4}})
            )
        );
        assert_eq!(nvl["name"], "H200-NVL");
        assert_eq!(names(&nvl["mig_layouts"]), every_part);
        // Every H100 part gets every H100 layout.
        for part in h100["parts"].as_array().unwrap() {
            assert_eq!(part["mig_layouts"], h100["mig_layouts"], "{part}");
        }
        assert_eq!(h100["mig_layouts"].as_array().unwrap().len(), 10);
    }

    #[test]
    fn bad_filters_are_reported_at_their_attribute() {
        let found = errors(json!({"names": ["H10"]}));
        assert_eq!(found[0].0, "names");
        assert!(found[0].1.contains("did you mean `H100`?"), "{found:?}");
        assert_eq!(errors(json!({"sharing": "slicing"}))[0].0, "sharing");
        assert_eq!(errors(json!({"min_memory_gib": -1}))[0].0, "min_memory_gib");
    }
}
