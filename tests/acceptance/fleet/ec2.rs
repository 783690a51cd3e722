//! Fleets under `label_scheme = "aws"` against EC2's own instance types:
//! the kwok provider's file `testbed/build.sh aws-instance-types` generates
//! from moto's copy of EC2's DescribeInstanceTypes, with the labels and
//! allocatable resources karpenter-provider-aws's instance-type code gives
//! them (target/tools/aws-instance-types.json). The provider writes each
//! fleet's NodePool to the API server; its requirements are evaluated
//! against every generated type as Karpenter evaluates them.

use std::collections::{BTreeMap, BTreeSet};

use common::fixtures::{Guard, fleet, node_pool_api};
use common::terraform::{At, Workspace, assert_invalid, clis, each_cli};
use common::{block_on, repo_root, skipped, unique_name};
use gpufleet::catalog::{self, LabelScheme};
use serde_json::Value;

/// The EC2 instance families carrying each catalog model, as AWS's
/// accelerated computing instance type pages list their GPUs (P3: V100
/// 16 GB; P3dn: V100 32 GB; P4d: A100 40 GB; P4de: A100 80 GB; P5: H100; P5e/P5en: H200;
/// P6-B200, P6-B300; G4dn: T4; G5: A10G; G5g: T4G; G6 and Gr6: L4; G6e:
/// L40S; G7: RTX PRO 4500; G7e: RTX PRO 6000 Blackwell Server Edition).
const EC2_FAMILIES: &[(&str, &[&str])] = &[
    ("V100-16GB", &["p3"]),
    ("V100-32GB", &["p3dn"]),
    ("T4", &["g4dn"]),
    ("T4G", &["g5g"]),
    ("A100-40GB", &["p4d"]),
    ("A100-80GB", &["p4de"]),
    ("A10G", &["g5"]),
    ("L4", &["g6", "gr6"]),
    ("L40S", &["g6e"]),
    ("H100", &["p5"]),
    ("H200", &["p5e", "p5en"]),
    ("B200", &["p6-b200"]),
    ("B300", &["p6-b300"]),
    ("RTX-PRO-6000", &["g7e"]),
    ("RTX-PRO-4500", &["g7"]),
];

/// Models whose EC2 families the generated data lacks, and why: their
/// fleets select nothing here.
const NOT_IN_DATA: &[(&str, &str)] = &[(
    "V100-16GB",
    "karpenter-provider-aws v1.15.0 prices p3 (pkg/providers/pricing), but moto 5.2.5's copy of DescribeInstanceTypes has no p3 type",
)];

/// EC2's fractional GPU families (AWS's G6f and Gr6f pages: an eighth to a
/// half of an L4, `instance-gpu-count` 0 and no `nvidia.com/gpu`). A
/// whole-GPU fleet never gets them; `accelerator_count.min = 0` lets them
/// in.
const FRACTIONAL: &[(&str, &[&str])] = &[("L4", &["g6f", "gr6f"])];

/// Catalog models EC2 names alike (`v100`, `a100`; AWS: P3 has the 16 GB
/// V100, P3dn the 32 GB one, P4d the 40 GB A100, P4de the 80 GB one), which
/// a fleet tells apart by its memory: the attribute bounding it, and the
/// model's size.
const TOLD_APART_BY_MEMORY: &[(&str, &str, u32)] = &[
    ("V100-16GB", "accelerator_memory_max_gib", 16),
    ("V100-32GB", "accelerator_memory_min_gib", 32),
    ("A100-40GB", "accelerator_memory_max_gib", 40),
    ("A100-80GB", "accelerator_memory_min_gib", 80),
];

/// The generated instance types, or `None` (skipped, a failure under
/// `make test`) when build.sh has not generated them.
fn generated_types(what: &str) -> Option<Vec<Value>> {
    let path = repo_root().join("target/tools/aws-instance-types.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        skipped(
            what,
            &format!(
                "{} is missing: run `bash testbed/build.sh aws-instance-types`",
                path.display()
            ),
        );
        return None;
    };
    Some(serde_json::from_str(&text).expect("the generated instance types are JSON"))
}

