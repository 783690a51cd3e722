//! Unit tests of the shared sharing settings: checks against the catalog,
//! the configurations and what nodes advertise.

use serde_json::json;

use super::*;
use crate::catalog::Part;
use crate::catalog::{lookup, part_named};
use crate::framework::schema::ObjectSchema;
use crate::protocol::codec::from_json;

fn settings_value(settings: serde_json::Value) -> Value {
    let ty = ObjectSchema::new("", attributes(Strategy::NODES, true)).value_type();
    from_json(&settings, &ty).unwrap()
}

/// What `check` reports for a fleet of `models` (names as typed).
fn fleet_check(models: &[&str], settings: serde_json::Value) -> Diagnostics {
    let parts: Vec<&'static Part> = models.iter().filter_map(|m| part_named(m)).collect();
    let models: Vec<&'static Accelerator> = models.iter().map(|m| lookup(m).unwrap()).collect();
    let mut d = Diagnostics::default();
    let path = AttributePath::attr("gpu_sharing");
    check(
        &settings_value(settings),
        &path,
        Strategy::NODES,
        Models::Fleet {
            models: &models,
            parts: &parts,
        },
        &mut d,
    );
    d
}

/// (path, detail) of what `check` reports for a fleet of `models`.
fn fleet_errors(models: &[&str], settings: serde_json::Value) -> Vec<(String, String)> {
    fleet_check(models, settings).located()
}

fn one_error(models: &[&str], settings: serde_json::Value) -> (String, String) {
    let found = fleet_errors(models, settings);
    assert_eq!(found.len(), 1, "{found:#?}");
    found.into_iter().next().unwrap()
}

#[test]
fn each_bad_combination_names_the_attribute_and_the_model() {
    // MPS before Volta is NVIDIA's legacy MPS: a warning, 16 clients at most.
    let found = fleet_errors(&["P100"], json!({"strategy": "mps", "replicas": 17}));
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0].0, "gpu_sharing.replicas");
    assert!(
        found[0].1.contains("P100 serves per GPU: at most 16"),
        "{found:?}"
    );
    assert_eq!(found[1].0, "gpu_sharing.strategy");
    assert!(
        found[1].1.contains("Multi-Process Service documentation"),
        "{found:?}"
    );
    let (path, detail) = one_error(
        &["L4"],
        json!({"strategy": "mig", "mig_layout": "all-1g.10gb"}),
    );
    assert_eq!(path, "gpu_sharing.strategy");
    assert!(detail.contains("L4 has no MIG"), "{detail}");
    let (path, detail) = one_error(
        &["H200"],
        json!({"strategy": "mig", "mig_layout": "all-1g.10gb"}),
    );
    assert_eq!(path, "gpu_sharing.mig_layout");
    assert!(
        detail.contains("H200 has no layout `all-1g.10gb`"),
        "{detail}"
    );
    assert!(detail.contains("\"all-1g.18gb\""), "{detail}");
    let (path, detail) = one_error(&["V100-16GB"], json!({"strategy": "mps", "replicas": 20}));
    assert_eq!(path, "gpu_sharing.replicas");
    assert!(
        detail.contains("V100-16GB serves per GPU: at most 16"),
        "{detail}"
    );
    let (path, detail) = one_error(&[], json!({"strategy": "mig", "mig_layout": "all-1g.10gb"}));
    assert_eq!(path, "gpu_sharing.strategy");
    assert!(detail.contains("sets no `accelerators`"), "{detail}");
    let (path, _) = one_error(&[], json!({"strategy": "mps", "replicas": 4}));
    assert_eq!(path, "gpu_sharing.strategy");
    // H100 and H200 cannot share one layout that only H100 has...
    let found = fleet_errors(
        &["H100", "H200"],
        json!({"strategy": "mig", "mig_layout": "all-1g.10gb"}),
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("H200 has no layout"), "{found:?}");
    // ...nor one that splits them differently.
    let (path, detail) = one_error(
        &["H100", "H200"],
        json!({"strategy": "mig", "mig_layout": "all-balanced"}),
    );
    assert_eq!(path, "gpu_sharing.mig_layout");
    assert!(
        detail.contains("H100 2 × nvidia.com/mig-1g.10gb"),
        "{detail}"
    );
    assert!(
        detail.contains("H200 2 × nvidia.com/mig-1g.18gb"),
        "{detail}"
    );
}

