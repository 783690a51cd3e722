//! The catalog and the device-plugin configuration against files of NVIDIA's
//! GPU Operator, read at test time from the operator's Go module at the
//! version testbed/cluster.sh pins (the snapshot whose
//! ClusterPolicy CRD the test cluster installs), or from the verbatim copies
//! in tests/upstream/. Needs Go and the module cache or proxy, no cluster;
//! without them the tests say they were skipped, which fails under
//! `make test`. The data source's listing is read through each CLI.

use std::collections::{BTreeMap, BTreeSet};

use common::go_module::gpu_operator_file;
use common::terraform::each_cli;
use gpufleet::catalog::{self, MIG_BALANCED, MigLayout};
use gpufleet::resources::sharing::device_plugin::{
    Config, MigStrategy, Replicated, SharedBy, same_behaviour,
};
use serde_json::Value;

use super::accelerators::workspace;

/// The catalog models the pinned snapshot predates: mig-manager learnt
/// their layouts in a later release. Bumping the pin past it fails
/// `catalog_layouts_are_mig_managers_defaults` until they leave this list.
const PREDATED: &[&str] = &["B300", "GB300"];

/// The models whose media-engine variants the catalog leaves out on
/// purpose (see `MIG_RTX_PRO_6000` in src/catalog/models.rs).
const MEDIA_VARIANTS_LEFT_OUT: &[&str] = &["RTX-PRO-6000"];

/// The devices of one mig-manager configuration entry: (profile, count).
fn their_devices(entry: &Value) -> Vec<(String, u64)> {
    entry["mig-devices"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(profile, n)| (profile.clone(), n.as_u64().unwrap()))
        .collect()
}

fn our_devices(layout: &MigLayout) -> Vec<(String, u64)> {
    layout
        .devices
        .iter()
        .map(|(profile, n)| (profile.name.to_string(), u64::from(*n)))
        .collect()
}

/// For every catalog model with MIG but those in [`PREDATED`]: each layout
/// the catalog derives is one of mig-manager's default configurations, with
/// the same devices where the configuration has one entry for all GPUs, and
/// the model's `all-balanced` is one of that configuration's per-GPU
/// entries. The models whose `all-balanced` the snapshot lacks are exactly
/// [`PREDATED`], and it has none of the layouts only they have.
#[test]
fn catalog_layouts_are_mig_managers_defaults() {
    let Some(file) = gpu_operator_file(
        "mig-manager's default MIG layouts",
        "assets/state-mig-manager/0400_configmap.yaml",
    ) else {
        return;
    };
    let config_map: Value = serde_saphyr::from_str(&file).unwrap();
    let parted: Value =
        serde_saphyr::from_str(config_map["data"]["config.yaml"].as_str().unwrap()).unwrap();
    let configs = parted["mig-configs"].as_object().unwrap();
    let entries = |name: &str| configs.get(name).and_then(Value::as_array);
    let balanced: Vec<_> = entries(MIG_BALANCED)
        .unwrap()
        .iter()
        .map(their_devices)
        .collect();

    let (predated, covered): (Vec<_>, Vec<_>) = catalog::all()
        .iter()
        .filter(|a| !a.mig_profiles.is_empty())
        .partition(|a| {
            let ours = our_devices(&a.mig_layout(MIG_BALANCED).unwrap());
            !balanced.contains(&ours)
        });
    assert_eq!(
        predated.iter().map(|a| a.name).collect::<Vec<_>>(),
        PREDATED,
        "the models whose all-balanced the snapshot does not list"
    );

    let (mut named, mut compared) = (0, 0);
    for accelerator in &covered {
        for layout in accelerator.mig_layouts() {
            let theirs = entries(&layout.name).unwrap_or_else(|| {
                panic!(
                    "{}: {} is not in mig-manager's defaults",
                    accelerator.name, layout.name
                )
            });
            named += 1;
            // Several entries are per GPU type (device filters); all-balanced
            // was matched above, the others pick by PCI ID we do not keep.
            let [only] = theirs.as_slice() else { continue };
            assert_eq!(
                only["mig-enabled"], layout.mig_enabled,
                "{} {}",
                accelerator.name, layout.name
            );
            assert_eq!(
                our_devices(&layout),
                their_devices(only),
                "{} {}",
                accelerator.name,
                layout.name
            );
            compared += 1;
        }
    }

    // The other way round: where mig-manager has a media-engine layout of a
    // model's smallest profile (`all-1g.12gb.me`), the catalog has that
    // `+me` profile too.
    for accelerator in covered
        .iter()
        .filter(|a| !MEDIA_VARIANTS_LEFT_OUT.contains(&a.name))
    {
        let smallest = accelerator.mig_profiles[0].name;
        let with_media = format!("{smallest}+me");
        if entries(&catalog::single_profile_layout(&with_media)).is_some() {
            assert!(
                accelerator.mig_profile(&with_media).is_some(),
                "{}: mig-manager's defaults have {with_media}, the catalog does not",
                accelerator.name
            );
        }
    }

    let of_covered: BTreeSet<String> = covered
        .iter()
        .flat_map(|a| a.mig_layouts())
        .map(|l| l.name)
        .collect();
    for accelerator in &predated {
        let own: Vec<String> = accelerator
            .mig_layouts()
            .into_iter()
            .map(|l| l.name)
            .filter(|name| !of_covered.contains(name))
            .collect();
        assert!(
            !own.is_empty(),
            "{} has no layout of its own",
            accelerator.name
        );
        for name in &own {
            assert!(
                entries(name).is_none(),
                "{}: the snapshot has {name}; it may no longer predate the model",
                accelerator.name
            );
        }
    }
    eprintln!(
        "{} models' all-balanced found among mig-manager's; {named} layouts found by name, \
         {compared} compared device by device; predated: {PREDATED:?}",
        covered.len()
    );
}