/// What an offering's node carries for a key: the values of an `In`, or
/// nothing (`DoesNotExist`).
#[derive(Debug)]
enum Label {
    In(BTreeSet<String>),
    DoesNotExist,
}

/// The labels a node of each offering of `instance_type` gets: those the kwok
/// provider builds from the type itself (sigs.k8s.io/karpenter,
/// kwok/cloudprovider/helpers.go, newInstanceType) and its offering's
/// requirements.
fn offerings(instance_type: &Value) -> Vec<BTreeMap<String, Label>> {
    let one = |v: &Value| Label::In(BTreeSet::from([v.as_str().unwrap().to_string()]));
    let own = || {
        let os = instance_type["operatingSystems"].as_array().unwrap();
        BTreeMap::from([
            (
                "node.kubernetes.io/instance-type".to_string(),
                one(&instance_type["name"]),
            ),
            (
                "kubernetes.io/arch".to_string(),
                one(&instance_type["architecture"]),
            ),
            (
                "kubernetes.io/os".to_string(),
                Label::In(os.iter().map(|o| o.as_str().unwrap().to_string()).collect()),
            ),
        ])
    };
    instance_type["offerings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|offering| {
            let mut labels = own();
            for r in offering["Requirements"].as_array().unwrap() {
                let values = || {
                    r["values"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_string())
                        .collect()
                };
                let label = match r["operator"].as_str().unwrap() {
                    "In" => Label::In(values()),
                    "DoesNotExist" => Label::DoesNotExist,
                    other => panic!("generated offering requirement with operator {other}: {r}"),
                };
                labels.insert(r["key"].as_str().unwrap().to_string(), label);
            }
            labels
        })
        .collect()
}

/// Whether a node label `value` meets one NodePool requirement, as
/// Karpenter's `Requirement.Has` decides (sigs.k8s.io/karpenter,
/// pkg/scheduling/requirement.go): bounds compare integers, and a value
/// that is not one meets none.
fn meets(value: &str, operator: &str, values: &[String]) -> bool {
    let bound = || -> Option<(i64, i64)> { Some((value.parse().ok()?, values[0].parse().ok()?)) };
    match operator {
        "In" => values.iter().any(|v| v == value),
        "NotIn" => !values.iter().any(|v| v == value),
        "Exists" => true,
        "DoesNotExist" => false,
        "Gt" => bound().is_some_and(|(v, b)| v > b),
        "Lt" => bound().is_some_and(|(v, b)| v < b),
        "Gte" => bound().is_some_and(|(v, b)| v >= b),
        "Lte" => bound().is_some_and(|(v, b)| v <= b),
        other => panic!("unknown requirement operator {other}"),
    }
}

/// The instance types a NodePool with `requirements` may launch: those with
/// an offering whose labels meet every requirement. Karpenter intersects
/// the requirements on one key, so some value of the label must meet them
/// all; a label that does not exist meets only `NotIn` and `DoesNotExist`.
fn selected<'a>(types: &'a [Value], requirements: &Value) -> Vec<&'a str> {
    let mut by_key: BTreeMap<&str, Vec<(&str, Vec<String>)>> = BTreeMap::new();
    for r in requirements.as_array().unwrap() {
        let values = r["values"]
            .as_array()
            .map(|vs| vs.iter().map(|v| v.as_str().unwrap().to_string()).collect())
            .unwrap_or_default();
        by_key
            .entry(r["key"].as_str().unwrap())
            .or_default()
            .push((r["operator"].as_str().unwrap(), values));
    }
    types
        .iter()
        .filter(|t| {
            offerings(t).iter().any(|labels| {
                by_key.iter().all(|(key, reqs)| match labels.get(*key) {
                    Some(Label::In(have)) => have
                        .iter()
                        .any(|v| reqs.iter().all(|(op, values)| meets(v, op, values))),
                    Some(Label::DoesNotExist) => reqs
                        .iter()
                        .all(|(op, _)| matches!(*op, "NotIn" | "DoesNotExist")),
                    None => panic!(
                        "a requirement on {key}, which {} does not define: Karpenter would not compare it",
                        t["name"]
                    ),
                })
            })
        })
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// karpenter-provider-aws's `instance-family` label: the name before the dot.
fn family(instance_type: &str) -> &str {
    instance_type.split_once('.').unwrap().0
}