#[test]
fn settings_go_together() {
    let paths = |models: &[&str], s| {
        fleet_errors(models, s)
            .into_iter()
            .map(|(p, _)| p)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        paths(&["L4"], json!({"strategy": "time_slicing"})),
        ["gpu_sharing.replicas"]
    );
    assert_eq!(
        paths(&["H100"], json!({"strategy": "mig"})),
        ["gpu_sharing.mig_layout"]
    );
    assert_eq!(
        paths(
            &["L4"],
            json!({"strategy": "time_slicing", "replicas": 2, "mig_layout": "all-1g.10gb"})
        ),
        ["gpu_sharing.mig_layout"]
    );
    assert_eq!(
        paths(
            &["H100"],
            json!({"strategy": "mig", "mig_layout": "all-enabled", "replicas": 2})
        ),
        ["gpu_sharing.replicas"]
    );
    assert_eq!(
        paths(
            &["H100"],
            json!({"strategy": "mig", "mig_layout": "all-1g.10gb", "rename_by_default": true})
        ),
        ["gpu_sharing.rename_by_default"]
    );
    assert_eq!(
        paths(
            &["L4"],
            json!({"strategy": "none", "fail_requests_greater_than_one": true})
        ),
        ["gpu_sharing.fail_requests_greater_than_one"]
    );
    // Models sharing one split are fine together, and so is time slicing
    // without known models.
    assert!(
        fleet_errors(
            &["A100-80GB", "H100"],
            json!({"strategy": "mig", "mig_layout": "all-balanced"})
        )
        .is_empty()
    );
    assert!(fleet_errors(&[], json!({"strategy": "time_slicing", "replicas": 4})).is_empty());
    assert!(fleet_errors(&["T4", "L4"], json!({"strategy": "mps", "replicas": 48})).is_empty());
}

fn settings(json: serde_json::Value) -> Settings {
    serde_json::from_value(json).unwrap()
}

#[test]
fn what_a_gpu_advertises() {
    let h100 = [lookup("H100").unwrap()];
    let shared =
        settings(json!({"strategy": "time_slicing", "replicas": 4, "rename_by_default": true}));
    let advertised = shared.advertised(&h100, MigStrategy::Mixed);
    assert_eq!(
        advertised.resource.as_deref(),
        Some("nvidia.com/gpu.shared")
    );
    assert_eq!(advertised.units_per_gpu(), 4);
    assert_eq!(
        advertised.node_capacity(8),
        BTreeMap::from([
            ("nvidia.com/gpu".to_string(), "0".to_string()),
            ("nvidia.com/gpu.shared".to_string(), "32".to_string()),
        ])
    );
    let mig = settings(json!({"strategy": "mig", "mig_layout": "all-balanced", "replicas": 2}));
    let advertised = mig.advertised(&h100, MigStrategy::Mixed);
    assert_eq!(
        advertised.resource.as_deref(),
        Some("nvidia.com/mig-1g.10gb")
    );
    assert_eq!(advertised.units_per_gpu(), 4);
    assert_eq!(advertised.node_capacity(2)["nvidia.com/mig-3g.40gb"], "4");
    let dedicated = settings(json!({"strategy": "none"}));
    assert!(
        dedicated
            .advertised(&h100, MigStrategy::Mixed)
            .node_capacity(8)
            .is_empty()
    );
    let enabled = settings(json!({"strategy": "mig", "mig_layout": "all-enabled"}));
    assert_eq!(enabled.advertised(&h100, MigStrategy::Mixed).resource, None);
}

/// The same key advertises differently under the device plugin's MIG
/// strategy: all alike as `nvidia.com/gpu` under single, the whole GPU
/// under none, nothing where single refuses the layout.
#[test]
fn what_a_gpu_advertises_under_each_mig_strategy() {
    let h100 = [lookup("H100").unwrap()];
    let small = settings(json!({"strategy": "mig", "mig_layout": "all-1g.10gb"}));
    let under = |s: &Settings, mig| {
        let a = s.advertised(&h100, mig);
        (a.resource.clone(), a.units_per_gpu())
    };
    assert_eq!(
        under(&small, MigStrategy::Mixed),
        (Some("nvidia.com/mig-1g.10gb".into()), 7)
    );
    assert_eq!(
        under(&small, MigStrategy::Single),
        (Some("nvidia.com/gpu".into()), 7)
    );
    assert_eq!(
        under(&small, MigStrategy::None),
        (Some("nvidia.com/gpu".into()), 1)
    );
    let balanced = settings(json!({"strategy": "mig", "mig_layout": "all-balanced"}));
    assert_eq!(under(&balanced, MigStrategy::Single), (None, 0));
}

