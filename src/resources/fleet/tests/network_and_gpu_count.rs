//! The interconnect: the network bandwidth bound and the resources a
//! training pod requests; and fleets that ask for GPUs by their count
//! alone.

use super::*;

const BANDWIDTH: &str = "karpenter.k8s.aws/instance-network-bandwidth";

#[test]
fn network_bandwidth_is_a_lower_bound_in_mbps_under_aws() {
    let scheme = LabelScheme::Aws;
    let config = with(
        training(),
        json!({"network_bandwidth_min_gbps": 3200, "min_values": {"network_bandwidth_min_gbps": 2}}),
    );
    let fleet = planned(config.clone(), scheme);
    let bandwidth: Vec<serde_json::Value> = requirements(&fleet, scheme)
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["key"] == BANDWIDTH)
        .cloned()
        .collect();
    // karpenter-provider-aws labels bandwidth in Mbps: at least 3200 Gbps
    // is more than 3199999 Mbps.
    assert_eq!(
        bandwidth,
        [json!({"key": BANDWIDTH, "operator": "Gt", "values": ["3199999"], "minValues": 2})]
    );
    let imported = import(&served(&fleet, scheme), scheme);
    assert_eq!(
        imported.attr("network_bandwidth_min_gbps").as_i64(),
        Some(3200)
    );
    assert_eq!(
        imported
            .attr("min_values")
            .attr("network_bandwidth_min_gbps")
            .as_i64(),
        Some(2)
    );
    let plan = plan_for(&imported, &value(config), scheme);
    assert_same(&plan.planned_state, &imported, "import plan");
    // Karpenter v1.9's `Gte` reads back the same; a bound that is no whole
    // Gbps stays raw.
    let mut live = served(&fleet, scheme);
    for (written, expected) in [(json!(["3200000"]), Some(3200)), (json!(["3200001"]), None)] {
        let requirements = live["spec"]["template"]["spec"]["requirements"]
            .as_array_mut()
            .unwrap();
        let bound = requirements
            .iter_mut()
            .find(|r| r["key"] == BANDWIDTH)
            .unwrap();
        bound["operator"] = json!("Gte");
        bound["values"] = written;
        let read_back = import(&live, scheme);
        assert_eq!(
            read_back.attr("network_bandwidth_min_gbps").as_i64(),
            expected
        );
    }
}

#[test]
fn network_bandwidth_is_refused_where_the_scheme_has_no_label() {
    for scheme in [LabelScheme::Cfke, LabelScheme::Azure] {
        let (path, detail) = error_at(
            with(training(), json!({"network_bandwidth_min_gbps": 400})),
            scheme,
        );
        assert_eq!(path, "network_bandwidth_min_gbps");
        assert!(
            detail.contains(&format!(
                "with the {scheme} label scheme: it has no network bandwidth label. Remove it, or set `label_scheme` to one that has: \"aws\"."
            )),
            "{detail}"
        );
    }
}

/// EC2 sells AMD GPUs too (g4ad): a fleet that bounds the GPU count but
/// names no model gets NVIDIA's, and reads back as declared.
#[test]
fn count_only_fleets_get_nvidia_gpus_and_read_back_as_declared() {
    let scheme = LabelScheme::Aws;
    let nvidia = json!({"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": ["nvidia"]});
    let count = "karpenter.k8s.aws/instance-gpu-count";
    for (bounds, expected) in [
        (
            json!({"min": 1}),
            json!([{"key": count, "operator": "Gt", "values": ["0"]}, nvidia]),
        ),
        (
            json!({"max": 4}),
            json!([
                {"key": count, "operator": "Lt", "values": ["5"]},
                {"key": count, "operator": "NotIn", "values": ["0"]},
                nvidia,
            ]),
        ),
    ] {
        let config =
            json!({"name": "gpus", "node_class": NODE_CLASS(), "accelerator_count": bounds});
        let fleet = planned(config.clone(), scheme);
        assert_eq!(requirements(&fleet, scheme), expected, "{bounds}");
        let imported = import(&served(&fleet, scheme), scheme);
        assert!(imported.attr("requirements").is_null(), "{bounds}");
        let plan = plan_for(&imported, &value(config.clone()), scheme);
        assert_same(&plan.planned_state, &imported, "import plan");
        // Without the NVIDIA requirement the count says more than the
        // attribute does: it stays raw, and the plan puts it back.
        let mut drifted = served(&fleet, scheme);
        drifted["spec"]["template"]["spec"]["requirements"]
            .as_array_mut()
            .unwrap()
            .retain(|r| *r != nvidia);
        let state = read(&drifted, &fleet, false, scheme);
        assert!(state.attr("accelerator_count").is_null(), "{bounds}");
        let plan = plan_for(&state, &value(config), scheme);
        assert_same(&plan.planned_state, &fleet, "the plan restores it");
    }
    // `min = 0` alone asks for nothing; where the cloud sells NVIDIA's GPUs
    // only, there is nothing to add.
    let anything =
        json!({"name": "any", "node_class": NODE_CLASS(), "accelerator_count": {"min": 0}});
    assert_eq!(requirements(&planned(anything, scheme), scheme), json!([]));
    let cfke = json!({"name": "gpus", "node_class": NODE_CLASS(), "accelerator_count": {"min": 1}});
    assert_eq!(
        requirements(&planned(cfke, LabelScheme::Cfke), LabelScheme::Cfke),
        json!([{"key": "cfke.io/accelerator-count", "operator": "Gt", "values": ["0"]}])
    );
}

#[test]
fn a_fleet_pinned_to_one_ec2_shape_says_its_efa_interfaces() {
    let interconnect = |config: &serde_json::Value, scheme| {
        planned(config.clone(), scheme)
            .attr("interconnect_resources")
            .clone()
    };
    let h100x8 = with(training(), json!({"label_scheme": "aws"}));
    assert_eq!(
        interconnect(&h100x8, LabelScheme::Cfke).to_json(),
        json!({"vpc.amazonaws.com/efa": "32"})
    );
    // The scheme a fleet gets from its node class or the provider counts
    // the same.
    let ec2 = json!({"node_class": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}});
    for (config, scheme) in [
        (with(training(), ec2), LabelScheme::Cfke),
        (training(), LabelScheme::Aws),
    ] {
        assert_eq!(
            interconnect(&config, scheme).to_json(),
            json!({"vpc.amazonaws.com/efa": "32"}),
            "{config}"
        );
    }
    // Not pinned: a range of GPU counts, a count whose EC2 types differ
    // (one L4), or another scheme.
    for (config, scheme) in [
        (
            with(
                h100x8.clone(),
                json!({"accelerator_count": {"min": 1, "max": 8}}),
            ),
            LabelScheme::Aws,
        ),
        (
            with(
                h100x8.clone(),
                json!({"accelerators": ["L4"], "accelerator_count": {"min": 1, "max": 1}}),
            ),
            LabelScheme::Aws,
        ),
        (
            with(h100x8, json!({"label_scheme": "cfke"})),
            LabelScheme::Aws,
        ),
    ] {
        assert!(interconnect(&config, scheme).is_null(), "{config}");
    }
}

/// A fleet that lets fractional GPUs in still offers `nvidia.com/gpu`,
/// which only its whole-GPU nodes have.
#[test]
fn a_fractional_fleet_keeps_the_whole_gpu_resource() {
    let fleet = planned(fractional_inference(), LabelScheme::Aws);
    assert_eq!(fleet.attr("gpu_resource"), &Value::string("nvidia.com/gpu"));
}