/// The catalog models with an EC2 label value: those the catalog says EC2
/// sells.
fn sold_on_ec2() -> Vec<&'static str> {
    catalog::all()
        .iter()
        .filter(|a| a.label_value(LabelScheme::Aws).is_some())
        .map(|a| a.name)
        .collect()
}

/// The live NodePool requirements of one aws-scheme fleet per model, with
/// the attributes `extra` besides, applied together: (model, requirements).
fn fleet_requirements(models: &[&'static str], extra: &str) -> Vec<(&'static str, Value)> {
    let attributes: Vec<(String, String)> = models
        .iter()
        .map(|model| {
            let memory = TOLD_APART_BY_MEMORY
                .iter()
                .find(|(m, _, _)| m == model)
                .map(|(_, bound, gib)| format!("  {bound} = {gib}\n"))
                .unwrap_or_default();
            (
                model.to_ascii_lowercase(),
                format!("  accelerators = [\"{model}\"]\n{memory}{extra}"),
            )
        })
        .collect();
    models
        .iter()
        .copied()
        .zip(live_requirements(&attributes))
        .collect()
}

/// The live NodePool requirements of aws-scheme fleets, each given as
/// (what its name says, its attributes), applied together.
fn live_requirements(fleets: &[(String, String)]) -> Vec<Value> {
    let names: Vec<String> = fleets
        .iter()
        .map(|(what, _)| unique_name(&format!("ec2-{what}")))
        .collect();
    let _guard = Guard::node_pools(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let body: String = fleets
        .iter()
        .zip(&names)
        .enumerate()
        .map(|(i, ((_, attributes), name))| {
            fleet(
                &format!("f{i}"),
                name,
                &format!("  label_scheme = \"aws\"\n{attributes}"),
            )
        })
        .collect();
    let mut ws = Workspace::new(&clis()[0]);
    ws.config(&body);
    ws.apply();
    let found = names
        .iter()
        .map(|name| {
            let pool = block_on(async { node_pool_api().await.get(name).await.unwrap() });
            pool.data["spec"]["template"]["spec"]["requirements"].clone()
        })
        .collect();
    ws.destroy();
    found
}

/// The families of `model` in `EC2_FAMILIES` (with its fractional ones when
/// `fractional`).
fn families_of(model: &str, fractional: bool) -> BTreeSet<&'static str> {
    let find = |table: &[(&str, &'static [&'static str])]| {
        table
            .iter()
            .find(|(m, _)| *m == model)
            .map_or(&[][..], |(_, families)| *families)
    };
    let whole = find(EC2_FAMILIES);
    assert!(
        !whole.is_empty(),
        "the catalog gives {model} an EC2 label value, but EC2_FAMILIES names no family for it"
    );
    let extra = if fractional { find(FRACTIONAL) } else { &[] };
    whole.iter().chain(extra).copied().collect()
}

