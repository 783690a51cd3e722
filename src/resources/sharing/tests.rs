//! Unit tests of the shared sharing settings: checks against the catalog,
//! the configurations and what nodes advertise.

use serde_json::json;

use super::*;
use crate::catalog::lookup;
use crate::framework::schema::ObjectSchema;
use crate::protocol::codec::from_json;

fn settings_value(settings: serde_json::Value) -> Value {
    let ty = ObjectSchema::new("", attributes(Strategy::NODES, true)).value_type();
    from_json(&settings, &ty).unwrap()
}

/// (path, detail) of what `check` reports for a fleet of `models`.
fn fleet_errors(models: &[&str], settings: serde_json::Value) -> Vec<(String, String)> {
    let models: Vec<&'static Accelerator> = models.iter().map(|m| lookup(m).unwrap()).collect();
    let mut d = Diagnostics::default();
    let path = AttributePath::attr("gpu_sharing");
    check(
        &settings_value(settings),
        &path,
        Strategy::NODES,
        Models::Fleet(&models),
        &mut d,
    );
    d.located()
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
    let advertised = shared.advertised(&h100);
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
    let advertised = mig.advertised(&h100);
    assert_eq!(
        advertised.resource.as_deref(),
        Some("nvidia.com/mig-1g.10gb")
    );
    assert_eq!(advertised.units_per_gpu(), 4);
    assert_eq!(advertised.node_capacity(2)["nvidia.com/mig-3g.40gb"], "4");
    let dedicated = settings(json!({"strategy": "none"}));
    assert!(dedicated.advertised(&h100).node_capacity(8).is_empty());
    let enabled = settings(json!({"strategy": "mig", "mig_layout": "all-enabled"}));
    assert_eq!(enabled.advertised(&h100).resource, None);
}

#[test]
fn mig_configurations_time_slice_the_layouts_devices() {
    let yaml = settings(json!({"strategy": "mig", "mig_layout": "all-balanced", "replicas": 3}))
        .device_plugin_config(None, &[lookup("H100").unwrap()])
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
        .device_plugin_config(None, &[])
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
        let yaml = original.device_plugin_config(None, &[]).to_yaml();
        let parsed = device_plugin::parse(&yaml).unwrap();
        assert_eq!(
            settings_from(&parsed, original.mig_layout.clone()),
            original
        );
    }
}

#[test]
fn caveats_come_from_whichever_is_planned_second() {
    let cluster = crate::kit::Cluster::offline(crate::catalog::LabelScheme::Cfke);
    let fleet = PlanNote::Fleet {
        name: "training".into(),
        sharing: None,
        mig_layout: None,
    };
    assert!(
        plan_caveats(&cluster, "fleet training", &fleet)
            .0
            .is_empty()
    );
    let default = PlanNote::ClusterDefault {
        strategy: "time_slicing".into(),
        replicas: Some(4),
        mig_strategy: Some("single".into()),
        managed: true,
    };
    let warned = plan_caveats(&cluster, "default", &default);
    assert_eq!(warned.0.len(), 1);
    assert!(
        warned.0[0]
            .detail
            .contains("Fleet \"training\" sets no `gpu_sharing`")
    );
    assert!(warned.0[0].detail.contains("time_slicing × 4"));
    let mig = PlanNote::Fleet {
        name: "mig".into(),
        sharing: Some("mig".into()),
        mig_layout: Some("all-1g.10gb".into()),
    };
    let warned = plan_caveats(&cluster, "fleet mig", &mig);
    assert_eq!(warned.0.len(), 1);
    assert!(warned.0[0].detail.contains("mig_strategy = \"single\""));
    let dedicated = PlanNote::Fleet {
        name: "dedicated".into(),
        sharing: Some("none".into()),
        mig_layout: None,
    };
    assert!(
        plan_caveats(&cluster, "fleet dedicated", &dedicated)
            .0
            .is_empty()
    );
    assert!(
        marks_training("workload", Some("training"))
            && !marks_training("workload", Some("inference"))
    );
}

/// What the device plugin refuses under the cluster's MIG strategy is an
/// error at the attribute of whichever resource is planned second.
#[test]
fn refusals_under_the_cluster_mig_strategy_are_errors() {
    let errors = |d: &Diagnostics| -> Vec<(String, String)> {
        d.0.iter()
            .filter(|d| d.severity == crate::protocol::diagnostics::Severity::Error)
            .map(|d| {
                (
                    d.path.as_ref().map(ToString::to_string).unwrap_or_default(),
                    d.detail.clone(),
                )
            })
            .collect()
    };
    let cluster_default = |mig: &str, managed: bool| PlanNote::ClusterDefault {
        strategy: "none".into(),
        replicas: None,
        mig_strategy: Some(mig.into()),
        managed,
    };
    // MPS fleet planned second: its `gpu_sharing.strategy`.
    let cluster = crate::kit::Cluster::offline(crate::catalog::LabelScheme::Cfke);
    plan_caveats(&cluster, "default", &cluster_default("mixed", true));
    let mps = PlanNote::Fleet {
        name: "chat".into(),
        sharing: Some("mps".into()),
        mig_layout: None,
    };
    let found = errors(&plan_caveats(&cluster, "fleet chat", &mps));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "gpu_sharing.strategy");
    assert!(
        found[0]
            .1
            .contains("using --mig-strategy=mixed is not supported with MPS")
    );
    // The cluster default planned second: its `mig_strategy`.
    let cluster = crate::kit::Cluster::offline(crate::catalog::LabelScheme::Cfke);
    let balanced = PlanNote::Nodes {
        name: "dgx".into(),
        sharing: "mig".into(),
        mig_layout: Some("all-balanced".into()),
    };
    assert!(errors(&plan_caveats(&cluster, "nodes dgx", &balanced)).is_empty());
    let found = errors(&plan_caveats(
        &cluster,
        "default",
        &cluster_default("single", true),
    ));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "mig_strategy");
    assert!(
        found[0]
            .1
            .contains("more than one MIG device type present on node")
    );
    // Without the ClusterPolicy the strategy stays in the `default` key.
    let cluster = crate::kit::Cluster::offline(crate::catalog::LabelScheme::Cfke);
    plan_caveats(&cluster, "nodes dgx", &balanced);
    assert!(
        errors(&plan_caveats(
            &cluster,
            "default",
            &cluster_default("single", false)
        ))
        .is_empty()
    );
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
    let parsed =
        device_plugin::parse(&settings.device_plugin_config(None, &h100).to_yaml()).unwrap();
    assert_eq!(
        parsed["sharing"]["timeSlicing"]["resources"],
        json!([{"name": "nvidia.com/gpu", "devices": "all", "replicas": 4}])
    );
    let advertised = settings.advertised(&h100);
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
