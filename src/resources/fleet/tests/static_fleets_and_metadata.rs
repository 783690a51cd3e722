//! Static fleets, limits over any resource, node lifetime fields, and the
//! NodePool's own metadata.

use super::*;
use crate::framework::Resource;
use crate::protocol::codec::from_json;

fn static_pool() -> serde_json::Value {
    json!({
        "name": "static",
        "node_class": NODE_CLASS(),
        "accelerators": ["L4"],
        "replicas": 3,
        "limits": {"nodes": 4},
    })
}

#[test]
fn a_static_fleet_maps_replicas_and_nodes_limit() {
    let planned = planned(static_pool(), LabelScheme::Cfke);
    let spec = served(&planned, LabelScheme::Cfke)["spec"].clone();
    assert_eq!(spec["replicas"], 3);
    assert_eq!(spec["limits"], json!({"nodes": "4"}));
    assert!(spec.get("weight").is_none());
    let state = read(
        &served(&planned, LabelScheme::Cfke),
        &planned,
        false,
        LabelScheme::Cfke,
    );
    assert_same(&state, &planned, "static fleet read back");
}

#[test]
fn switching_between_static_and_dynamic_replaces_scaling_does_not() {
    let dynamic = planned(training(), LabelScheme::Cfke);
    let static_ = planned(static_pool(), LabelScheme::Cfke);
    let dynamic_config = with(
        static_pool(),
        json!({"replicas": null, "limits": {"gpus": 8}}),
    );
    let cases = [
        (
            &dynamic,
            with(training(), json!({"replicas": 2, "limits": null})),
            true,
        ),
        (&static_, dynamic_config, true),
        (&static_, with(static_pool(), json!({"replicas": 5})), false),
        (&static_, with(static_pool(), json!({"replicas": 0})), false),
    ];
    for (prior, config, replaces) in cases {
        let plan = plan_for(prior, &value(config.clone()), LabelScheme::Cfke);
        assert!(!plan.diagnostics.has_errors(), "{:?}", plan.diagnostics);
        let paths: Vec<String> = plan
            .requires_replace
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            paths.contains(&"replicas".to_string()),
            replaces,
            "{config}: {paths:?}"
        );
    }
}

#[test]
fn static_fleets_take_only_a_nodes_limit_and_no_weight() {
    let cases = [
        (
            json!({"limits": {"nodes": 4, "cpu": "100"}}),
            r#"limits["cpu"]"#,
        ),
        (json!({"limits": {"gpus": 8}}), r#"limits["gpus"]"#),
        (json!({"weight": 10}), "weight"),
        (json!({"replicas": -1}), "replicas"),
    ];
    for (change, path) in cases {
        let found = errors_of(with(static_pool(), change.clone()), LabelScheme::Cfke);
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, [path], "{change}: {found:#?}");
    }
}

#[test]
fn limits_take_any_resource_and_keep_the_name_used() {
    let config = with(
        training(),
        json!({"limits": {"nvidia.com/gpu": "64", "ephemeral-storage": "10Ti", "nodes": "8", "nvidia.com/mig-1g.10gb": "56"}}),
    );
    let planned = planned(config, LabelScheme::Cfke);
    let mut live = served(&planned, LabelScheme::Cfke);
    assert_eq!(
        live["spec"]["limits"],
        json!({"nvidia.com/gpu": "64", "ephemeral-storage": "10Ti", "nodes": "8", "nvidia.com/mig-1g.10gb": "56"})
    );
    let state = read(&live, &planned, false, LabelScheme::Cfke);
    assert_same(&state, &planned, "nvidia.com/gpu spelled as configured");
    // Another writer's limit, and numbers where gpufleet sends strings.
    live["spec"]["limits"]["memory"] = json!("1Ti");
    live["spec"]["limits"]["nodes"] = json!(8);
    let state = read(&live, &planned, false, LabelScheme::Cfke);
    assert_same(
        &state,
        &planned,
        "foreign limit ignored, number read as quantity",
    );
    // `gpus` by default, e.g. after an import.
    let imported = import(&live, LabelScheme::Cfke);
    assert_eq!(
        imported.attr("limits").to_json(),
        json!({"gpus": "64", "ephemeral-storage": "10Ti", "nodes": "8", "nvidia.com/mig-1g.10gb": "56", "memory": "1Ti"})
    );
}