/// `model`'s fleet selects instance types of its EC2 families only (with
/// its fractional ones when `fractional`), and of every one of them that
/// the data has; a model none of whose families the data has selects
/// nothing and is in [`NOT_IN_DATA`].
fn assert_selects_its_families(
    types: &[Value],
    model: &str,
    requirements: &Value,
    fractional: bool,
) {
    let in_data: BTreeSet<&str> = types
        .iter()
        .map(|t| family(t["name"].as_str().unwrap()))
        .collect();
    let chosen = selected(types, requirements);
    let families: BTreeSet<&str> = chosen.iter().map(|t| family(t)).collect();
    let expected = families_of(model, fractional);
    assert!(
        families.is_subset(&expected),
        "{model} ({requirements}) selects {chosen:?}, outside {expected:?}"
    );
    let present: Vec<&&str> = expected.iter().filter(|f| in_data.contains(**f)).collect();
    for family in &present {
        assert!(
            families.contains(**family),
            "{model} ({requirements}) selects no {family} type: {chosen:?}"
        );
    }
    if present.is_empty() {
        let (_, why) = NOT_IN_DATA
            .iter()
            .find(|(m, _)| *m == model)
            .unwrap_or_else(|| {
                panic!("the generated data has none of {model}'s families {expected:?}")
            });
        assert!(chosen.is_empty(), "{model} ({why}) selects {chosen:?}");
    }
}

