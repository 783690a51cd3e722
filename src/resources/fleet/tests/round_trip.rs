//! The import round trip: any valid NodePool, imported under any label
//! scheme, gives a state that, written back as configuration the way
//! `terraform plan -generate-config-out` writes it, validates and plans
//! with no change, and applies as the same NodePool.

use super::*;

/// A NodePool as the API server serves it: Karpenter's CRD defaults filled in.
fn live_node_pool(
    name: &str,
    spec: serde_json::Value,
    metadata: serde_json::Value,
) -> serde_json::Value {
    let mut spec = spec;
    let disruption = spec["disruption"].as_object().cloned().unwrap_or_else(|| {
        serde_json::Map::from_iter([("consolidateAfter".to_string(), json!("0s"))])
    });
    spec["disruption"] = json!(disruption);
    let d = &mut spec["disruption"];
    if d.get("consolidationPolicy").is_none() {
        d["consolidationPolicy"] = json!("WhenEmptyOrUnderutilized");
    }
    if d.get("budgets").is_none() {
        d["budgets"] = json!([{"nodes": "10%"}]);
    }
    if spec["template"]["spec"].get("expireAfter").is_none() {
        spec["template"]["spec"]["expireAfter"] = json!("720h");
    }
    let mut object = json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name, "uid": "0d9e", "generation": 1, "resourceVersion": "42"},
        "spec": spec,
        "status": {"nodes": 0},
    });
    for (key, value) in metadata.as_object().into_iter().flatten() {
        object["metadata"][key] = value.clone();
    }
    object
}

/// A template of an EC2NodeClass's nodes.
fn template(requirements: serde_json::Value) -> serde_json::Value {
    template_of(("karpenter.k8s.aws", "EC2NodeClass"), requirements)
}

/// A template of nodes of the node class `(group, kind)`: its cloud's labels
/// are the ones requirements can use.
fn template_of((group, kind): (&str, &str), requirements: serde_json::Value) -> serde_json::Value {
    json!({"spec": {
        "nodeClassRef": {"group": group, "kind": kind, "name": "default"},
        "requirements": requirements,
    }})
}

/// Node classes whose cloud the catalog does not know (kwok's), and Azure's.
const KWOK: (&str, &str) = ("karpenter.kwok.sh", "KWOKNodeClass");
const AKS: (&str, &str) = ("karpenter.azure.com", "AKSNodeClass");

