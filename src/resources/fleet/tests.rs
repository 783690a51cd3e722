//! Unit tests of the fleet: mapping to NodePools under each label scheme,
//! plans, round trips through the API's answer, imports and bad input.

use kube::api::DynamicObject;
use serde_json::json;

use super::*;
use crate::catalog::LabelScheme;
use crate::framework::model::encode;
use crate::framework::plan::set;
use crate::framework::testkit::Harness;
use crate::kit::object::ObjectResource;
use crate::kit::ownership::without_bookkeeping;
use crate::protocol::provider::PlanResponse;

const NODE_CLASS: fn() -> serde_json::Value =
    || json!({"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"});

fn training() -> serde_json::Value {
    json!({
        "name": "training",
        "accelerators": ["H100"],
        "accelerator_count": {"min": 8, "max": 8},
        "node_class": NODE_CLASS(),
        "taints": [{"key": "workload", "value": "training", "effect": "NoSchedule"}],
        "limits": {"gpus": 64},
    })
}

fn inference() -> serde_json::Value {
    json!({
        "name": "inference",
        "accelerators": ["L4"],
        "node_class": NODE_CLASS(),
        "taints": [{"key": "workload", "value": "inference", "effect": "NoSchedule"}],
    })
}

/// A training fleet of the smaller of two A100s, told apart by memory.
fn a100_40gb_training() -> serde_json::Value {
    with(
        training(),
        json!({"accelerators": ["A100-40GB"], "accelerator_memory_max_gib": 40}),
    )
}

/// An inference fleet that lets fractional GPUs in.
fn fractional_inference() -> serde_json::Value {
    with(inference(), json!({"accelerator_count": {"min": 0}}))
}

/// Everything set, in the spellings a user might choose.
fn everything() -> serde_json::Value {
    json!({
        "name": "everything",
        "accelerators": ["a100-80gb", "H100"],
        "accelerator_count": {"min": 1},
        "accelerator_memory_min_gib": 80,
        "capacity_types": ["spot", "on-demand"],
        "instance_families": ["p5", "p4d"],
        "zones": ["eu-central-1a"],
        "architectures": ["amd64"],
        "node_class": NODE_CLASS(),
        "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
        "startup_taints": [{"key": "driver", "value": "installing", "effect": "NoExecute"}],
        "labels": {"team": "ml", "karpenter.sh/capacity-type": "spot"},
        "limits": {"gpus": 16, "cpu": "1000", "memory": "4000Gi"},
        "disruption": {"consolidation_policy": "WhenEmpty", "budgets": [
            {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted"]},
            {"nodes": "20%"},
        ]},
        "weight": 50,
        "expire_after": "Never",
        "requirements": [
            {"key": "example.com/rack", "operator": "NotIn", "values": ["r1"]},
            {"key": "node.kubernetes.io/instance-type", "operator": "Exists"},
        ],
    })
}

fn with(mut base: serde_json::Value, changes: serde_json::Value) -> serde_json::Value {
    for (key, value) in changes.as_object().unwrap() {
        base[key] = value.clone();
    }
    base
}

fn harness() -> Harness<Cluster> {
    Harness::new(ObjectResource(Fleet))
}

fn value(config: serde_json::Value) -> Value {
    harness().value(config)
}

fn plan_for(prior: &Value, config: &Value, scheme: LabelScheme) -> PlanResponse {
    harness().plan(&Cluster::offline(scheme), prior, config)
}

fn planned(config: serde_json::Value, scheme: LabelScheme) -> Value {
    let plan = plan_for(&Value::Null, &value(config), scheme);
    assert!(!plan.diagnostics.has_errors(), "{:?}", plan.diagnostics);
    plan.planned_state
}

/// (path, detail) of every error validation and planning report.
fn errors_of(config: serde_json::Value, scheme: LabelScheme) -> Vec<(String, String)> {
    harness().errors(&Cluster::offline(scheme), &value(config))
}

fn error_at(config: serde_json::Value, scheme: LabelScheme) -> (String, String) {
    let found = errors_of(config, scheme);
    assert_eq!(found.len(), 1, "{found:#?}");
    found.into_iter().next().unwrap()
}

/// What the API server answers an apply with: the object as sent, plus
/// fields of its own.
fn served(planned: &Value, scheme: LabelScheme) -> serde_json::Value {
    let model: Model = decode(planned).unwrap();
    let object = Fleet
        .to_object(&Fleet.resolve(&Cluster::offline(scheme), &model), &model)
        .unwrap();
    let mut object = serde_json::to_value(object).unwrap();
    object["metadata"]["uid"] = json!("7c1f0e7e");
    object["metadata"]["generation"] = json!(1);
    object["status"] = json!({"conditions": [{"type": "Ready", "status": "Unknown"}]});
    object
}

/// The state a read of `live` gives, as the framework records it.
fn read(live: &serde_json::Value, prior: &Value, importing: bool, scheme: LabelScheme) -> Value {
    let mut live: DynamicObject = serde_json::from_value(live.clone()).unwrap();
    if importing {
        // As ObjectResource does before every import.
        without_bookkeeping(&mut live.metadata);
    }
    let prior: Model = decode(prior).unwrap();
    let mut state = Fleet
        .state_from(&Cluster::offline(scheme), live, &prior, importing)
        .unwrap();
    Fleet.derive(&mut state);
    encode(&state, &harness().schema().value_type()).unwrap()
}

fn import(live: &serde_json::Value, scheme: LabelScheme) -> Value {
    let name = live["metadata"]["name"].as_str().unwrap();
    let mut skeleton = Fleet.imported(name);
    Fleet.derive(&mut skeleton);
    let skeleton = encode(&skeleton, &harness().schema().value_type()).unwrap();
    read(live, &skeleton, true, scheme)
}

/// Equality as Terraform sees it (sets in any order).
fn assert_same(found: &Value, expected: &Value, what: &str) {
    assert!(
        found.semantically_eq(expected),
        "{what}:\n found {}\n expected {}",
        found.to_json(),
        expected.to_json()
    );
}

fn requirements(planned: &Value, scheme: LabelScheme) -> serde_json::Value {
    served(planned, scheme)["spec"]["template"]["spec"]["requirements"].clone()
}

#[test]
fn the_training_fleet_maps_to_a_node_pool() {
    let planned = planned(training(), LabelScheme::Cfke);
    let mut object = served(&planned, LabelScheme::Cfke);
    object["metadata"] = json!({"name": object["metadata"]["name"]});
    object.as_object_mut().unwrap().remove("status");
    assert_eq!(
        object,
        json!({
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "training"},
            "spec": {
                "template": {"spec": {
                    "nodeClassRef": NODE_CLASS(),
                    "requirements": [
                        {"key": "cfke.io/accelerator-name", "operator": "In", "values": ["H100"]},
                        {"key": "cfke.io/accelerator-count", "operator": "Gt", "values": ["7"]},
                        {"key": "cfke.io/accelerator-count", "operator": "Lt", "values": ["9"]},
                    ],
                    "taints": [{"key": "workload", "value": "training", "effect": "NoSchedule"}],
                    "expireAfter": "720h",
                }},
                "disruption": {
                    "consolidationPolicy": "WhenEmptyOrUnderutilized",
                    "consolidateAfter": "0s",
                    "budgets": [{"nodes": "10%"}],
                },
                "limits": {"nvidia.com/gpu": "64"},
            },
        })
    );
}