/// An aws-scheme fleet of each of `models` selects its EC2 families
/// ([`assert_selects_its_families`]); with `fractional`, the fleet sets
/// `accelerator_count.min = 0` and gets the fractional ones too.
fn fleets_select_their_families(what: &str, models: &[&'static str], fractional: bool) {
    let Some(types) = generated_types(what) else {
        return;
    };
    let extra = if fractional {
        "  accelerator_count = { min = 0 }\n"
    } else {
        ""
    };
    for (model, requirements) in fleet_requirements(models, extra) {
        assert_selects_its_families(&types, model, &requirements, fractional);
    }
}

/// For every catalog model EC2 sells, an aws-scheme fleet of that model
/// alone (told apart from look-alikes by memory, [`TOLD_APART_BY_MEMORY`]),
/// without `accelerator_count`, selects at least one instance type, of its
/// EC2 families only, and of every one of them the data has: whole GPUs,
/// never EC2's fractional types (`instance-gpu-count` 0, no
/// `nvidia.com/gpu`).
#[test]
fn every_model_ec2_sells_selects_its_whole_gpu_families() {
    fleets_select_their_families(
        "the catalog against EC2's instance types",
        &sold_on_ec2(),
        false,
    );
}

/// `accelerator_count.min = 0` lets fractional GPUs in: an L4 fleet then
/// selects G6f and Gr6f besides G6 and Gr6.
#[test]
fn fractional_gpus_are_an_explicit_choice() {
    let models: Vec<&'static str> = FRACTIONAL.iter().map(|(m, _)| *m).collect();
    fleets_select_their_families(
        "fractional GPUs against EC2's instance types",
        &models,
        true,
    );
}

/// A fleet that asks for GPU memory alone gets every whole NVIDIA GPU
/// with that much: the EC2 families of exactly the catalog models of at
/// least that many GiB. (Its NVIDIA requirement keeps AMD's g4ad out;
/// moto's data has no g4ad, so that part is shown by the unit tests only.)
#[test]
fn memory_only_fleets_select_the_nvidia_families_with_that_memory() {
    let Some(types) = generated_types("memory-only fleets against EC2's instance types") else {
        return;
    };
    let in_data: BTreeSet<&str> = types
        .iter()
        .map(|t| family(t["name"].as_str().unwrap()))
        .collect();
    let bounds = [16, 24, 40, 80, 141];
    let fleets: Vec<(String, String)> = bounds
        .iter()
        .map(|gib| {
            (
                format!("{gib}gib"),
                format!("  accelerator_memory_min_gib = {gib}\n"),
            )
        })
        .collect();
    for (gib, requirements) in bounds.iter().zip(live_requirements(&fleets)) {
        let chosen: BTreeSet<&str> = selected(&types, &requirements)
            .into_iter()
            .map(family)
            .collect();
        let expected: BTreeSet<&str> = sold_on_ec2()
            .into_iter()
            .filter(|m| catalog::lookup(m).unwrap().memory_gib >= *gib)
            .flat_map(|m| families_of(m, false))
            .filter(|f| in_data.contains(f))
            .collect();
        assert_eq!(chosen, expected, "at least {gib} GiB ({requirements})");
    }
}

/// The generated file is what karpenter-provider-aws makes of EC2's data,
/// checked on types whose figures AWS's instance type pages state: p5.48xlarge
/// has 8 H100 with 80 GB each (81920 MiB) and 32 EFA interfaces; g6f.large
/// an eighth of an L4 and so no whole GPU; m7i.large no GPU.
#[test]
fn generated_types_carry_ec2s_figures() {
    let Some(types) = generated_types("the generated EC2 instance types") else {
        return;
    };
    let named = |name: &str| {
        types
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in the generated instance types"))
    };
    let label = |name: &str, key: &str| -> Option<String> {
        match offerings(named(name))[0].get(key) {
            Some(Label::In(values)) => Some(values.iter().cloned().collect::<Vec<_>>().join(",")),
            Some(Label::DoesNotExist) => None,
            None => panic!("{name} does not define {key}"),
        }
    };
    let p5 = "p5.48xlarge";
    let gpu = |key: &str| format!("karpenter.k8s.aws/instance-gpu-{key}");
    for (name, key, expected) in [
        (p5, gpu("name"), Some("h100")),
        (p5, gpu("manufacturer"), Some("nvidia")),
        (p5, gpu("count"), Some("8")),
        (p5, gpu("memory"), Some("81920")),
        (p5, "karpenter.k8s.aws/instance-family".into(), Some("p5")),
        ("g6f.large", gpu("name"), Some("l4")),
        ("g6f.large", gpu("count"), Some("0")),
        ("m7i.large", gpu("name"), None),
        ("m7i.large", gpu("count"), None),
    ] {
        assert_eq!(label(name, &key).as_deref(), expected, "{name} {key}");
    }
    for (name, resource, expected) in [
        (p5, "nvidia.com/gpu", Some("8")),
        (p5, "vpc.amazonaws.com/efa", Some("32")),
        ("g6f.large", "nvidia.com/gpu", None),
    ] {
        assert_eq!(
            named(name)["resources"][resource].as_str(),
            expected,
            "{name} {resource}"
        );
    }
    // Allocatable is capacity less what karpenter-provider-aws reserves (at
    // least its 7.5 % VM overhead): below the 2 TiB EC2 lists for p5.48xlarge.
    let memory = named(p5)["resources"]["memory"].as_str().unwrap();
    let mib: u64 = memory
        .strip_suffix("Mi")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("p5.48xlarge memory {memory}"));
    assert!(
        mib < 2_097_152 * 925 / 1000 && mib > 2_097_152 * 9 / 10,
        "{memory}"
    );
    // Kube-reserved CPU as the EKS AMI reserves it: 6 % of the first core,
    // 1 % of the second, 0.5 % of the next two, 0.25 % of the rest
    // (karpenter-provider-aws, pkg/providers/instancetype/types.go,
    // kubeReservedResources): 550m of p5.48xlarge's 192 vCPUs.
    assert_eq!(named(p5)["resources"]["cpu"], "191450m");
}