#[test]
fn mig_configurations_time_slice_the_layouts_devices() {
    let yaml = settings(json!({"strategy": "mig", "mig_layout": "all-balanced", "replicas": 3}))
        .device_plugin_config(&[lookup("H100").unwrap()])
        .to_yaml();
    let parsed: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(parsed["flags"]["migStrategy"], "mixed");
    let names: Vec<&str> = parsed["sharing"]["timeSlicing"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "nvidia.com/mig-1g.10gb",
            "nvidia.com/mig-2g.20gb",
            "nvidia.com/mig-3g.40gb"
        ]
    );
    // Partitions alone are not shared.
    let plain = settings(json!({"strategy": "mig", "mig_layout": "all-1g.10gb"}))
        .device_plugin_config(&[])
        .to_yaml();
    assert_eq!(
        serde_saphyr::from_str::<serde_json::Value>(&plain).unwrap(),
        json!({"version": "v1", "flags": {"migStrategy": "mixed"}})
    );
}

#[test]
fn imports_read_the_settings_back() {
    for original in [
        settings(
            json!({"strategy": "mps", "replicas": 10, "rename_by_default": true, "fail_requests_greater_than_one": false}),
        ),
        settings(json!({"strategy": "time_slicing", "replicas": 4, "rename_by_default": false})),
        settings(json!({"strategy": "none", "rename_by_default": false})),
        settings(
            json!({"strategy": "mig", "mig_layout": "all-1g.10gb", "replicas": 2, "rename_by_default": false}),
        ),
    ] {
        let yaml = original.device_plugin_config(&[]).to_yaml();
        let parsed = device_plugin::parse(&yaml).unwrap();
        assert_eq!(
            settings_from(&parsed, original.mig_layout.clone()),
            original
        );
    }
}

/// `all-disabled` leaves whole GPUs, and `replicas` time-slices them, as
/// the device plugin does with any GPU whose MIG mode is off.
#[test]
fn all_disabled_time_slices_whole_gpus() {
    let h100 = [lookup("H100").unwrap()];
    let settings = Settings {
        strategy: "mig".into(),
        replicas: Some(4),
        mig_layout: Some("all-disabled".into()),
        ..Default::default()
    };
    assert!(
        fleet_errors(
            &["H100"],
            json!({"strategy": "mig", "mig_layout": "all-disabled", "replicas": 4})
        )
        .is_empty()
    );
    let parsed = device_plugin::parse(&settings.device_plugin_config(&h100).to_yaml()).unwrap();
    assert_eq!(
        parsed["sharing"]["timeSlicing"]["resources"],
        json!([{"name": "nvidia.com/gpu", "devices": "all", "replicas": 4}])
    );
    let advertised = settings.advertised(&h100, MigStrategy::Mixed);
    assert_eq!(advertised.resource.as_deref(), Some("nvidia.com/gpu"));
    assert_eq!(advertised.units_per_gpu(), 4);
    // all-enabled makes no devices: nothing to time-slice.
    let found = fleet_errors(
        &["H100"],
        json!({"strategy": "mig", "mig_layout": "all-enabled", "replicas": 4}),
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("makes no MIG devices"), "{found:?}");
}

#[test]
fn training_taints() {
    assert!(
        marks_training("workload", Some("training"))
            && !marks_training("workload", Some("inference"))
    );
}

