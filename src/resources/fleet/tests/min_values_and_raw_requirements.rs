//! `min_values` on every generated requirement, and raw requirements
//! refused only when they contradict an attribute.

use super::*;

fn requirement_of(planned: &Value, scheme: LabelScheme, key: &str) -> Vec<serde_json::Value> {
    requirements(planned, scheme)
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["key"] == key)
        .cloned()
        .collect()
}

#[test]
fn every_constraint_attribute_takes_min_values() {
    let config = json!({
        "name": "flexible",
        "node_class": NODE_CLASS(),
        "accelerators": ["H100", "H200", "A100-80GB"],
        "accelerator_count": {"min": 1, "max": 8},
        "accelerator_memory_min_gib": 80,
        "capacity_types": ["spot", "on-demand"],
        "instance_families": ["p5", "p5e", "p4de"],
        "providers": ["aws", "gcp"],
        "zones": ["a", "b", "c"],
        "architectures": ["amd64", "arm64"],
        "min_values": {
            "accelerators": 2, "accelerator_count": 2, "accelerator_memory_min_gib": 2,
            "capacity_types": 2, "instance_families": 3, "providers": 2, "zones": 3,
            "architectures": 1,
        },
    });
    let planned = planned(config, LabelScheme::Cfke);
    let found: Vec<(String, String, serde_json::Value)> = requirements(&planned, LabelScheme::Cfke)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["key"].as_str().unwrap().to_string(),
                r["operator"].as_str().unwrap().to_string(),
                r["minValues"].clone(),
            )
        })
        .collect();
    let expected = [
        ("cfke.io/accelerator-name", "In", 2),
        ("cfke.io/accelerator-count", "Gt", 2),
        ("cfke.io/accelerator-count", "Lt", 2),
        ("cfke.io/accelerator-memory", "Gt", 2),
        ("karpenter.sh/capacity-type", "In", 2),
        ("cfke.io/instance-family", "In", 3),
        ("cfke.io/provider", "In", 2),
        ("topology.kubernetes.io/zone", "In", 3),
        ("kubernetes.io/arch", "In", 1),
    ]
    .map(|(k, o, m)| (k.to_string(), o.to_string(), json!(m)));
    assert_eq!(found, expected);
    let state = read(
        &served(&planned, LabelScheme::Cfke),
        &planned,
        false,
        LabelScheme::Cfke,
    );
    assert_same(&state, &planned, "min_values read back");
}

#[test]
fn min_values_are_checked_against_what_the_attribute_generates() {
    let cases = [
        (
            json!({"instance_families": ["p5", "p4d"], "min_values": {"instance_families": 3}}),
            LabelScheme::Aws,
            "min_values.instance_families",
            "gives 2 `karpenter.k8s.aws/instance-family` values",
        ),
        // Both A100 sizes are `A100` under cfke: one value, not two.
        (
            json!({"accelerators": ["A100-40GB", "A100-80GB"], "min_values": {"accelerators": 2}}),
            LabelScheme::Cfke,
            "min_values.accelerators",
            "count once",
        ),
        (
            json!({"min_values": {"zones": 2}}),
            LabelScheme::Cfke,
            "min_values.zones",
            "`zones` is not set",
        ),
        (
            json!({"accelerator_count": null, "min_values": {"accelerator_count": 2}}),
            LabelScheme::Cfke,
            "min_values.accelerator_count",
            "`accelerator_count` is not set",
        ),
    ];
    for (change, scheme, path, detail) in cases {
        let (found_path, found_detail) = error_at(with(training(), change.clone()), scheme);
        assert_eq!(found_path, path, "{change}");
        assert!(found_detail.contains(detail), "{change}: {found_detail}");
    }
    for (change, path) in [
        (json!({"min_values": {}}), "min_values.accelerators"),
        (json!({"min_values": {"zones": 51}}), "min_values.zones"),
        (json!({"min_values": {"zones": 0}}), "min_values.zones"),
    ] {
        let found = errors_of(with(training(), change.clone()), LabelScheme::Cfke);
        assert_eq!(found[0].0, path, "{change}: {found:?}");
    }
}