/// `network_bandwidth_min_gbps` selects by EC2's bandwidth figures (AWS's
/// P5 and P6 pages: p5.48xlarge, p5en.48xlarge and p6-b200.48xlarge have
/// 3200 Gbps, p6-b300.48xlarge 6400 Gbps, p5.4xlarge 100 Gbps; p5e.48xlarge,
/// also 3200 Gbps, is not in moto's data): at least 3200 Gbps with H100 is
/// p5.48xlarge alone, and without a model every type with that much.
#[test]
fn network_bandwidth_selects_by_ec2s_figures() {
    let Some(types) = generated_types("network bandwidth against EC2's instance types") else {
        return;
    };
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            "h100-3200gbps",
            "  accelerators = [\"H100\"]\n  network_bandwidth_min_gbps = 3200\n",
            &["p5.48xlarge"],
        ),
        (
            "3200gbps",
            "  network_bandwidth_min_gbps = 3200\n",
            &[
                "p5.48xlarge",
                "p5en.48xlarge",
                "p6-b200.48xlarge",
                "p6-b300.48xlarge",
            ],
        ),
        (
            "6400gbps",
            "  network_bandwidth_min_gbps = 6400\n",
            &["p6-b300.48xlarge"],
        ),
    ];
    let fleets: Vec<(String, String)> = cases
        .iter()
        .map(|(what, attributes, _)| (what.to_string(), attributes.to_string()))
        .collect();
    for ((what, _, expected), requirements) in cases.iter().zip(live_requirements(&fleets)) {
        let mut chosen = selected(&types, &requirements);
        chosen.sort();
        assert_eq!(chosen, *expected, "{what} ({requirements})");
    }
}