#[test]
fn node_lifetime_and_annotations_map_to_the_template() {
    let config = with(
        training(),
        json!({
            "termination_grace_period": "48h",
            "expire_after": "168h",
            "annotations": {"example.com/owner": "ml-platform"},
            "labels": {"workload": "training"},
        }),
    );
    let planned = planned(config, LabelScheme::Cfke);
    let mut live = served(&planned, LabelScheme::Cfke);
    let template = &live["spec"]["template"];
    assert_eq!(template["spec"]["terminationGracePeriod"], "48h");
    assert_eq!(template["spec"]["expireAfter"], "168h");
    assert_eq!(
        template["metadata"],
        json!({"labels": {"workload": "training"}, "annotations": {"example.com/owner": "ml-platform"}})
    );
    // Node annotations are a granular map: another writer's key is theirs.
    live["spec"]["template"]["metadata"]["annotations"]["other.io/x"] = json!("y");
    let state = read(&live, &planned, false, LabelScheme::Cfke);
    assert_same(&state, &planned, "foreign node annotation ignored");
    for (change, path) in [
        (
            json!({"termination_grace_period": "Never"}),
            "termination_grace_period",
        ),
        (json!({"annotations": {"bad key": "x"}}), "annotations"),
    ] {
        let found = errors_of(with(training(), change.clone()), LabelScheme::Cfke);
        assert_eq!(found[0].0, path, "{change}: {found:?}");
    }
}

#[test]
fn node_pool_metadata_is_owned_per_key() {
    let config = with(
        training(),
        json!({
            "node_pool_labels": {"team": "ml"},
            "node_pool_annotations": {"kubernetes.io/description": "8xH100 training nodes"},
        }),
    );
    let planned = planned(config, LabelScheme::Cfke);
    let mut live = served(&planned, LabelScheme::Cfke);
    assert_eq!(live["metadata"]["labels"], json!({"team": "ml"}));
    assert_eq!(
        live["metadata"]["annotations"],
        json!({"kubernetes.io/description": "8xH100 training nodes"})
    );
    live["metadata"]["labels"]["argocd.argoproj.io/instance"] = json!("platform");
    live["metadata"]["annotations"]["karpenter.sh/nodepool-hash"] = json!("123");
    live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
        json!("{}");
    let state = read(&live, &planned, false, LabelScheme::Cfke);
    assert_same(&state, &planned, "others' metadata ignored");
    // An import takes others' labels, but not tools' bookkeeping.
    let imported = import(&live, LabelScheme::Cfke);
    assert_eq!(
        imported.attr("node_pool_labels").to_json(),
        json!({"team": "ml", "argocd.argoproj.io/instance": "platform"})
    );
    assert_eq!(
        imported.attr("node_pool_annotations").to_json(),
        json!({"kubernetes.io/description": "8xH100 training nodes"})
    );
    // A managed key removed behind Terraform's back shows as drift.
    live["metadata"]["annotations"] = json!({});
    let state = read(&live, &planned, false, LabelScheme::Cfke);
    assert_eq!(state.attr("node_pool_annotations").to_json(), json!({}));
    for (change, path) in [
        (
            json!({"node_pool_labels": {"team": "not a label value"}}),
            "node_pool_labels",
        ),
        (
            json!({"node_pool_annotations": {"/x": "y"}}),
            "node_pool_annotations",
        ),
    ] {
        let found = errors_of(with(training(), change.clone()), LabelScheme::Cfke);
        assert_eq!(found[0].0, path, "{change}: {found:?}");
    }
}

#[test]
fn balanced_consolidation_and_budgets_with_reasons() {
    let config = with(
        training(),
        json!({"disruption": {
            "consolidation_policy": "Balanced",
            "consolidate_after": "10m",
            "budgets": [
                {"nodes": "0", "reasons": ["Drifted", "Underutilized"], "schedule": "@daily", "duration": "10h"},
                {"nodes": "1", "reasons": ["Empty"]},
            ],
        }}),
    );
    let planned = planned(config, LabelScheme::Cfke);
    let live = served(&planned, LabelScheme::Cfke);
    assert_eq!(
        live["spec"]["disruption"]["consolidationPolicy"],
        "Balanced"
    );
    assert_eq!(
        live["spec"]["disruption"]["budgets"][0]["reasons"],
        json!(["Drifted", "Underutilized"])
    );
    let state = read(&live, &planned, false, LabelScheme::Cfke);
    assert_same(&state, &planned, "disruption read back");
}

/// Schema 0 held `limits` as an object with a numeric `gpus`.
#[test]
fn state_of_schema_0_upgrades() {
    let old = json!({
        "id": "training", "name": "training",
        "accelerators": ["H100"],
        "node_class": NODE_CLASS(),
        "limits": {"gpus": 64, "cpu": null, "memory": "4000Gi"},
        "expire_after": "720h",
    });
    let upgraded = Resource::upgrade_state(&ObjectResource(Fleet), 0, old).unwrap();
    let state = from_json(&upgraded, &harness().schema().value_type()).unwrap();
    assert_eq!(
        state.attr("limits").to_json(),
        json!({"gpus": "64", "memory": "4000Gi"})
    );
    let plan = plan_for(&state, &value(training()), LabelScheme::Cfke);
    assert_eq!(
        plan.planned_state.attr("limits").to_json(),
        json!({"gpus": "64"})
    );
}
