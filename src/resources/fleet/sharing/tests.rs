use super::*;
use crate::catalog::LabelScheme;
use crate::framework::model::{decode, encode};
use crate::framework::testkit::{Harness, errors};
use crate::kit::object::{AppliedObject, ObjectResource};
use crate::protocol::diagnostics::Severity;
use crate::resources::fleet::Fleet;

fn harness() -> Harness<Cluster> {
    Harness::new(ObjectResource(Fleet))
}

fn inference(gpu_sharing: serde_json::Value) -> serde_json::Value {
    json!({
        "name": "inference",
        "accelerators": ["L4"],
        "accelerator_count": {"min": 1, "max": 4},
        "node_class": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
        "gpu_sharing": gpu_sharing,
    })
}

fn planned(config: serde_json::Value) -> Value {
    let h = harness();
    let plan = h.plan(
        &Cluster::offline(LabelScheme::Cfke),
        &Value::Null,
        &h.value(config),
    );
    assert!(
        errors(&plan.diagnostics).is_empty(),
        "{:?}",
        plan.diagnostics
    );
    plan.planned_state
}

#[test]
fn a_shared_fleet_plans_what_it_writes() {
    let plan = planned(inference(
        json!({"strategy": "time_slicing", "replicas": 4}),
    ));
    assert!(plan.is_wholly_known(), "{plan:?}");
    assert_eq!(plan.attr("gpu_resource"), &Value::string("nvidia.com/gpu"));
    assert!(plan.attr("gpus_per_node_advertised").is_null());
    assert_eq!(
        plan.attr("sharing_labels").to_json(),
        json!({CONFIG_LABEL: "fleet-inference"})
    );
    let overlays = plan.attr("node_overlays").to_json();
    assert_eq!(
        overlays,
        json!({
            "inference-1-gpus": {"gpus": 1, "capacity": {"nvidia.com/gpu": "4"}},
            "inference-2-gpus": {"gpus": 2, "capacity": {"nvidia.com/gpu": "8"}},
            "inference-4-gpus": {"gpus": 4, "capacity": {"nvidia.com/gpu": "16"}},
        })
    );
    // The NodePool's nodes join with the fleet's key.
    let model: Model = decode(&plan).unwrap();
    let resolved = Fleet.resolve(&Cluster::offline(LabelScheme::Cfke), &model);
    let object = Fleet.to_object(&resolved, &model).unwrap();
    assert_eq!(
        object.data["spec"]["template"]["metadata"]["labels"],
        json!({CONFIG_LABEL: "fleet-inference"})
    );
    // Reading the NodePool back gives the same state: the sharing
    // labels are not taken for configured ones.
    let live: DynamicObject =
        serde_json::from_value(serde_json::to_value(&object).unwrap()).unwrap();
    let mut state = Fleet
        .state_from(&Cluster::offline(LabelScheme::Cfke), live, &model, false)
        .unwrap();
    assert_eq!(state.labels, None);
    assert_eq!(state.sharing.sharing_labels, model.sharing.sharing_labels);
    Fleet.derive(&mut state);
    assert_eq!(state.sharing, model.sharing);
    let ty = harness().schema().value_type();
    assert!(
        encode(&state, &ty)
            .unwrap()
            .semantically_eq(&encode(&model, &ty).unwrap())
    );
}

#[test]
fn outputs_for_workloads() {
    let fixed = |sharing: serde_json::Value| {
        let mut config = inference(sharing);
        config["accelerators"] = json!(["H100"]);
        config["accelerator_count"] = json!({"min": 8, "max": 8});
        let plan = planned(config);
        (
            plan.attr("gpu_resource").as_str().map(str::to_string),
            plan.attr("gpus_per_node_advertised").as_i64(),
        )
    };
    assert_eq!(
        fixed(serde_json::Value::Null),
        (Some("nvidia.com/gpu".into()), Some(8))
    );
    assert_eq!(
        fixed(json!({"strategy": "mps", "replicas": 10, "rename_by_default": true})),
        (Some("nvidia.com/gpu.shared".into()), Some(80))
    );
    // MIG devices are advertised as the MIG strategy says (NVIDIA
    // k8s-device-plugin, internal/rm/device_map.go): each profile its own
    // resource under `mixed`, every one as a GPU under `single`; unset, the
    // strategy is read from the cluster, which is out of reach here.
    let mig = |strategy: serde_json::Value| json!({"strategy": "mig", "mig_layout": "all-1g.10gb", "mig_strategy": strategy});
    assert_eq!(
        fixed(mig(json!("mixed"))),
        (Some("nvidia.com/mig-1g.10gb".into()), Some(56))
    );
    assert_eq!(
        fixed(mig(json!("single"))),
        (Some("nvidia.com/gpu".into()), Some(56))
    );
    assert_eq!(fixed(mig(serde_json::Value::Null)), (None, None));
    let time_sliced = json!({"strategy": "mig", "mig_layout": "all-1g.10gb", "mig_strategy": "single", "replicas": 2, "rename_by_default": true});
    assert_eq!(
        fixed(time_sliced),
        (Some("nvidia.com/gpu.shared".into()), Some(112))
    );
    assert_eq!(
        fixed(json!({"strategy": "none"})),
        (Some("nvidia.com/gpu".into()), Some(8))
    );
    let dedicated = planned(inference(json!({"strategy": "none"})));
    assert_eq!(dedicated.attr("node_overlays").to_json(), json!({}));
    let unshared = planned(inference(serde_json::Value::Null));
    assert!(unshared.attr("device_plugin_config").is_null());
    assert!(unshared.attr("sharing_labels").is_null());
}