#[test]
fn each_label_scheme_has_its_own_keys_values_and_units() {
    let training_requirements = |scheme| requirements(&planned(training(), scheme), scheme);
    assert_eq!(
        training_requirements(LabelScheme::Aws),
        json!([
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["7"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lt", "values": ["9"]},
        ])
    );
    assert_eq!(
        training_requirements(LabelScheme::Azure),
        json!([
            {"key": "karpenter.azure.com/sku-gpu-name", "operator": "In", "values": ["H100"]},
            {"key": "karpenter.azure.com/sku-gpu-count", "operator": "Gt", "values": ["7"]},
            {"key": "karpenter.azure.com/sku-gpu-count", "operator": "Lt", "values": ["9"]},
        ])
    );
    let inference_requirements = |scheme| requirements(&planned(inference(), scheme), scheme);
    assert_eq!(
        inference_requirements(LabelScheme::Cfke),
        json!([{"key": "cfke.io/accelerator-name", "operator": "In", "values": ["L4"]}])
    );
    // EC2 sells fractional L4s (g6f, gr6f: GPU count 0): whole ones only,
    // unless `min = 0` lets them in.
    assert_eq!(
        inference_requirements(LabelScheme::Aws),
        json!([
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "NotIn", "values": ["0"]},
        ])
    );
    let fractional = json!({"accelerator_count": {"min": 0}});
    assert_eq!(
        requirements(
            &planned(with(inference(), fractional), LabelScheme::Aws),
            LabelScheme::Aws
        ),
        json!([{"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["l4"]}])
    );
    // Memory: GiB on cfke; on AWS the MiB EC2 reports for a 24 GB L4.
    let memory = json!({"accelerator_memory_min_gib": 24});
    let with_memory = |scheme| {
        requirements(&planned(with(inference(), memory.clone()), scheme), scheme)[1].clone()
    };
    assert_eq!(
        with_memory(LabelScheme::Cfke),
        json!({"key": "cfke.io/accelerator-memory", "operator": "Gt", "values": ["23"]})
    );
    assert_eq!(
        with_memory(LabelScheme::Aws),
        json!({"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Gt", "values": ["22887"]})
    );
    // The smaller of two A100s by a memory maximum: EC2 reports 40960 MiB
    // for p4d's.
    let a100_40gb = |scheme| requirements(&planned(a100_40gb_training(), scheme), scheme);
    assert_eq!(
        a100_40gb(LabelScheme::Aws),
        json!([
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a100"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["7"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lt", "values": ["9"]},
            {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Lt", "values": ["40961"]},
        ])
    );
    assert_eq!(
        a100_40gb(LabelScheme::Cfke)[3],
        json!({"key": "cfke.io/accelerator-memory", "operator": "Lt", "values": ["41"]})
    );
    // A fleet's own scheme wins over the provider's.
    let own = planned(
        with(inference(), json!({"label_scheme": "aws"})),
        LabelScheme::Cfke,
    );
    assert_eq!(
        requirements(&own, LabelScheme::Cfke)[0]["values"],
        json!(["l4"])
    );
}

#[test]
fn everything_maps_in_a_fixed_order_with_raw_requirements_last() {
    let planned = planned(everything(), LabelScheme::Cfke);
    let object = served(&planned, LabelScheme::Cfke);
    let keys: Vec<(&str, &str)> = object["spec"]["template"]["spec"]["requirements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["key"].as_str().unwrap(), r["operator"].as_str().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("cfke.io/accelerator-name", "In"),
            ("cfke.io/accelerator-count", "Gt"),
            ("cfke.io/accelerator-memory", "Gt"),
            ("karpenter.sh/capacity-type", "In"),
            ("cfke.io/instance-family", "In"),
            ("topology.kubernetes.io/zone", "In"),
            ("kubernetes.io/arch", "In"),
            ("example.com/rack", "NotIn"),
            ("node.kubernetes.io/instance-type", "Exists"),
        ]
    );
    let spec = &object["spec"];
    assert_eq!(
        spec["template"]["spec"]["requirements"][0]["values"],
        json!(["A100", "H100"])
    );
    assert_eq!(spec["template"]["metadata"]["labels"]["team"], "ml");
    assert_eq!(
        spec["limits"],
        json!({"nvidia.com/gpu": "16", "cpu": "1000", "memory": "4000Gi"})
    );
    assert_eq!(
        spec["disruption"],
        json!({
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "0s",
            "budgets": [
                {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted"]},
                {"nodes": "20%"},
            ],
        })
    );
    assert_eq!(spec["weight"], 50);
    assert_eq!(spec["template"]["spec"]["expireAfter"], "Never");
    assert_eq!(
        spec["template"]["spec"]["startupTaints"],
        json!([{"key": "driver", "value": "installing", "effect": "NoExecute"}])
    );
}

#[test]
fn plans_are_fully_known_and_carry_workload_settings() {
    let planned = planned(training(), LabelScheme::Cfke);
    assert!(planned.is_wholly_known(), "{planned:?}");
    assert_eq!(planned.attr("id"), &Value::string("training"));
    assert_eq!(
        planned.attr("node_selector").to_json(),
        json!({"karpenter.sh/nodepool": "training"})
    );
    assert_eq!(
        planned.attr("tolerations").to_json(),
        json!([{"key": "workload", "operator": "Equal", "value": "training", "effect": "NoSchedule"}])
    );
    assert_eq!(planned.attr("expire_after"), &Value::string("720h"));
    assert_eq!(
        planned.attr("disruption").to_json()["budgets"],
        json!([{
            "nodes": "10%", "schedule": null, "duration": null, "reasons": null
        }])
    );
    let everything = self::planned(everything(), LabelScheme::Cfke);
    assert_eq!(
        everything.attr("tolerations").to_json(),
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "value": null, "effect": "NoSchedule"}])
    );
}