/// The NodePool of the issue: under the aws scheme, `instance-family In
/// [...]` with `minValues: 3`, written either way.
#[test]
fn the_aws_instance_family_pool_can_be_written_both_ways() {
    let families = json!(["p4d", "p5", "p5e"]);
    let as_attribute = with(
        training(),
        json!({"instance_families": families, "min_values": {"instance_families": 3}}),
    );
    let as_raw = with(
        training(),
        json!({"requirements": [{
            "key": "karpenter.k8s.aws/instance-family", "operator": "In",
            "values": families, "min_values": 3,
        }]}),
    );
    let expected = json!([{
        "key": "karpenter.k8s.aws/instance-family", "operator": "In",
        "values": families, "minValues": 3,
    }]);
    for config in [as_attribute, as_raw] {
        let planned = planned(config.clone(), LabelScheme::Aws);
        assert_eq!(
            json!(requirement_of(
                &planned,
                LabelScheme::Aws,
                "karpenter.k8s.aws/instance-family"
            )),
            expected
        );
        // Read back while managed, each stays as written: no perpetual diff.
        let state = read(
            &served(&planned, LabelScheme::Aws),
            &planned,
            false,
            LabelScheme::Aws,
        );
        assert_same(&state, &planned, "read back as written");
        let again = plan_for(&state, &value(config), LabelScheme::Aws);
        assert_same(&again.planned_state, &state, "second plan");
    }
}

#[test]
fn raw_requirements_that_agree_with_attributes_are_kept() {
    let cases = [
        // A narrower or overlapping set on the same key.
        json!({"zones": ["a", "b"], "requirements": [{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["a"]}]}),
        json!({"zones": ["a", "b"], "requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b", "c"]}]}),
        // The very requirement an attribute generates, again.
        json!({"zones": ["a"], "requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}),
        // A bound within accelerator_count.
        json!({"requirements": [{"key": "cfke.io/accelerator-count", "operator": "Gt", "values": ["4"]}]}),
        json!({"requirements": [{"key": "cfke.io/accelerator-name", "operator": "Exists", "min_values": 1}]}),
        // Flexibility on a key no attribute uses.
        json!({"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "Exists", "min_values": 10}]}),
    ];
    for change in cases {
        let config = with(training(), change.clone());
        assert!(
            errors_of(config.clone(), LabelScheme::Cfke).is_empty(),
            "{change}"
        );
        let planned = planned(config.clone(), LabelScheme::Cfke);
        let state = read(
            &served(&planned, LabelScheme::Cfke),
            &planned,
            false,
            LabelScheme::Cfke,
        );
        assert_same(&state, &planned, &format!("{change}"));
    }
}

#[test]
fn contradicting_raw_requirements_say_which_attribute_and_what_to_write() {
    let cases = [
        (
            json!({"zones": ["a"], "requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]}),
            "requirements[0]",
            "contradicts `zones` (`topology.kubernetes.io/zone In [\"a\"]`)",
        ),
        (
            json!({"requirements": [
                {"key": "example.com/rack", "operator": "Exists"},
                {"key": "cfke.io/accelerator-count", "operator": "Lt", "values": ["8"]},
            ]}),
            "requirements[1]",
            "`accelerator_count.min` (`cfke.io/accelerator-count Gt [\"7\"]`) and `accelerator_count.max`",
        ),
        (
            json!({"requirements": [{"key": "cfke.io/accelerator-name", "operator": "DoesNotExist"}]}),
            "requirements[0]",
            "no node can have a value that meets both",
        ),
        (
            json!({
                "zones": ["a", "b", "c"],
                "min_values": {"zones": 3},
                "requirements": [{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["c"]}],
            }),
            "requirements[0]",
            "fewer values are left than `minValues` asks for",
        ),
        // Each alone is fine; the second leaves nothing with the first.
        (
            json!({"zones": ["a", "b"], "requirements": [
                {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["a"]},
                {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["b"]},
            ]}),
            "requirements[1]",
            "together with requirements[0]",
        ),
    ];
    for (change, path, detail) in cases {
        let (found_path, found_detail) =
            error_at(with(training(), change.clone()), LabelScheme::Cfke);
        assert_eq!(found_path, path, "{change}");
        assert!(found_detail.contains(detail), "{change}: {found_detail}");
        assert!(
            found_detail.contains("drop this requirement"),
            "{found_detail}"
        );
    }
    // A raw requirement on a key only another scheme generates is no contradiction.
    let other_scheme = json!({"requirements": [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lt", "values": ["2"]}]});
    assert!(errors_of(with(training(), other_scheme), LabelScheme::Cfke).is_empty());
}

#[test]
fn at_most_a_hundred_requirements() {
    let many: Vec<serde_json::Value> = (0..98)
        .map(|i| json!({"key": format!("example.com/k{i}"), "operator": "Exists"}))
        .collect();
    let (path, detail) = error_at(
        with(training(), json!({"requirements": many})),
        LabelScheme::Cfke,
    );
    assert_eq!(path, "requirements");
    assert!(
        detail.contains("make 101 NodePool requirements"),
        "{detail}"
    );
}
