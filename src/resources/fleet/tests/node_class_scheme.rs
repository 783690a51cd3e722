//! The label scheme follows the node class: planned from it when the
//! fleet sets none, refused when the fleet sets another one, and shown in
//! the plan with the requirements it generates.

use super::*;

fn node_class(group: &str, kind: &str) -> serde_json::Value {
    json!({"node_class": {"group": group, "kind": kind, "name": "gpu"}})
}

fn ec2() -> serde_json::Value {
    node_class("karpenter.k8s.aws", "EC2NodeClass")
}

fn aks() -> serde_json::Value {
    node_class("karpenter.azure.com", "AKSNodeClass")
}

#[test]
fn an_unset_scheme_is_the_node_class_s_else_the_provider_s() {
    for provider in LabelScheme::ALL {
        let cases = [
            (with(training(), ec2()), LabelScheme::Aws),
            (with(training(), aks()), LabelScheme::Azure),
            (training(), provider),
        ];
        for (config, expected) in cases {
            let planned = planned(config.clone(), provider);
            assert_eq!(
                planned.attr("label_scheme"),
                &Value::string(expected.as_str()),
                "{config} under the {provider} provider scheme"
            );
            // The plan shows the requirements the NodePool gets.
            assert_eq!(
                planned.attr("node_pool_requirements").to_json(),
                requirements(&planned, provider)
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| json!({
                        "key": r["key"],
                        "operator": r["operator"],
                        "values": r["values"],
                        "min_values": r.get("minValues"),
                    }))
                    .collect::<serde_json::Value>(),
                "{config}"
            );
        }
    }
    // The README's fleet: an EC2NodeClass under the default provider.
    let readme = planned(with(training(), ec2()), LabelScheme::Cfke);
    assert_eq!(
        readme.attr("node_pool_requirements").to_json(),
        json!([
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"], "min_values": null},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["7"], "min_values": null},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lt", "values": ["9"], "min_values": null},
        ])
    );
    // What follows from the scheme follows the planned one too.
    assert_eq!(
        readme.attr("interconnect_resources").to_json(),
        json!({"vpc.amazonaws.com/efa": "32"})
    );
}

#[test]
fn a_scheme_contradicting_the_node_class_is_refused_naming_the_labels() {
    let (path, detail) = error_at(
        with(with(training(), ec2()), json!({"label_scheme": "cfke"})),
        LabelScheme::Cfke,
    );
    assert_eq!(path, "label_scheme");
    for label in [
        "cfke.io/accelerator-name",
        "cfke.io/accelerator-count",
        "cfke.io/accelerator-memory",
        "cfke.io/instance-family",
        "karpenter.k8s.aws/instance-gpu-name",
        "set it to \"aws\"",
    ] {
        assert!(detail.contains(label), "{label}: {detail}");
    }
    let (path, detail) = error_at(
        with(with(training(), aks()), json!({"label_scheme": "aws"})),
        LabelScheme::Cfke,
    );
    assert_eq!(path, "label_scheme");
    assert!(
        detail.contains("\"karpenter.k8s.aws/instance-gpu-count\""),
        "{detail}"
    );
    // Agreeing, or a node class whose cloud the catalog does not know.
    for config in [
        with(with(training(), ec2()), json!({"label_scheme": "aws"})),
        with(training(), json!({"label_scheme": "azure"})),
    ] {
        assert!(
            errors_of(config.clone(), LabelScheme::Cfke).is_empty(),
            "{config}"
        );
    }
}

#[test]
fn an_unknown_node_class_leaves_the_scheme_to_apply() {
    let mut config = value(with(training(), ec2()));
    let class = config.attr_mut("node_class").unwrap();
    set(class, "group", Value::UNKNOWN);
    let plan = plan_for(&Value::Null, &config, LabelScheme::Cfke);
    assert!(!plan.diagnostics.has_errors(), "{:?}", plan.diagnostics);
    assert!(plan.planned_state.attr("label_scheme").is_unknown());
    assert!(
        plan.planned_state
            .attr("node_pool_requirements")
            .is_unknown()
    );
    // A scheme set explicitly is known all the same.
    set(&mut config, "label_scheme", Value::string("aws"));
    let plan = plan_for(&Value::Null, &config, LabelScheme::Cfke);
    assert_eq!(
        plan.planned_state.attr("label_scheme"),
        &Value::string("aws")
    );
    assert!(
        plan.planned_state
            .attr("node_pool_requirements")
            .is_wholly_known()
    );
}

/// A fleet applied before the scheme followed the node class (the README's
/// EC2NodeClass under the provider's default `cfke`) has a state without
/// `label_scheme` and a NodePool on `cfke.io` labels: a read says `cfke`,
/// and the next plan moves it to EC2's labels.
#[test]
fn an_ec2_fleet_applied_under_cfke_is_moved_to_ec2_s_labels() {
    let config = with(training(), ec2());
    let old_plan = planned(
        with(config.clone(), json!({"label_scheme": "cfke"})),
        LabelScheme::Cfke,
    );
    let live = served(&old_plan, LabelScheme::Cfke);
    let mut old_state = old_plan.clone();
    set(&mut old_state, "label_scheme", Value::Null);
    set(&mut old_state, "node_pool_requirements", Value::Null);
    let state = read(&live, &old_state, false, LabelScheme::Cfke);
    assert_eq!(state.attr("label_scheme"), &Value::string("cfke"));
    assert_eq!(state.attr("accelerators").to_json(), json!(["H100"]));
    let plan = plan_for(&state, &value(config), LabelScheme::Cfke);
    assert!(!plan.diagnostics.has_errors(), "{:?}", plan.diagnostics);
    assert_eq!(
        plan.planned_state.attr("label_scheme"),
        &Value::string("aws")
    );
    assert_eq!(
        requirements(&plan.planned_state, LabelScheme::Cfke)[0]["key"],
        "karpenter.k8s.aws/instance-gpu-name"
    );
    assert!(plan.requires_replace.is_empty());
}

/// A state of a fleet whose scheme the node class does not decide reads
/// back with the provider's, and plans no change.
#[test]
fn a_state_without_a_scheme_reads_back_with_the_one_it_was_written_under() {
    for provider in LabelScheme::ALL {
        let planned = planned(training(), provider);
        let mut old_state = planned.clone();
        set(&mut old_state, "label_scheme", Value::Null);
        set(&mut old_state, "node_pool_requirements", Value::Null);
        let state = read(&served(&planned, provider), &old_state, false, provider);
        assert_same(&state, &planned, &format!("read under {provider}"));
    }
}

#[test]
fn node_pool_requirements_follow_every_input_of_the_requirements() {
    let mut expected = constraints::fields();
    expected.extend(["min_values", "requirements", "label_scheme"]);
    assert_eq!(constraints::REQUIREMENT_INPUTS, expected);
}