/// What a fleet needs of the cluster is checked only where the cluster
/// answers: a plan without one says nothing of it.
#[test]
fn an_unreachable_cluster_skips_the_prerequisites() {
    let shared = with(
        inference(),
        json!({"gpu_sharing": {"strategy": "time_slicing", "replicas": 2}}),
    );
    let plan = plan_for(&Value::Null, &value(shared), LabelScheme::Cfke);
    assert!(plan.diagnostics.0.is_empty(), "{:?}", plan.diagnostics);
}

#[test]
fn unknown_values_do_not_block_planning() {
    let mut config = value(with(training(), json!({"accelerators": ["A100-80GB"]})));
    let class = config.attr_mut("node_class").unwrap();
    set(class, "name", Value::UNKNOWN);
    // An unknown constraint leaves its own checks to apply.
    set(&mut config, "accelerators", Value::UNKNOWN);
    let plan = plan_for(&Value::Null, &config, LabelScheme::Cfke);
    assert!(!plan.diagnostics.has_errors(), "{:?}", plan.diagnostics);
    assert!(plan.planned_state.attr("tolerations").is_wholly_known());
    let mut validation = Diagnostics::default();
    Fleet.validate(&config, &mut validation);
    assert!(validation.0.is_empty(), "{validation:?}");
}