#[test]
fn sharing_labels_are_left_to_gpu_sharing() {
    let h = harness();
    let mut config = inference(json!({"strategy": "time_slicing", "replicas": 2}));
    config["labels"] = json!({CONFIG_LABEL: "mine"});
    let found = h.validate(&h.value(config));
    assert_eq!(found[0].0, format!("labels[\"{CONFIG_LABEL}\"]"));
}

#[test]
fn sharing_a_training_fleet_is_a_warning() {
    let h = harness();
    let mut config = inference(json!({"strategy": "time_slicing", "replicas": 2}));
    config["taints"] = json!([{"key": "workload", "value": "training", "effect": "NoSchedule"}]);
    let plan = h.plan(
        &Cluster::offline(LabelScheme::Cfke),
        &Value::Null,
        &h.value(config),
    );
    assert!(!plan.diagnostics.has_errors());
    assert!(
        plan.diagnostics
            .0
            .iter()
            .any(|d| d.summary == "GPU sharing on a training fleet")
    );
}

#[test]
fn overlays_select_the_gpu_count_only_where_the_fleet_leaves_it_open() {
    let requirements = |config: serde_json::Value| {
        let model: Model = decode(&planned(config)).unwrap();
        let overlays = wanted_overlays(&model, &Models::of(&model.constraints));
        let (name, overlay) = overlays.iter().next().unwrap();
        overlay_object(&model, name, overlay, "cfke.io/accelerator-count").data["spec"]
            ["requirements"]
            .clone()
    };
    let sharing = json!({"strategy": "time_slicing", "replicas": 4});
    let pool = json!({"key": NODEPOOL_LABEL, "operator": "In", "values": ["inference"]});
    assert_eq!(
        requirements(inference(sharing.clone())),
        json!([pool, {"key": "cfke.io/accelerator-count", "operator": "In", "values": ["1"]}])
    );
    // Every node has one GPU: the NodePool alone selects them, also where
    // the GPU count is a label of offerings only (Karpenter's kwok provider).
    let mut fixed = inference(sharing);
    fixed["accelerator_count"] = json!({"min": 1, "max": 1});
    let model: Model = decode(&planned(fixed.clone())).unwrap();
    assert_eq!(
        wanted_overlays(&model, &Models::of(&model.constraints)),
        BTreeMap::from([(
            "inference-1-gpus".to_string(),
            Overlay {
                gpus: 1,
                capacity: BTreeMap::from([(GPU_RESOURCE.to_string(), "4".to_string())])
            }
        )])
    );
    assert_eq!(requirements(fixed), json!([pool]));
}

#[test]
fn one_overlay_per_gpu_count_a_node_can_have() {
    let count = |min, max| GpuCount { min, max };
    let listed = |c: Option<GpuCount>| gpu_counts(c.as_ref()).into_iter().collect::<Vec<_>>();
    assert_eq!(listed(None), [1, 2, 4, 8, 16]);
    assert_eq!(listed(Some(count(Some(8), Some(8)))), [8]);
    assert_eq!(listed(Some(count(Some(2), None))), [2, 4, 8, 16]);
    assert_eq!(listed(Some(count(Some(3), Some(6)))), [3, 4, 6]);
    assert_eq!(listed(Some(count(None, Some(4)))), [1, 2, 4]);
    // Fractional GPUs (EC2's GPU count 0) get one too; with at most one
    // GPU every node shows one.
    assert_eq!(listed(Some(count(Some(0), None))), [0, 1, 2, 4, 8, 16]);
    assert_eq!(listed(Some(count(Some(0), Some(4)))), [0, 1, 2, 4]);
    assert_eq!(listed(Some(count(Some(0), Some(1)))), [1]);
}