/// mig-manager's default configuration of GPU Operator v26.7.0 (a verbatim
/// copy, see tests/upstream/README.md), whose layouts carry PCI device
/// filters the pinned snapshot predates.
fn mig_manager_v26_configs() -> serde_json::Map<String, Value> {
    let file = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/upstream/gpu-operator-v26.7.0/0400_configmap.yaml"
    ))
    .unwrap();
    let config_map: Value = serde_saphyr::from_str(&file).unwrap();
    let parted: Value =
        serde_saphyr::from_str(config_map["data"]["config.yaml"].as_str().unwrap()).unwrap();
    parted["mig-configs"].as_object().unwrap().clone()
}

/// The devices an entry's `device-filter` names (one string or a list);
/// `None` when it has none and so applies to every GPU.
fn device_filter(entry: &Value) -> Option<Vec<String>> {
    match &entry["device-filter"] {
        Value::Null => None,
        Value::String(one) => Some(vec![one.clone()]),
        many => Some(
            many.as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap().to_string())
                .collect(),
        ),
    }
}

/// The entry of a layout's `entries` mig-manager applies to the PCI `device`: one whose
/// filter names it, or one without a filter.
fn entry_for<'a>(entries: &'a [Value], device: &str) -> Option<&'a Value> {
    entries
        .iter()
        .find(|e| device_filter(e).is_none_or(|f| f.iter().any(|d| d == device)))
}

/// Whether mig-manager applies the layout `entries` to the PCI `device`.
fn applied_to(entries: &[Value], device: &str) -> bool {
    entry_for(entries, device).is_some()
}

/// What one GPU advertises once mig-manager applies `entry`, as the data source lists it:
/// a whole GPU with MIG off, else each MIG device under the name the device plugin's mixed
/// strategy gives it (`nvidia.com/mig-1g.10gb`, `+me` spelled `.me`).
fn advertised(entry: &Value) -> Advertised {
    if entry["mig-enabled"] == false {
        return Advertised::from([("nvidia.com/gpu".to_string(), 1)]);
    }
    their_devices(entry)
        .into_iter()
        .map(|(profile, n)| (format!("nvidia.com/mig-{}", profile.replace('+', ".")), n))
        .collect()
}

/// Resource name to count, per GPU.
type Advertised = BTreeMap<String, u64>;

/// Each part the catalog tells apart within a model is one of the devices
/// mig-manager's `all-balanced` entry for that model names, and it is
/// withheld exactly the layouts mig-manager's device filters do not apply
/// to it. Every other model's layouts apply to all the devices of its
/// `all-balanced` entry, so no model needs parts the catalog lacks.
#[test]
fn parts_get_the_layouts_mig_managers_device_filters_give_them() {
    let configs = mig_manager_v26_configs();
    let entries = |name: &str| configs.get(name).and_then(Value::as_array);
    let (mut parts, mut layouts) = (0, 0);
    for model in catalog::all().iter().filter(|a| !a.mig_profiles.is_empty()) {
        let ours = our_devices(&model.mig_layout(MIG_BALANCED).unwrap());
        let devices: Vec<String> = entries(MIG_BALANCED)
            .unwrap()
            .iter()
            .filter(|e| their_devices(e) == ours)
            .filter_map(device_filter)
            .flatten()
            .collect();
        assert!(!devices.is_empty(), "{}: no all-balanced entry", model.name);
        let model_parts: Vec<_> = model.parts().collect();
        for part in &model_parts {
            assert!(
                devices.contains(&part.device_filter()),
                "{} {}: {} is not among {devices:?}",
                model.name,
                part.name,
                part.device_filter()
            );
            parts += 1;
        }
        for layout in model.mig_layouts() {
            let Some(theirs) = entries(&layout.name) else {
                continue;
            };
            layouts += 1;
            if model_parts.is_empty() {
                for device in &devices {
                    assert!(
                        applied_to(theirs, device),
                        "{}: mig-manager does not apply {} to {device}; the catalog needs the part",
                        model.name,
                        layout.name
                    );
                }
            }
            for part in &model_parts {
                assert_eq!(
                    part.applies(&layout.name),
                    applied_to(theirs, &part.device_filter()),
                    "{} {}",
                    part.name,
                    layout.name
                );
            }
        }
    }
    assert!(parts >= 2, "the H200 SXM and NVL at least");
    eprintln!("{parts} parts and {layouts} model layouts checked against v26.7.0's device filters");
}

