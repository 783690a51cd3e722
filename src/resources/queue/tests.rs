use serde_json::json;

use super::model::{Model, UNCAPPED_CPU, UNCAPPED_MEMORY};
use super::*;
use crate::catalog::LabelScheme;
use crate::framework::testkit::{Harness, errors};
use crate::kit::object::ObjectResource;

fn harness() -> Harness<Cluster> {
    Harness::new(ObjectResource(Queue))
}

fn config(extra: serde_json::Value) -> serde_json::Value {
    let mut config = json!({
        "name": "team-a",
        "namespaces": ["team-a"],
        "quotas": [{"fleet": "training", "gpu_resource": "nvidia.com/gpu", "gpus": 32}],
    });
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    config
}

fn errors_of(extra: serde_json::Value) -> Vec<(String, String)> {
    let h = harness();
    h.validate(&h.value(config(extra)))
}

#[test]
fn kueue_s_refusals_are_refused_at_their_paths_naming_its_rule() {
    let found = errors_of(json!({
        "quotas": [
            {"fleet": "training", "gpu_resource": "nvidia.com/gpu", "gpus": 32,
             "borrowing_limit": 8, "lending_limit": 40, "resources": {"cpu": "8"}},
            {"fleet": "training", "gpu_resource": "nvidia.com/gpu", "gpus": 8},
        ],
        "preemption": {"borrow_within_cohort": "LowerPriority"},
    }));
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "quotas[0].borrowing_limit",
            "quotas[0].lending_limit",
            "quotas[0].lending_limit",
            "quotas[0].resources[\"cpu\"]",
            "quotas[1].fleet",
            "preemption.borrow_within_cohort",
        ],
        "{found:?}"
    );
    assert!(
        found[0].1.contains("must be nil when cohort is empty"),
        "{found:?}"
    );
    assert!(
        found[2]
            .1
            .contains("less than or equal to the nominalQuota"),
        "{found:?}"
    );
    assert!(found[5].1.contains("validatePreemption"), "{found:?}");
    let with_cohort = errors_of(json!({
        "cohort": "training",
        "quotas": [{"fleet": "training", "gpu_resource": "nvidia.com/gpu", "gpus": 32,
                    "borrowing_limit": 8, "lending_limit": 16}],
        "preemption": {"reclaim_within_cohort": "Any", "borrow_within_cohort": "LowerPriority"},
    }));
    assert!(with_cohort.is_empty(), "{with_cohort:?}");
}

#[test]
fn plan_knows_the_label_jobs_write_and_kueue_s_defaults() {
    let h = harness();
    let plan = h.plan(
        &Cluster::offline(LabelScheme::Cfke),
        &Value::Null,
        &h.value(config(json!({"preemption": {}}))),
    );
    assert!(
        errors(&plan.diagnostics).is_empty(),
        "{:?}",
        plan.diagnostics
    );
    let planned = plan.planned_state.to_json();
    assert_eq!(planned["id"], "team-a");
    assert_eq!(
        planned["queue_label"],
        json!({"kueue.x-k8s.io/queue-name": "team-a"})
    );
    assert_eq!(planned["queueing_strategy"], "BestEffortFIFO");
    assert_eq!(planned["preemption"]["within_queue"], "Never");
}

fn two_fleets() -> Model {
    let mut model: Model = serde_json::from_value(json!({
        "name": "team-a",
        "namespaces": ["team-a", "team-a-dev"],
        "cohort": "training",
        "queueing_strategy": "BestEffortFIFO",
        "quotas": [
            {"fleet": "training", "gpu_resource": "nvidia.com/gpu", "gpus": 32,
             "lending_limit": 16, "cpu": "512", "resources": {"vpc.amazonaws.com/efa": "32"}},
            {"fleet": "inference-mig", "gpu_resource": "nvidia.com/mig-1g.10gb", "gpus": 14},
        ],
    }))
    .unwrap();
    model.derive();
    model
}

#[test]
fn one_resource_group_covers_every_quota_s_resources_in_one_order() {
    let model = two_fleets();
    let object = model.cluster_queue();
    let group = &object.data["spec"]["resourceGroups"][0];
    assert_eq!(
        group["coveredResources"],
        json!([
            "nvidia.com/gpu",
            "nvidia.com/mig-1g.10gb",
            "cpu",
            "memory",
            "vpc.amazonaws.com/efa"
        ])
    );
    assert_eq!(
        group["flavors"][1]["resources"],
        json!([
            {"name": "nvidia.com/gpu", "nominalQuota": "0"},
            {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "14"},
            {"name": "cpu", "nominalQuota": UNCAPPED_CPU},
            {"name": "memory", "nominalQuota": UNCAPPED_MEMORY},
            {"name": "vpc.amazonaws.com/efa", "nominalQuota": "0"},
        ])
    );
    assert_eq!(group["flavors"][0]["resources"][0]["lendingLimit"], "16");
    assert_eq!(
        object.data["spec"]["namespaceSelector"]["matchExpressions"][0]["values"],
        json!(["team-a", "team-a-dev"])
    );
}

#[test]
fn state_read_back_is_what_was_written_and_an_import_finds_the_gpu_resources() {
    let model = two_fleets();
    let mut live = model.cluster_queue();
    live.metadata.name = Some("team-a".into());
    // What the API server adds.
    live.data["spec"]["preemption"] = json!({"withinClusterQueue": "Never",
        "reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "Never"}});
    live.data["spec"]["stopPolicy"] = json!("None");
    let mut back = Model::from_live(&live, &model, false).unwrap();
    back.derive();
    assert_eq!(back, model);
    let imported = Model::from_live(&live, &Model::default(), true).unwrap();
    let gpus: Vec<(&str, i64)> = imported
        .quotas
        .iter()
        .map(|q| (q.gpu_resource.as_str(), q.gpus))
        .collect();
    assert_eq!(
        gpus,
        vec![("nvidia.com/gpu", 32), ("nvidia.com/mig-1g.10gb", 14)]
    );
    assert_eq!(imported.quotas[0].cpu.as_deref(), Some("512"));
    assert_eq!(
        imported.quotas[1].cpu, None,
        "the uncapped default reads as unset"
    );
    assert_eq!(
        imported.preemption, None,
        "Kueue's defaults import as unset"
    );
}

#[test]
fn quantities_served_back_in_canonical_form_read_as_written() {
    let mut model = two_fleets();
    model.quotas[0].cpu = Some("1.5".into());
    model.quotas[0].memory = Some("1.5Gi".into());
    model.fair_sharing_weight = Some("0.5".into());
    let mut live = model.cluster_queue();
    live.metadata.name = Some("team-a".into());
    // As Kueue's webhook serves them (k8s.io/apimachinery's canonical form).
    let resources = &mut live.data["spec"]["resourceGroups"][0]["flavors"][0]["resources"];
    resources[2]["nominalQuota"] = json!("1500m");
    resources[3]["nominalQuota"] = json!("1536Mi");
    resources[4]["nominalQuota"] = json!("32000m");
    live.data["spec"]["fairSharing"]["weight"] = json!("500m");
    let mut back = Model::from_live(&live, &model, false).unwrap();
    back.derive();
    assert_eq!(back, model);

    // A changed quantity is a change.
    live.data["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] =
        json!("2");
    let back = Model::from_live(&live, &model, false).unwrap();
    assert_eq!(back.quotas[0].cpu.as_deref(), Some("2"));
}
