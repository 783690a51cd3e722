//! The catalog and the device-plugin configuration against files of NVIDIA's
//! GPU Operator, read at test time from the operator's Go module at the
//! version testbed/cluster.sh pins (the snapshot whose
//! ClusterPolicy CRD the test cluster installs). Needs Go and the module
//! cache or proxy, no cluster; without them the tests say they were skipped,
//! which fails under `make test`.

use std::collections::BTreeSet;

use common::go_module::gpu_operator_file;
use gpufleet::catalog::{self, MIG_BALANCED, MigLayout};
use gpufleet::resources::sharing::device_plugin::{
    Config, MigStrategy, Replicated, SharedBy, same_behaviour,
};
use serde_json::Value;

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