/// Real-world NodePools and awkward ones, as other tools write them.
fn corpus() -> Vec<(&'static str, serde_json::Value)> {
    let mut gpu_aws = template(json!([
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["p5", "p5e", "p4d"], "minValues": 2},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100", "a100"]},
        {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Gte", "values": ["81920"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-network-bandwidth", "operator": "Gte", "values": ["400000"], "minValues": 2},
    ]));
    gpu_aws["spec"]["taints"] = json!([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]);
    gpu_aws["spec"]["expireAfter"] = json!("336h");
    gpu_aws["spec"]["terminationGracePeriod"] = json!("24h");
    let mut cfke_inference = template_of(
        KWOK,
        json!([
            {"key": "cfke.io/accelerator-name", "operator": "In", "values": ["L4", "L40S"], "minValues": 2},
            {"key": "cfke.io/accelerator-count", "operator": "Lte", "values": ["1"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-central-1a", "eu-central-1b"]},
        ]),
    );
    cfke_inference["metadata"] = json!({"labels": {"workload": "inference"}, "annotations": {"example.com/team": "serving"}});
    cfke_inference["spec"]["startupTaints"] =
        json!([{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]);
    let cpu = template(json!([
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 10},
    ]));
    let azure = template_of(
        AKS,
        json!([
            {"key": "karpenter.azure.com/sku-gpu-name", "operator": "In", "values": ["A100"]},
            {"key": "karpenter.azure.com/sku-family", "operator": "In", "values": ["NCADS_A100_v4"]},
            {"key": "karpenter.azure.com/sku-gpu-count", "operator": "Gte", "values": ["1"], "minValues": 1},
            {"key": "karpenter.azure.com/sku-gpu-count", "operator": "Lte", "values": ["4"], "minValues": 1},
        ]),
    );
    // Things no attribute can hold, or that contradict one another.
    let awkward = template_of(
        KWOK,
        json!([
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]},
            {"key": "cfke.io/accelerator-count", "operator": "Gte", "values": ["8"]},
            {"key": "cfke.io/accelerator-count", "operator": "Lte", "values": ["4"]},
            {"key": "cfke.io/accelerator-name", "operator": "In", "values": ["X999"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["preemptible"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "amd64"], "minValues": 2},
            {"key": "cfke.io/accelerator-memory", "operator": "Gte", "values": ["0"]},
            {"key": "cfke.io/instance-family", "operator": "NotIn", "values": ["cpx"]},
        ]),
    );
    // Bounds on one key with different minValues, and a memory bound that
    // is no nominal size.
    let uneven = template(json!([
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["1"], "minValues": 2},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lte", "values": ["8"]},
        {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Gte", "values": ["40000"]},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["a100"]},
        {"key": "karpenter.k8s.aws/instance-network-bandwidth", "operator": "Gt", "values": ["400000"]},
    ]));
    let empty = template(json!([]));
    vec![
        (
            "gpu-aws",
            live_node_pool(
                "gpu-aws",
                json!({
                    "template": gpu_aws,
                    "limits": {"nvidia.com/gpu": 64, "cpu": "1000"},
                    "disruption": {
                        "consolidationPolicy": "WhenEmpty",
                        "consolidateAfter": "1h",
                        "budgets": [
                            {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted", "Underutilized"]},
                            {"nodes": "10%"},
                        ],
                    },
                }),
                json!({"labels": {"team": "ml"}, "annotations": {
                    "kubernetes.io/description": "H100 training",
                    "kubectl.kubernetes.io/last-applied-configuration": "{}",
                    "karpenter.sh/nodepool-hash": "4012",
                }}),
            ),
        ),
        (
            "cfke-inference",
            live_node_pool(
                "cfke-inference",
                json!({"template": cfke_inference, "weight": 50, "limits": {"nvidia.com/gpu": "16"}}),
                json!({}),
            ),
        ),
        (
            "cpu",
            live_node_pool(
                "cpu",
                json!({"template": cpu, "limits": {"cpu": 1000, "memory": "1000Gi"},
                       "disruption": {"consolidationPolicy": "Balanced", "consolidateAfter": "1m"}}),
                json!({}),
            ),
        ),
        (
            "static",
            live_node_pool(
                "static",
                json!({"template": empty.clone(), "replicas": 3, "limits": {"nodes": "5"}}),
                json!({}),
            ),
        ),
        (
            "azure",
            live_node_pool("azure", json!({"template": azure}), json!({})),
        ),
        (
            "awkward",
            live_node_pool("awkward", json!({"template": awkward}), json!({})),
        ),
        (
            "uneven",
            live_node_pool("uneven", json!({"template": uneven}), json!({})),
        ),
        (
            "empty",
            live_node_pool("empty", json!({"template": empty}), json!({})),
        ),
    ]
}

/// The configuration `terraform plan -generate-config-out` writes for a
/// state: every attribute a configuration may set, as the state has it.
fn generated_config(state: &Value) -> Value {
    let mut config = state.clone();
    for attr in &harness().schema().attrs {
        if attr.flags.computed && !attr.flags.optional {
            set(&mut config, attr.name, Value::Null);
        }
    }
    config
}

/// A spec as Karpenter reads it: requirements in any order (it hashes them
/// as a set), quantities as strings, and a bound on a whole-number label the
/// same whether written `Gte 8` or `Gt 7` (`Lte 8` or `Lt 9`).
fn normalized(spec: &serde_json::Value) -> serde_json::Value {
    let mut spec = spec.clone();
    if let Some(requirements) = spec["template"]["spec"]["requirements"].as_array_mut() {
        for r in requirements.iter_mut() {
            let shifted = match (r["operator"].as_str(), r["values"][0].as_str()) {
                (Some("Gte"), Some(n)) => n.parse::<i64>().ok().map(|n| ("Gt", n - 1)),
                (Some("Lte"), Some(n)) => n.parse::<i64>().ok().map(|n| ("Lt", n + 1)),
                _ => None,
            };
            if let Some((operator, n)) = shifted {
                r["operator"] = json!(operator);
                r["values"] = json!([n.to_string()]);
            }
            if let Some(values) = r.get_mut("values").and_then(|v| v.as_array_mut()) {
                values.sort_by_key(|v| v.to_string());
                values.dedup();
            }
        }
        requirements.sort_by_key(|r| r.to_string());
    }
    if let Some(limits) = spec["limits"].as_object_mut() {
        for quantity in limits.values_mut() {
            if !quantity.is_string() {
                *quantity = json!(quantity.to_string());
            }
        }
    }
    spec
}

#[test]
fn every_node_pool_imports_and_plans_with_no_change_under_every_scheme() {
    for (name, live) in corpus() {
        for provider in LabelScheme::ALL {
            let what = format!("{name} under the {provider} provider scheme");
            let imported = import(&live, provider);
            let config = generated_config(&imported);
            let validation = harness().validate(&config);
            assert!(
                validation.is_empty(),
                "{what}: {validation:#?}\n{}",
                config.to_json()
            );
            let plan = plan_for(&imported, &config, provider);
            assert!(
                !plan.diagnostics.has_errors(),
                "{what}: {:?}\n{}",
                plan.diagnostics,
                config.to_json()
            );
            assert_same(&plan.planned_state, &imported, &what);
            assert!(plan.requires_replace.is_empty(), "{what}");
            // Applied, the state is the same NodePool.
            let applied = served(&imported, provider);
            assert_eq!(
                normalized(&applied["spec"]),
                normalized(&live["spec"]),
                "{what}"
            );
            let kept: Vec<&str> = ["labels", "annotations"]
                .into_iter()
                .filter(|k| applied["metadata"].get(*k).is_some())
                .collect();
            for key in kept {
                for (k, v) in applied["metadata"][key].as_object().unwrap() {
                    assert_eq!(&live["metadata"][key][k], v, "{what}: metadata.{key}");
                }
            }
            // Reading it back while managed changes nothing either.
            let state = read(&applied, &imported, false, provider);
            assert_same(&state, &imported, &format!("{what}, read after apply"));
        }
    }
}

#[test]
fn what_the_scheme_expresses_comes_back_as_attributes() {
    let corpus = corpus();
    let find = |name: &str| corpus.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    let gpu = import(&find("gpu-aws"), LabelScheme::Cfke);
    assert_eq!(gpu.attr("label_scheme"), &Value::string("aws"));
    assert_eq!(
        gpu.attr("instance_families").to_json(),
        json!(["p4d", "p5", "p5e"])
    );
    assert_eq!(
        gpu.attr("min_values").attr("instance_families").as_i64(),
        Some(2)
    );
    assert_eq!(
        gpu.attr("accelerators").to_json(),
        json!(["A100-80GB", "H100"])
    );
    assert_eq!(gpu.attr("accelerator_memory_min_gib").as_i64(), Some(80));
    assert_eq!(gpu.attr("network_bandwidth_min_gbps").as_i64(), Some(400));
    assert_eq!(
        gpu.attr("min_values")
            .attr("network_bandwidth_min_gbps")
            .as_i64(),
        Some(2)
    );
    assert_eq!(
        gpu.attr("limits").to_json(),
        json!({"gpus": "64", "cpu": "1000"})
    );
    assert!(gpu.attr("requirements").is_null());
    assert_eq!(gpu.attr("termination_grace_period"), &Value::string("24h"));
    assert_eq!(
        gpu.attr("node_pool_annotations").to_json(),
        json!({"kubernetes.io/description": "H100 training"})
    );
    // The state always says the scheme: here the node class's, whatever the
    // provider's is.
    for provider in LabelScheme::ALL {
        let gpu = import(&find("gpu-aws"), provider);
        assert_eq!(gpu.attr("label_scheme"), &Value::string("aws"));
    }

    // Without any scheme's own labels, the node class's scheme; the
    // provider's where the node class does not tell.
    let cpu = import(&find("cpu"), LabelScheme::Cfke);
    assert_eq!(cpu.attr("label_scheme"), &Value::string("aws"));
    let empty = import(&find("empty"), LabelScheme::Cfke);
    assert_eq!(empty.attr("label_scheme"), &Value::string("aws"));
    let mut unknown_cloud = find("empty");
    unknown_cloud["spec"]["template"]["spec"]["nodeClassRef"] =
        template_of(KWOK, json!([]))["spec"]["nodeClassRef"].clone();
    assert_eq!(
        import(&unknown_cloud, LabelScheme::Azure).attr("label_scheme"),
        &Value::string("azure")
    );
    assert_eq!(
        cpu.attr("architectures").to_json(),
        json!(["amd64", "arm64"])
    );
    assert_eq!(
        cpu.attr("requirements").to_json().as_array().unwrap().len(),
        4
    );

    let azure = import(&find("azure"), LabelScheme::Cfke);
    assert_eq!(azure.attr("label_scheme"), &Value::string("azure"));
    assert_eq!(
        azure.attr("instance_families").to_json(),
        json!(["NCADS_A100_v4"])
    );
    assert_eq!(
        azure.attr("accelerator_count").to_json(),
        json!({"min": 1, "max": 4})
    );
    assert_eq!(
        azure.attr("min_values").attr("accelerator_count").as_i64(),
        Some(1)
    );

    // Contradictions and values no attribute holds stay raw, every one of them.
    let awkward = import(&find("awkward"), LabelScheme::Cfke);
    let constraints = serde_json::to_value(Constraints::default()).unwrap();
    let attrs = constraints.as_object().unwrap().keys();
    for attr in attrs.filter(|a| *a != "requirements") {
        assert!(
            awkward.attr(attr).is_null(),
            "{attr}: {:?}",
            awkward.attr(attr)
        );
    }
    assert_eq!(
        awkward
            .attr("requirements")
            .to_json()
            .as_array()
            .unwrap()
            .len(),
        9
    );

    // Different minValues on one key's bounds: the first bound is the attribute.
    let uneven = import(&find("uneven"), LabelScheme::Aws);
    assert_eq!(
        uneven.attr("accelerator_count").to_json(),
        json!({"min": 1, "max": null})
    );
    assert_eq!(
        uneven.attr("min_values").attr("accelerator_count").as_i64(),
        Some(2)
    );
    assert_eq!(
        uneven.attr("accelerators").to_json(),
        json!(["A100-40GB", "A100-80GB"])
    );
    assert_eq!(
        uneven.attr("requirements").to_json(),
        json!([
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lte", "values": ["8"], "min_values": null},
            {"key": "karpenter.k8s.aws/instance-gpu-memory", "operator": "Gte", "values": ["40000"], "min_values": null},
            {"key": "karpenter.k8s.aws/instance-network-bandwidth", "operator": "Gt", "values": ["400000"], "min_values": null},
        ])
    );
}