/// The EFA interfaces the catalog gives a node of a model with a GPU count
/// (the `interconnect_resources` of a fleet pinned to it) are what every
/// generated instance type with that many of the model has, and the data
/// has at least one such type.
#[test]
fn catalog_efa_interfaces_agree_with_ec2s_data() {
    let Some(types) = generated_types("EFA interfaces against EC2's instance types") else {
        return;
    };
    let label = |t: &Value, key: &str| match offerings(t)[0].get(key) {
        Some(Label::In(values)) => values.iter().next().cloned(),
        _ => None,
    };
    let mut checked = 0;
    for name in sold_on_ec2() {
        let model = catalog::lookup(name).unwrap();
        for gpus in 1..=16 {
            let Some(interfaces) = catalog::ec2_efa_interfaces(&[model], gpus) else {
                continue;
            };
            let of_shape: Vec<(&str, Option<&str>)> = types
                .iter()
                .filter(|t| {
                    let gpu =
                        |key: &str| label(t, &format!("karpenter.k8s.aws/instance-gpu-{key}"));
                    gpu("name").as_deref() == model.label_value(LabelScheme::Aws)
                        && gpu("memory") == Some(model.memory_mib().to_string())
                        && gpu("count") == Some(gpus.to_string())
                })
                .map(|t| {
                    (
                        t["name"].as_str().unwrap(),
                        t["resources"]["vpc.amazonaws.com/efa"].as_str(),
                    )
                })
                .collect();
            assert!(!of_shape.is_empty(), "no EC2 type with {gpus} {name}");
            let expected = interfaces.to_string();
            for (instance_type, efa) in of_shape {
                assert_eq!(
                    efa,
                    Some(expected.as_str()),
                    "{instance_type}: {gpus} {name}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "the catalog gives no EFA interfaces");
}

/// The catalog's EC2 columns are EC2's own figures: every instance type of
/// a model's EC2 families in the generated data carries the catalog's
/// `instance-gpu-name` value and its `instance-gpu-memory` MiB figure, and
/// the CPU architectures of those types are the catalog's (on which the
/// fleet's warning for architectures that exclude its models relies).
#[test]
fn catalog_names_memory_and_architectures_are_ec2s() {
    let Some(types) = generated_types("the catalog's EC2 figures against EC2's instance types")
    else {
        return;
    };
    let gpu = |key: &str| format!("karpenter.k8s.aws/instance-gpu-{key}");
    let mut compared = BTreeSet::new();
    for model in sold_on_ec2() {
        let accelerator = catalog::lookup(model).unwrap();
        let families = families_of(model, false);
        let mut architectures = BTreeSet::new();
        for instance_type in types
            .iter()
            .filter(|t| families.contains(family(t["name"].as_str().unwrap())))
        {
            let labels = &offerings(instance_type)[0];
            let value = |key: &str| match labels.get(&gpu(key)) {
                Some(Label::In(values)) => values.iter().cloned().collect::<Vec<_>>().join(","),
                other => panic!("{}: {key} is {other:?}", instance_type["name"]),
            };
            let context = format!("{model} on {}", instance_type["name"]);
            assert_eq!(
                Some(value("name").as_str()),
                accelerator.label_value(LabelScheme::Aws),
                "{context}"
            );
            assert_eq!(
                value("memory"),
                accelerator.memory_mib().to_string(),
                "{context}"
            );
            architectures.insert(instance_type["architecture"].as_str().unwrap());
            compared.insert(model);
        }
        if !architectures.is_empty() {
            let catalog: BTreeSet<&str> = accelerator
                .node_architectures(LabelScheme::Aws)
                .unwrap()
                .iter()
                .copied()
                .collect();
            assert_eq!(architectures, catalog, "{model}'s architectures");
        }
    }
    let not_in_data: BTreeSet<&str> = NOT_IN_DATA.iter().map(|(m, _)| *m).collect();
    let uncompared: BTreeSet<&str> = sold_on_ec2()
        .into_iter()
        .filter(|m| !compared.contains(m))
        .collect();
    assert_eq!(uncompared, not_in_data, "models with no type to compare");
}

/// The README's first fleet, `gpufleet_fleet.training` (an EC2NodeClass,
/// no `label_scheme`), named `name`.
fn readme_fleet(name: &str) -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let start = readme
        .find("resource \"gpufleet_fleet\" \"training\"")
        .expect("the README's training fleet");
    let block = &readme[start..start + readme[start..].find("\n}\n").unwrap() + 3];
    assert!(
        block.contains("EC2NodeClass") && !block.contains("label_scheme"),
        "the README's fleet is an EC2NodeClass's, with no label_scheme:\n{block}"
    );
    block
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("name ") {
                format!("  name = \"{name}\"")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The README's fleet plans with the label scheme of its EC2NodeClass,
/// `aws`, though the provider's default is `cfke`; the plan shows the
/// NodePool's requirements, which select EC2's 8×H100 types, and the
/// applied NodePool has exactly those.
#[test]
fn the_readme_fleet_gets_ec2s_labels_from_its_node_class() {
    let Some(types) = generated_types("the README's fleet against EC2's instance types") else {
        return;
    };
    each_cli(|cli| {
        let name = unique_name("readme");
        let _guard = Guard::node_pools(&[&name]);
        let mut ws = Workspace::new(cli);
        ws.config(&readme_fleet(&name));
        let plan = ws.plan();
        let address = "gpufleet_fleet.training";
        assert_eq!(
            plan.after(address, "label_scheme"),
            Some(&Value::from("aws")),
            "{}: {}",
            cli.name,
            plan.text
        );
        let planned = plan
            .after(address, "node_pool_requirements")
            .cloned()
            .unwrap_or_else(|| panic!("{}: no requirements planned:\n{}", cli.name, plan.text));
        let chosen = selected(&types, &planned);
        assert!(
            !chosen.is_empty(),
            "{}: {planned} selects no EC2 type",
            cli.name
        );
        assert!(
            chosen.iter().all(|t| family(t) == "p5"),
            "{}: {planned} selects {chosen:?}",
            cli.name
        );
        ws.apply();
        let live = block_on(async { node_pool_api().await.get(&name).await.unwrap() });
        let applied: Vec<Value> = live.data["spec"]["template"]["spec"]["requirements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                serde_json::json!({
                    "key": r["key"], "operator": r["operator"],
                    "values": r["values"], "min_values": r.get("minValues"),
                })
            })
            .collect();
        assert_eq!(Value::from(applied), planned, "{}", cli.name);
        ws.assert_plan_empty();
        ws.destroy();
    });
}

/// A label scheme set against the node class's is refused at
/// `label_scheme`, naming the labels no EC2 node carries.
#[test]
fn a_scheme_contradicting_the_node_class_fails_at_label_scheme() {
    let body =
        readme_fleet("readme-cfke").replace("  limits", "  label_scheme      = \"cfke\"\n  limits");
    each_cli(|cli| {
        assert_invalid(
            cli,
            &body,
            "\"cfke.io/accelerator-name\"",
            At::Line("label_scheme      = \"cfke\""),
        );
    });
}

/// `accelerators = ["T4"]` with `architectures = ["arm64"]` selects no EC2
/// type (EC2's T4 is g4dn's, on x86; Graviton's g5g has the T4G): the plan
/// warns, naming the T4G, whose fleet selects g5g.
#[test]
fn a_t4_on_arm64_is_warned_with_the_t4g() {
    let Some(types) = generated_types("the T4 on arm64 against EC2's instance types") else {
        return;
    };
    let fleet_of = |name: &str, model: &str| {
        format!(
            "resource \"gpufleet_fleet\" \"arm\" {{\n  name          = \"{name}\"\n  node_class    = {{ group = \"karpenter.k8s.aws\", kind = \"EC2NodeClass\", name = \"gpu\" }}\n  accelerators  = [\"{model}\"]\n  architectures = [\"arm64\"]\n}}\n"
        )
    };
    // The CLIs wrap a diagnostic's lines inside a box drawn with `│`.
    let flat = |text: &str| {
        text.replace('│', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(&fleet_of("t4-on-arm64", "T4"));
        let plan = ws.plan();
        let text = flat(&plan.text);
        assert!(
            text.contains("Warning: No instance type has these GPUs on these architectures")
                && text.contains("the same GPU is sold as \"T4G\""),
            "{}: {}",
            cli.name,
            plan.text
        );
        let requirements = plan
            .after("gpufleet_fleet.arm", "node_pool_requirements")
            .unwrap();
        assert!(
            selected(&types, requirements).is_empty(),
            "{}: {requirements}",
            cli.name
        );

        ws.config(&fleet_of("t4g-on-arm64", "T4G"));
        let plan = ws.plan();
        assert!(
            !flat(&plan.text).contains("No instance type has these GPUs"),
            "{}: {}",
            cli.name,
            plan.text
        );
        let requirements = plan
            .after("gpufleet_fleet.arm", "node_pool_requirements")
            .unwrap();
        let chosen = selected(&types, requirements);
        assert!(
            !chosen.is_empty() && chosen.iter().all(|t| family(t) == "g5g"),
            "{}: {requirements} selects {chosen:?}",
            cli.name
        );
    });
}

/// The EKS getting-started configuration (examples/getting-started/eks,
/// docs/guides/getting-started-eks.md), planned whole on the cluster: each
/// of its fleets is written in EC2's labels, from its EC2NodeClass, and
/// its requirements select the instance types the guide names, as
/// Karpenter evaluates them against EC2's own data.
#[test]
fn the_eks_getting_started_fleets_select_ec2_instance_types() {
    let Some(types) =
        generated_types("the EKS getting-started fleets against EC2's instance types")
    else {
        return;
    };
    let fleets = [
        ("gpufleet_fleet.training", &["p5"][..]),
        ("gpufleet_fleet.inference_l4", &["g6", "gr6"][..]),
        ("gpufleet_fleet.inference_mig", &["p5"][..]),
    ];
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config_from("examples/getting-started/eks")
            .env("KUBECONFIG", &common::provider_kubeconfig());
        let plan = ws.plan();
        for (address, families) in fleets {
            assert_eq!(
                plan.after(address, "label_scheme"),
                Some(&Value::from("aws")),
                "{}: {address}: {}",
                cli.name,
                plan.text
            );
            let requirements = plan
                .after(address, "node_pool_requirements")
                .unwrap_or_else(|| panic!("{}: {address} plans no requirements", cli.name));
            let chosen = selected(&types, requirements);
            assert!(
                !chosen.is_empty() && chosen.iter().all(|t| families.contains(&family(t))),
                "{}: {address}: {requirements} selects {chosen:?}, not only {families:?}",
                cli.name
            );
        }
    });
}