/// A fleet that lets fractional GPUs in: its nodes with EC2's GPU count 0
/// (G6f, Gr6f), which karpenter-provider-aws plans with no `nvidia.com/gpu`,
/// get one GPU's capacity, shared or not; whole-GPU nodes keep the instance
/// type's own unless shared.
#[test]
fn fractional_gpus_get_the_capacity_of_one_gpu() {
    let fractional = |count: serde_json::Value, sharing: serde_json::Value| {
        let mut config = inference(sharing);
        config["accelerator_count"] = count;
        let plan = planned(config);
        let model: Model = decode(&plan).unwrap();
        let objects: Vec<serde_json::Value> =
            wanted_overlays(&model, &Models::of(&model.constraints))
                .iter()
                .map(|(name, overlay)| {
                    overlay_object(
                        &model,
                        name,
                        overlay,
                        "karpenter.k8s.aws/instance-gpu-count",
                    )
                    .data["spec"]["requirements"]
                        .clone()
                })
                .collect();
        (plan, objects)
    };
    let pool = json!({"key": NODEPOOL_LABEL, "operator": "In", "values": ["inference"]});
    let count_is = |n: &str| json!({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": [n]});

    let (plan, requirements) = fractional(json!({"min": 0}), json!(null));
    assert_eq!(
        plan.attr("node_overlays").to_json(),
        json!({"inference-0-gpus": {"gpus": 0, "capacity": {"nvidia.com/gpu": "1"}}})
    );
    assert_eq!(requirements, [json!([pool, count_is("0")])]);
    assert!(plan.attr("gpus_per_node_advertised").is_null());

    // Fractional and one-GPU nodes: all show one GPU, and the NodePool
    // alone selects them (also where the GPU count is on offerings only).
    let (plan, requirements) = fractional(json!({"min": 0, "max": 1}), json!(null));
    assert_eq!(
        plan.attr("node_overlays").to_json(),
        json!({"inference-1-gpus": {"gpus": 1, "capacity": {"nvidia.com/gpu": "1"}}})
    );
    assert_eq!(requirements, [json!([pool])]);
    assert_eq!(plan.attr("gpus_per_node_advertised").as_i64(), Some(1));

    // Shared: the fractional node's one GPU times the replicas, as the
    // whole-GPU nodes' overlays compute it.
    let sharing = json!({"strategy": "time_slicing", "replicas": 4});
    let (plan, requirements) = fractional(json!({"min": 0, "max": 2}), sharing.clone());
    assert_eq!(
        plan.attr("node_overlays").to_json(),
        json!({
            "inference-0-gpus": {"gpus": 0, "capacity": {"nvidia.com/gpu": "4"}},
            "inference-1-gpus": {"gpus": 1, "capacity": {"nvidia.com/gpu": "4"}},
            "inference-2-gpus": {"gpus": 2, "capacity": {"nvidia.com/gpu": "8"}},
        })
    );
    assert_eq!(requirements[0], json!([pool, count_is("0")]));
    let (plan, _) = fractional(json!({"min": 0, "max": 1}), sharing);
    assert_eq!(
        plan.attr("node_overlays").to_json(),
        json!({"inference-1-gpus": {"gpus": 1, "capacity": {"nvidia.com/gpu": "4"}}})
    );
    assert_eq!(plan.attr("gpus_per_node_advertised").as_i64(), Some(4));

    // Dedicated by `strategy = "none"`: as without `gpu_sharing`.
    let (plan, _) = fractional(json!({"min": 0}), json!({"strategy": "none"}));
    assert_eq!(
        plan.attr("node_overlays").to_json(),
        json!({"inference-0-gpus": {"gpus": 0, "capacity": {"nvidia.com/gpu": "1"}}})
    );

    // Whole GPUs only, dedicated: nothing to overlay.
    let (plan, requirements) = fractional(json!({"min": 1}), json!(null));
    assert!(plan.attr("node_overlays").is_null());
    assert!(requirements.is_empty());
}

/// A `gpus` limit caps `nvidia.com/gpu`: under `mixed` a MIG fleet's nodes
/// advertise none, so the limit is refused, naming what binds; under
/// `single` a limit below one node's MIG devices launches nothing.
#[test]
fn gpu_limits_that_never_bind() {
    let h = harness();
    let plan = |strategy: &str, gpus: &str| {
        let mut config = inference(
            json!({"strategy": "mig", "mig_layout": "all-1g.10gb", "mig_strategy": strategy}),
        );
        config["accelerators"] = json!(["H100"]);
        config["accelerator_count"] = json!({"min": 8, "max": 8});
        config["limits"] = json!({"gpus": gpus});
        let plan = h.plan(
            &Cluster::offline(LabelScheme::Cfke),
            &Value::Null,
            &h.value(config),
        );
        plan.diagnostics
            .0
            .into_iter()
            .map(|d| {
                let path = d.path.as_ref().map(ToString::to_string).unwrap_or_default();
                (d.severity, path, d.summary, d.detail)
            })
            .collect::<Vec<_>>()
    };
    let mixed = plan("mixed", "16");
    assert_eq!(mixed.len(), 1, "{mixed:?}");
    let (severity, path, summary, detail) = &mixed[0];
    assert_eq!(
        (severity, path.as_str(), summary.as_str()),
        (
            &Severity::Error,
            "limits[\"gpus\"]",
            "GPU limit that never binds"
        )
    );
    assert!(
        detail.contains(
            "`nodes`, or `nvidia.com/mig-1g.10gb` (`\"nvidia.com/mig-1g.10gb\" = \"56\"` per node)"
        ),
        "{detail}"
    );
    let single = plan("single", "16");
    assert_eq!(
        single
            .iter()
            .map(|d| (d.0, d.2.as_str()))
            .collect::<Vec<_>>(),
        [(Severity::Warning, "GPU limit below one node")]
    );
    assert!(plan("single", "112").is_empty());
}