/// The cluster-wide sharing and the fleets and node sharings it affects,
/// planned in one provider process in either order, show the same
/// diagnostics: none of them depends on what the other planned.
#[test]
fn the_diagnostics_of_a_run_do_not_depend_on_plan_order() {
    use crate::framework::testkit::Harness;
    use crate::kit::Cluster;
    use crate::kit::node_scoped::NodeResource;
    use crate::kit::object::ObjectResource;
    use crate::resources::{fleet::Fleet, gpu_sharing::GpuSharing, node_sharing::NodeSharing};

    let default = Harness::new(GpuSharing);
    let fleet = Harness::new(ObjectResource(Fleet));
    let nodes = Harness::new(NodeResource(NodeSharing));
    let configs = [
        (
            &default,
            json!({"strategy": "mps", "replicas": 4, "mig_strategy": "single"}),
        ),
        (
            &fleet,
            json!({"name": "mig", "accelerators": ["H100"], "accelerator_count": {"min": 8, "max": 8},
                "node_class": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
                "gpu_sharing": {"strategy": "mig", "mig_layout": "all-1g.10gb"}}),
        ),
        (
            &fleet,
            json!({"name": "chat", "accelerators": ["L4"],
                "node_class": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}}),
        ),
        (
            &nodes,
            json!({"name": "dgx", "node_name": "dgx-1", "strategy": "mig", "mig_layout": "all-balanced"}),
        ),
    ];
    let run = |order: &[usize]| {
        let cluster = Cluster::offline(crate::catalog::LabelScheme::Cfke);
        let mut shown: Vec<(usize, String, String, String)> = order
            .iter()
            .flat_map(|&i| {
                let (harness, config) = &configs[i];
                let plan = harness.plan(&cluster, &Value::Null, &harness.value(config.clone()));
                plan.diagnostics.0.into_iter().map(move |d| {
                    let path = d.path.as_ref().map(ToString::to_string).unwrap_or_default();
                    (i, path, d.summary, d.detail)
                })
            })
            .collect();
        shown.sort();
        shown
    };
    let forwards = run(&[0, 1, 2, 3]);
    assert_eq!(forwards, run(&[3, 2, 1, 0]));
    assert_eq!(forwards, run(&[1, 3, 0, 2]));
    // The cluster is out of reach: the MIG fleet and the MIG node sharing
    // each say what apply checks, and nothing else is said.
    let said: Vec<(usize, &str, &str)> = forwards
        .iter()
        .map(|(i, path, summary, _)| (*i, path.as_str(), summary.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            (
                1,
                "gpu_sharing.mig_strategy",
                "MIG strategy checked at apply"
            ),
            (3, "mig_strategy", "MIG strategy checked at apply"),
        ]
    );
}

#[test]
fn a_layout_mig_manager_withholds_from_a_part_is_refused_for_it() {
    let check_of = |models: &[&str]| {
        let d = fleet_check(
            models,
            json!({"strategy": "mig", "mig_layout": "all-1g.35gb"}),
        );
        (d.has_errors(), d.located())
    };
    // The NVL part, named: mig-manager's filter lists only the SXM part.
    let (errors, found) = check_of(&["H200-NVL"]);
    assert!(errors, "{found:#?}");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, "gpu_sharing.mig_layout");
    assert!(
        found[0].1.contains("the H200-NVL (0x233B10DE) would keep"),
        "{found:?}"
    );
    // Both parts named: the NVL nodes would still get nothing.
    assert!(check_of(&["H200-SXM", "H200-NVL"]).0);
    // The SXM part: applied, nothing to say.
    assert_eq!(check_of(&["nvidia h200 sxm"]), (false, Vec::new()));
    // The model, which covers both parts: a warning naming the way out.
    let (errors, found) = check_of(&["H200"]);
    assert!(!errors, "{found:#?}");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]
            .1
            .contains("applies `all-1g.35gb` only to \"H200-SXM\"")
            && found[0].1.contains("the H200-NVL (0x233B10DE) keeps"),
        "{found:?}"
    );
    // Layouts mig-manager applies to every H200 part pass for the NVL.
    assert_eq!(
        fleet_errors(
            &["H200-NVL"],
            json!({"strategy": "mig", "mig_layout": "all-1g.18gb"})
        ),
        Vec::new()
    );
}

/// A profile or `balanced` without `all-` is one mistake: one error, from the
/// `mig_layout` validator, naming the layout meant; `check` leaves a name no
/// model has to it.
#[test]
fn a_layout_without_all_is_one_error_naming_the_layout_meant() {
    let schema = ObjectSchema::new("", attributes(Strategy::NODES, true));
    for (typed, meant) in [
        ("1g.10gb", "all-1g.10gb"),
        ("balanced", "all-balanced"),
        ("1g.10gb+me", "all-1g.10gb.me"),
        ("all-1g.10gb+me", "all-1g.10gb.me"),
    ] {
        let settings = json!({"strategy": "mig", "mig_layout": typed});
        let mut found = schema
            .validate_config(&settings_value(settings.clone()))
            .located();
        found.extend(fleet_errors(&["H100"], settings));
        assert_eq!(found.len(), 1, "{typed}: {found:#?}");
        assert_eq!(found[0].0, "mig_layout");
        assert!(
            found[0].1.contains(&format!("did you mean `{meant}`?")),
            "{found:?}"
        );
    }
    // A name that is no layout's, with or without `all-`, names none.
    let found = schema
        .validate_config(&settings_value(
            json!({"strategy": "mig", "mig_layout": "9g.99gb"}),
        ))
        .located();
    assert!(
        found[0].1.contains("is not a MIG layout: use all-disabled"),
        "{found:?}"
    );
}