#[test]
fn after_apply_a_second_plan_is_empty() {
    let cases = [
        (training(), LabelScheme::Cfke),
        (training(), LabelScheme::Aws),
        (training(), LabelScheme::Azure),
        (inference(), LabelScheme::Cfke),
        (inference(), LabelScheme::Aws),
        (fractional_inference(), LabelScheme::Aws),
        (fractional_inference(), LabelScheme::Cfke),
        (a100_40gb_training(), LabelScheme::Aws),
        (a100_40gb_training(), LabelScheme::Cfke),
        (everything(), LabelScheme::Cfke),
        (
            with(
                everything(),
                json!({"label_scheme": "aws", "accelerators": ["H100"]}),
            ),
            LabelScheme::Cfke,
        ),
    ];
    for (config, scheme) in cases {
        let planned = planned(config.clone(), scheme);
        let state = read(&served(&planned, scheme), &planned, false, scheme);
        assert_same(
            &state,
            &planned,
            &format!("apply result vs plan ({scheme})"),
        );
        let again = plan_for(&state, &value(config), scheme);
        assert!(!again.diagnostics.has_errors(), "{:?}", again.diagnostics);
        assert_same(
            &again.planned_state,
            &state,
            &format!("second plan ({scheme})"),
        );
        assert!(again.requires_replace.is_empty());
    }
}

#[test]
fn import_gives_an_empty_plan() {
    let cases = [
        (training(), LabelScheme::Cfke, LabelScheme::Cfke),
        (inference(), LabelScheme::Aws, LabelScheme::Aws),
        (fractional_inference(), LabelScheme::Aws, LabelScheme::Aws),
        (a100_40gb_training(), LabelScheme::Aws, LabelScheme::Aws),
        (a100_40gb_training(), LabelScheme::Cfke, LabelScheme::Cfke),
        (training(), LabelScheme::Azure, LabelScheme::Azure),
        (
            with(everything(), json!({"accelerators": ["A100-80GB", "H100"]})),
            LabelScheme::Cfke,
            LabelScheme::Cfke,
        ),
        // Written with another scheme than the provider's: import finds it.
        (
            with(inference(), json!({"label_scheme": "aws"})),
            LabelScheme::Cfke,
            LabelScheme::Cfke,
        ),
    ];
    for (config, scheme, provider) in cases {
        let live = served(&planned(config.clone(), scheme), scheme);
        let imported = import(&live, provider);
        let plan = plan_for(&imported, &value(config), provider);
        assert!(!plan.diagnostics.has_errors(), "{:?}", plan.diagnostics);
        assert_same(
            &plan.planned_state,
            &imported,
            &format!("import plan ({scheme})"),
        );
        assert!(plan.requires_replace.is_empty());
    }
}

#[test]
fn drift_on_owned_fields_shows_and_foreign_fields_do_not() {
    let planned = planned(training(), LabelScheme::Cfke);
    let mut live = served(&planned, LabelScheme::Cfke);
    let spec = &mut live["spec"];
    spec["template"]["spec"]["requirements"][0]["values"] = json!(["H200"]);
    spec["template"]["spec"]["taints"][0]["effect"] = json!("NoExecute");
    spec["disruption"]["consolidateAfter"] = json!("5m");
    spec["limits"] = json!({"nvidia.com/gpu": 128, "nodes": "10"});
    spec["template"]["metadata"] = json!({"annotations": {"someone": "else"}});
    let state = read(&live, &planned, false, LabelScheme::Cfke);
    assert_eq!(state.attr("accelerators").to_json(), json!(["H200"]));
    assert_eq!(state.attr("taints").to_json()[0]["effect"], "NoExecute");
    assert_eq!(
        state.attr("disruption").attr("consolidate_after"),
        &Value::string("5m")
    );
    assert_eq!(state.attr("limits").to_json(), json!({"gpus": "128"}));
    assert!(state.attr("labels").is_null());
    let plan = plan_for(&state, &value(training()), LabelScheme::Cfke);
    assert_same(
        &plan.planned_state,
        &planned,
        "the plan restores the configuration",
    );
    // A requirement that is no longer what an attribute generates, and one added behind
    // Terraform's back, show as raw requirements.
    let mut live = served(&planned, LabelScheme::Cfke);
    let requirements = &mut live["spec"]["template"]["spec"]["requirements"];
    requirements[0]["values"] = json!(["X999"]);
    requirements
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "zone", "operator": "Exists"}));
    let state = read(&live, &planned, false, LabelScheme::Cfke);
    assert!(state.attr("accelerators").is_null());
    assert_eq!(
        state.attr("requirements").to_json(),
        json!([
            {"key": "cfke.io/accelerator-name", "operator": "In", "values": ["X999"], "min_values": null},
            {"key": "zone", "operator": "Exists", "values": null, "min_values": null},
        ])
    );
}