/// `gpufleet_accelerators` through each CLI against v26.7.0's device filters: each part
/// lists exactly the layouts whose entry for its device makes devices of the model's
/// profiles, each with what that entry makes one GPU advertise, and the model lists those
/// mig-manager applies alike to every device its `all-balanced` entry names, the parts the
/// catalog tells apart and the others (H800, A800).
#[test]
fn the_data_source_lists_the_layouts_mig_manager_applies_to_each_part() {
    let configs = mig_manager_v26_configs();
    // Layout name to what one GPU advertises, for what mig-manager applies to `device` of
    // a model with `profiles`.
    let applied = |device: &str, profiles: &BTreeSet<String>| -> BTreeMap<String, Advertised> {
        configs
            .iter()
            .filter_map(|(name, entries)| {
                let entry = entry_for(entries.as_array().unwrap(), device)?;
                let theirs = their_devices(entry);
                theirs
                    .iter()
                    .all(|(profile, _)| profiles.contains(profile))
                    .then(|| (name.clone(), advertised(entry)))
            })
            .collect()
    };
    let listed = |layouts: &Value| -> BTreeMap<String, Advertised> {
        layouts
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let resources = serde_json::from_value(l["resources"].clone()).unwrap();
                (l["name"].as_str().unwrap().to_string(), resources)
            })
            .collect()
    };
    each_cli(|cli| {
        let mut ws = workspace(
            cli,
            "data \"gpufleet_accelerators\" \"mig\" {\n  sharing = \"mig\"\n}\n\n\
             output \"mig\" {\n  value = data.gpufleet_accelerators.mig.accelerators\n}\n",
        );
        ws.apply();
        let (mut parts, mut part_only) = (0, 0);
        let models = ws.output("mig");
        for model in models.as_array().unwrap() {
            let name = model["name"].as_str().unwrap();
            let profiles: BTreeSet<String> = model["mig_profiles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["name"].as_str().unwrap().to_string())
                .collect();
            let every_part = listed(&model["mig_layouts"]);
            let balanced = &every_part[MIG_BALANCED];
            let devices: Vec<String> = configs[MIG_BALANCED]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| &advertised(e) == balanced)
                .filter_map(device_filter)
                .flatten()
                .collect();
            assert!(
                !devices.is_empty(),
                "{}: {name}: no all-balanced entry",
                cli.name
            );
            let mut on_every_device = applied(&devices[0], &profiles);
            for device in &devices[1..] {
                let on_this = applied(device, &profiles);
                on_every_device.retain(|layout, theirs| on_this.get(layout) == Some(theirs));
            }
            assert_eq!(every_part, on_every_device, "{}: {name}", cli.name);
            for part in model["parts"].as_array().unwrap() {
                let device = part["device_filter"].as_str().unwrap();
                assert_eq!(
                    device,
                    format!("{}10DE", part["pci_device_id"].as_str().unwrap()),
                    "{}: {name}",
                    cli.name
                );
                assert!(devices.iter().any(|d| d == device), "{}: {part}", cli.name);
                let own = listed(&part["mig_layouts"]);
                assert_eq!(own, applied(device, &profiles), "{}: {part}", cli.name);
                parts += 1;
                part_only += own.len() - every_part.len();
            }
        }
        assert_eq!(
            part_only, 1,
            "{}: all-1g.35gb on the H200 SXM only",
            cli.name
        );
        eprintln!(
            "{}: {} models' and {parts} parts' layouts match v26.7.0's device filters",
            cli.name,
            models.as_array().unwrap().len()
        );
    });
}

/// The GPU Operator's own end-to-end time-slicing configuration behaves
/// exactly like the file gpufleet writes for time slicing ten ways,
/// without renaming.
#[test]
fn gpu_operators_e2e_time_slicing_config() {
    let Some(theirs) = gpu_operator_file(
        "the GPU Operator's e2e time-slicing config",
        "tests/plugin-config.yaml",
    ) else {
        return;
    };
    let ours = Config::new(
        MigStrategy::None,
        Some((
            SharedBy::TimeSlicing,
            Replicated::new(["nvidia.com/gpu".to_string()], 10, false, None),
        )),
    )
    .to_yaml();
    assert!(same_behaviour(&theirs, &ours), "{theirs}\nvs\n{ours}");
    let mps = Config::new(
        MigStrategy::None,
        Some((
            SharedBy::Mps,
            Replicated::new(["nvidia.com/gpu".to_string()], 10, false, None),
        )),
    )
    .to_yaml();
    assert!(!same_behaviour(&theirs, &mps));
}
