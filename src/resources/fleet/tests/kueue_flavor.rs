//! `kueue_flavor`: the flavor built from the fleet, and its one refusal.

use super::*;

#[test]
fn the_flavor_carries_the_fleet_s_selector_tolerations_and_gpu_resource() {
    let mut config = training();
    config["kueue_flavor"] = json!(true);
    let model: Model = decode(&planned(config, LabelScheme::Cfke)).unwrap();
    let object = serde_json::to_value(flavor::flavor_object(&model)).unwrap();
    assert_eq!(object["metadata"]["name"], "training");
    assert_eq!(
        object["spec"],
        json!({
            "nodeLabels": {"karpenter.sh/nodepool": "training"},
            "tolerations": [{"key": "workload", "operator": "Equal", "value": "training", "effect": "NoSchedule"}],
        })
    );
    assert_eq!(
        object["metadata"]["annotations"]["gpufleet/gpu-resource"],
        "nvidia.com/gpu"
    );
}

#[test]
fn a_fleet_with_more_taints_than_kueue_takes_tolerations_is_no_flavor() {
    let mut config = training();
    config["kueue_flavor"] = json!(true);
    config["taints"] = json!(
        (0..9)
            .map(|i| json!({"key": format!("t{i}"), "effect": "NoSchedule"}))
            .collect::<Vec<_>>()
    );
    let (path, detail) = error_at(config, LabelScheme::Cfke);
    assert_eq!(path, "kueue_flavor");
    assert!(detail.contains("at most 8 tolerations"), "{detail}");
}