#[test]
fn whole_gpus_read_back_as_declared_and_their_drift_shows() {
    let scheme = LabelScheme::Aws;
    let whole = planned(inference(), scheme);
    let live = served(&whole, scheme);
    let imported = import(&live, scheme);
    assert!(imported.attr("accelerator_count").is_null());
    assert!(imported.attr("requirements").is_null());
    // Someone deletes the whole-GPU requirement: fractional GPUs are let
    // in, which is `min = 0`, and the plan puts it back.
    let mut drifted = live.clone();
    let requirements = drifted["spec"]["template"]["spec"]["requirements"]
        .as_array_mut()
        .unwrap();
    requirements.retain(|r| r["operator"] != "NotIn");
    let state = read(&drifted, &whole, false, scheme);
    assert_eq!(
        state.attr("accelerator_count").to_json(),
        json!({"min": 0, "max": null})
    );
    let plan = plan_for(&state, &value(inference()), scheme);
    assert_same(&plan.planned_state, &whole, "the plan restores it");
    // A raw requirement that says the same stays raw.
    let same = json!({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "NotIn", "values": ["0"]});
    let config = with(inference(), json!({"requirements": [same.clone()]}));
    let twin = planned(config, scheme);
    let state = read(&served(&twin, scheme), &twin, false, scheme);
    assert_same(&state, &twin, "a raw twin of the whole-GPU requirement");
    // Where no attribute asks for GPUs, the same requirement is raw too.
    let cpu = json!({"name": "cpu", "node_class": NODE_CLASS(), "requirements": [same]});
    let cpu = planned(cpu, scheme);
    let imported = import(&served(&cpu, scheme), scheme);
    assert_eq!(
        imported
            .attr("requirements")
            .to_json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(imported.attr("accelerator_count").is_null());
}

#[test]
fn memory_only_fleets_get_nvidia_gpus_and_read_back_as_declared() {
    let scheme = LabelScheme::Aws;
    let config =
        json!({"name": "mem", "node_class": NODE_CLASS(), "accelerator_memory_min_gib": 24});
    let nvidia = json!({"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": ["nvidia"]});
    let memory_only = planned(config.clone(), scheme);
    assert_eq!(
        requirements(&memory_only, scheme),
        json!([
            {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Gt", "values": ["22887"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "NotIn", "values": ["0"]},
            nvidia,
        ])
    );
    // Where the cloud sells NVIDIA's GPUs only, there is nothing to add.
    assert_eq!(
        requirements(
            &planned(config.clone(), LabelScheme::Cfke),
            LabelScheme::Cfke
        ),
        json!([{"key": "cfke.io/accelerator-memory", "operator": "Gt", "values": ["23"]}])
    );
    let live = served(&memory_only, scheme);
    let imported = import(&live, scheme);
    assert_eq!(
        imported.attr("accelerator_memory_min_gib").as_i64(),
        Some(24)
    );
    assert!(imported.attr("requirements").is_null());
    let plan = plan_for(&imported, &value(config.clone()), scheme);
    assert_same(&plan.planned_state, &imported, "import plan");
    // Someone deletes the NVIDIA requirement: the memory bound no longer
    // says what the attribute does, so it reads back raw, and the plan
    // puts both back.
    let mut drifted = live.clone();
    drifted["spec"]["template"]["spec"]["requirements"]
        .as_array_mut()
        .unwrap()
        .retain(|r| *r != nvidia);
    let state = read(&drifted, &memory_only, false, scheme);
    assert!(state.attr("accelerator_memory_min_gib").is_null());
    assert_eq!(
        state.attr("requirements").to_json(),
        json!([
            {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Gt", "values": ["22887"], "min_values": null},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "NotIn", "values": ["0"], "min_values": null},
        ])
    );
    let plan = plan_for(&state, &value(config), scheme);
    assert_same(&plan.planned_state, &memory_only, "the plan restores it");
    // A fleet that names its models needs no maker: the same requirement
    // written raw stays raw.
    let named = with(inference(), json!({"requirements": [nvidia]}));
    let named = planned(named, scheme);
    let state = read(&served(&named, scheme), &named, false, scheme);
    assert_same(
        &state,
        &named,
        "a raw NVIDIA requirement beside named models",
    );
}

#[test]
fn equivalent_spellings_are_kept() {
    let config = with(training(), json!({"accelerators": ["nvidia h100"]}));
    let planned = planned(config, LabelScheme::Aws);
    let state = read(
        &served(&planned, LabelScheme::Aws),
        &planned,
        false,
        LabelScheme::Aws,
    );
    assert_eq!(state.attr("accelerators").to_json(), json!(["nvidia h100"]));
}

#[test]
fn unknown_accelerators_get_a_suggestion() {
    let (path, detail) = error_at(
        with(training(), json!({"accelerators": ["H10"]})),
        LabelScheme::Cfke,
    );
    assert_eq!(path, "accelerators");
    assert!(detail.contains("did you mean `H100`?"), "{detail}");
}

#[test]
fn bad_inputs_are_reported_at_their_attribute() {
    let cases = [
        (
            json!({"labels": {"karpenter.sh/nodepool": "x"}}),
            r#"labels["karpenter.sh/nodepool"]"#,
        ),
        (
            json!({"labels": {"kubernetes.io/hostname": "x"}}),
            r#"labels["kubernetes.io/hostname"]"#,
        ),
        (
            json!({"labels": {"karpenter.k8s.aws/instance-gpu-name": "h100"}}),
            r#"labels["karpenter.k8s.aws/instance-gpu-name"]"#,
        ),
        (json!({"labels": {"bad key": "x"}}), "labels"),
        (
            json!({"taints": [{"key": "workload", "effect": "NoScheduled"}]}),
            "taints[0].effect",
        ),
        (
            json!({"taints": [{"key": "-bad", "effect": "NoSchedule"}]}),
            "taints[0].key",
        ),
        (
            json!({"startup_taints": [{"key": "workload", "value": "other", "effect": "NoSchedule"}]}),
            "startup_taints[0]",
        ),
        (
            json!({"accelerator_count": {"min": 16, "max": 8}}),
            "accelerator_count.min",
        ),
        (json!({"accelerator_count": {}}), "accelerator_count.min"),
        (
            json!({"accelerator_count": {"max": 0}}),
            "accelerator_count.max",
        ),
        (json!({"limits": {"gpus": -1}}), "limits"),
        (json!({"limits": {"cpu": "-4"}}), "limits"),
        (json!({"limits": {"memory": "lots"}}), "limits"),
        (json!({"limits": {}}), "limits"),
        (json!({"limits": {"bad name!": "1"}}), "limits"),
        (
            json!({"limits": {"gpus": 8, "nvidia.com/gpu": 8}}),
            r#"limits["nvidia.com/gpu"]"#,
        ),
        (json!({"capacity_types": ["cheap"]}), "capacity_types"),
        (json!({"capacity_types": []}), "capacity_types"),
        (json!({"architectures": ["x86"]}), "architectures"),
        (json!({"weight": 101}), "weight"),
        (json!({"expire_after": "30d"}), "expire_after"),
        (json!({"label_scheme": "gcp"}), "label_scheme"),
        (json!({"name": "a".repeat(64)}), "name"),
        (json!({"name": "Training"}), "name"),
        (
            json!({"node_class": {"group": "", "kind": "K", "name": "n"}}),
            "node_class.group",
        ),
        (
            json!({"disruption": {"budgets": [{"nodes": "10%", "schedule": "@daily"}]}}),
            "disruption.budgets[0].duration",
        ),
        (
            json!({"disruption": {"budgets": [{"nodes": "110%"}]}}),
            "disruption.budgets[0].nodes",
        ),
        (
            json!({"disruption": {"consolidation_policy": "Sometimes"}}),
            "disruption.consolidation_policy",
        ),
        (
            json!({"requirements": [{"key": "karpenter.sh/nodepool", "operator": "Exists"}]}),
            "requirements[0].key",
        ),
        (
            json!({"requirements": [{"key": "k", "operator": "In"}]}),
            "requirements[0].values",
        ),
        (
            json!({"requirements": [{"key": "k", "operator": "Gt", "values": ["1.5"]}]}),
            "requirements[0].values",
        ),
        (
            json!({"requirements": [{"key": "k", "operator": "Exists", "values": ["a"]}]}),
            "requirements[0].values",
        ),
        (
            json!({"requirements": [{"key": "k", "operator": "In", "values": ["a"], "min_values": 2}]}),
            "requirements[0].min_values",
        ),
        (
            json!({"requirements": [{"key": "k", "operator": "Like"}]}),
            "requirements[0].operator",
        ),
        (
            // 253 characters of domain, 63 of name: a valid key, one longer than the CRD allows.
            json!({"requirements": [{"key": format!("{}.{}/{}", vec!["a".repeat(63); 3].join("."), "a".repeat(61), "b".repeat(63)), "operator": "Exists"}]}),
            "requirements[0].key",
        ),
        // The CRD's rule: any domain ending in karpenter.sh.
        (
            json!({"requirements": [{"key": "notkarpenter.sh/x", "operator": "Exists"}]}),
            "requirements[0].key",
        ),
        (
            json!({"taints": [{"key": "workload", "value": "", "effect": "NoSchedule"}]}),
            "taints[0].value",
        ),
        (
            json!({"node_class": {"group": "karpenter.sh/v1", "kind": "K", "name": "n"}}),
            "node_class.group",
        ),
        (
            json!({"labels": (0..101).map(|i| (format!("l{i}"), json!("x"))).collect::<serde_json::Map<_, _>>()}),
            "labels",
        ),
        (
            json!({"disruption": {"budgets": vec![json!({"nodes": "1"}); 51]}}),
            "disruption.budgets",
        ),
    ];
    for (change, path) in cases {
        let found = errors_of(with(training(), change.clone()), LabelScheme::Cfke);
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, [path], "{change}: {found:#?}");
    }
    assert!(
        errors_of(
            with(
                training(),
                json!({"labels": {"karpenter.sh/capacity-type": "spot"}})
            ),
            LabelScheme::Cfke
        )
        .is_empty()
    );
}

#[test]
fn what_a_label_scheme_cannot_express_fails_the_plan() {
    let cases = [
        (
            training(),
            json!({"accelerator_memory_min_gib": 24}),
            LabelScheme::Azure,
            "accelerator_memory_min_gib",
            "no GPU memory label",
        ),
        (
            inference(),
            json!({}),
            LabelScheme::Azure,
            "accelerators",
            "`L4` cannot be selected with the azure label scheme",
        ),
        (
            training(),
            json!({"providers": ["aws"]}),
            LabelScheme::Aws,
            "providers",
            "no cloud provider label",
        ),
        (
            training(),
            json!({"accelerators": ["A100-80GB"]}),
            LabelScheme::Cfke,
            "accelerators",
            "also launch \"A100-40GB\"",
        ),
        (
            training(),
            json!({"accelerators": ["A100-80GB"]}),
            LabelScheme::Aws,
            "accelerators",
            "also launch \"A100-40GB\"",
        ),
        (
            training(),
            json!({"accelerators": ["A100-40GB"]}),
            LabelScheme::Aws,
            "accelerators",
            "also launch \"A100-80GB\": they share a `karpenter.k8s.aws/instance-gpu-name` value with a listed model. List them too, or set accelerator_memory_max_gib = 40",
        ),
        (
            training(),
            json!({"accelerators": ["A100-80GB"]}),
            LabelScheme::Aws,
            "accelerators",
            "set accelerator_memory_min_gib = 80",
        ),
        (
            training(),
            json!({"accelerators": ["A100-80GB"], "accelerator_memory_max_gib": 40}),
            LabelScheme::Aws,
            "accelerator_memory_max_gib",
            "more than accelerator_memory_max_gib = 40",
        ),
        (
            inference(),
            json!({"accelerator_memory_min_gib": 48}),
            LabelScheme::Cfke,
            "accelerator_memory_min_gib",
            "`L4` has 24 GiB",
        ),
    ];
    for (base, change, scheme, path, detail) in cases {
        let (found_path, found_detail) = error_at(with(base, change.clone()), scheme);
        assert_eq!(found_path, path, "{change}");
        assert!(found_detail.contains(detail), "{change}: {found_detail}");
    }
    // The same through the fleet's own setting; Azure tells A100 sizes apart by name alone.
    let (path, _) = error_at(
        with(inference(), json!({"label_scheme": "azure"})),
        LabelScheme::Cfke,
    );
    assert_eq!(path, "accelerators");
    assert!(
        errors_of(
            with(training(), json!({"accelerators": ["A100-80GB"]})),
            LabelScheme::Azure
        )
        .is_empty()
    );
    assert!(
        errors_of(
            with(
                training(),
                json!({"accelerators": ["A100-80GB"], "accelerator_memory_min_gib": 80})
            ),
            LabelScheme::Cfke
        )
        .is_empty()
    );
}

mod kueue_flavor;
mod min_values_and_raw_requirements;
mod network_and_gpu_count;
mod node_class_scheme;
mod round_trip;
mod static_fleets_and_metadata;

#[test]
fn a_requirements_values_are_named_in_its_errors() {
    for requirement in [
        json!({"key": "k", "operator": "In"}),
        json!({"key": "k", "operator": "Lt", "values": ["five"]}),
    ] {
        let (path, detail) = error_at(
            with(training(), json!({ "requirements": [requirement] })),
            LabelScheme::Cfke,
        );
        assert_eq!(path, "requirements[0].values");
        assert!(detail.starts_with("requirements[0].values: "), "{detail}");
    }
}

/// `known_constraints` leaves out every field of `Constraints` it must.
#[test]
fn every_constraints_field_is_a_constraint_min_values_or_requirements() {
    let fields = serde_json::to_value(Constraints::default()).unwrap();
    let fields: Vec<&str> = fields
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut handled = constraints::fields();
    handled.extend(["min_values", "requirements"]);
    assert_eq!(fields, handled);
}

#[test]
fn constraints_known_at_plan_are_checked_beside_unknown_ones() {
    let plan_errors = |config: serde_json::Value, unknown: &str| {
        let mut config = value(config);
        set(&mut config, unknown, Value::UNKNOWN);
        let plan = plan_for(&Value::Null, &config, LabelScheme::Cfke);
        crate::framework::testkit::errors(&plan.diagnostics)
    };
    // The azure scheme has no memory label, whatever the zones turn out to be.
    let found = plan_errors(
        with(
            training(),
            json!({"label_scheme": "azure", "zones": ["a"], "accelerator_memory_min_gib": 80}),
        ),
        "zones",
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "accelerator_memory_min_gib");
    assert!(found[0].1.contains("no GPU memory label"), "{found:?}");
    // What depends on an unknown waits: the minValues of unknown zones,
    // and models told apart by an unknown memory bound.
    let found = plan_errors(
        with(
            training(),
            json!({"zones": ["a"], "min_values": {"zones": 3}}),
        ),
        "zones",
    );
    assert!(found.is_empty(), "{found:?}");
    let found = plan_errors(
        with(
            training(),
            json!({"accelerators": ["A100-80GB"], "accelerator_memory_min_gib": 80}),
        ),
        "accelerator_memory_min_gib",
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn an_inference_fleet_that_allows_spot_is_warned() {
    let warnings = |config: serde_json::Value| -> Vec<String> {
        let mut diagnostics = Diagnostics::default();
        super::validation::validate(&harness().value(config), &mut diagnostics);
        diagnostics
            .0
            .iter()
            .filter(|d| d.summary == "Inference fleet may run on spot capacity")
            .map(|d| d.path.as_ref().map(ToString::to_string).unwrap_or_default())
            .collect()
    };
    assert_eq!(warnings(inference()), ["capacity_types"]);
    assert_eq!(
        warnings(with(
            inference(),
            json!({"capacity_types": ["spot", "on-demand"]})
        )),
        ["capacity_types"]
    );
    assert!(warnings(with(inference(), json!({"capacity_types": ["on-demand"]}))).is_empty());
    let raw = json!({"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]});
    assert!(warnings(with(inference(), raw)).is_empty());
    assert!(warnings(training()).is_empty(), "training may use spot");
}

#[test]
fn models_never_sold_on_the_allowed_architectures_are_warned_with_the_one_that_is() {
    let warnings = |config: serde_json::Value, scheme| -> Vec<(String, String)> {
        let plan = plan_for(&Value::Null, &value(config), scheme);
        assert!(!plan.diagnostics.has_errors(), "{:?}", plan.diagnostics);
        plan.diagnostics
            .0
            .iter()
            .filter(|d| d.summary == "No instance type has these GPUs on these architectures")
            .map(|d| (d.path.as_ref().unwrap().to_string(), d.detail.clone()))
            .collect()
    };
    let t4 = |accelerators: serde_json::Value, architectures: serde_json::Value| {
        with(
            inference(),
            json!({"accelerators": accelerators, "architectures": architectures, "label_scheme": "aws"}),
        )
    };
    // EC2's T4 is on x86 only; its arm64 T4 is the T4G of Graviton's g5g.
    let found = warnings(t4(json!(["T4"]), json!(["arm64"])), LabelScheme::Cfke);
    assert_eq!(found.len(), 1, "{found:?}");
    let (path, detail) = &found[0];
    assert_eq!(path, "architectures");
    assert!(detail.contains("`T4` only on amd64"), "{detail}");
    assert!(
        detail.contains("the same GPU is sold as \"T4G\""),
        "{detail}"
    );
    // And the other way round.
    let found = warnings(t4(json!(["T4G"]), json!(["amd64"])), LabelScheme::Cfke);
    assert!(found[0].1.contains("sold as \"T4\""), "{found:?}");
    // A model without a counterpart: no alternative named.
    let found = warnings(t4(json!(["H100"]), json!(["arm64"])), LabelScheme::Cfke);
    assert!(
        found[0].1.contains("`H100` only on amd64") && !found[0].1.contains("sold as"),
        "{found:?}"
    );
    // Something launches: one model fits, or an architecture does.
    for config in [
        t4(json!(["T4", "T4G"]), json!(["arm64"])),
        t4(json!(["T4"]), json!(["amd64", "arm64"])),
        with(
            inference(),
            json!({"accelerators": ["T4"], "architectures": ["arm64"]}),
        ),
    ] {
        assert!(
            warnings(config.clone(), LabelScheme::Cfke).is_empty(),
            "{config}"
        );
    }
    // The scheme a node class decides counts the same.
    let ec2 = with(
        t4(json!(["T4"]), json!(["arm64"])),
        json!({"label_scheme": null, "node_class": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}}),
    );
    assert_eq!(warnings(ec2, LabelScheme::Cfke).len(), 1);
}
