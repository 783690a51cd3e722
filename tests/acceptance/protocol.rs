//! Drives the real gRPC service in-process the way Terraform does: over
//! AutoMTLS with a go-plugin style client certificate, msgpack values,
//! schema → identity schemas → validate → configure → plan → apply → read →
//! import (by ID and by identity) → destroy, with the identities Terraform
//! 1.12+ sends and stores.
//! Apply, read and import use the real cluster of `make cluster` (or any
//! KUBECONFIG given in GPUFLEET_TEST_KUBECONFIG); the calls that need no
//! cluster are in the offline tier (tests/offline/protocol.rs).

use std::collections::BTreeMap;
use std::sync::Arc;

use common::fixtures::{Guard, INFERENCE, class, fleet, kueue as kueue_kind};
use common::plugin::{
    PRIORITY_CLASS, Terraform, attribute_names, block_type, connect, dynamic, errors,
    identity_type, identity_value, object, start_plugin,
};
use common::terraform::Workspace;
use gpufleet::framework::FrameworkProvider;
use gpufleet::protocol::Value;
use gpufleet::protocol::codec::decode_msgpack;
use gpufleet::protocol::proto::tfplugin6 as pb;
use gpufleet::protocol::proto::tfplugin6::provider_client::ProviderClient;
use gpufleet::provider::Gpufleet;
use k8s_openapi::api::core::v1::{Namespace, Node, NodeSpec, Taint};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::Channel;

#[tokio::test]
async fn full_lifecycle_against_the_cluster() {
    let kubeconfig = common::provider_kubeconfig();
    let plugin = start_plugin().await;
    let mut tf = Terraform::new(&plugin).await;
    assert_eq!(tf.configure(&kubeconfig).await, Vec::<String>::new());
    let ty = tf.class_type.clone();
    let name = common::unique_name("pc-grpc");
    // Whatever step fails, the class does not outlive the test.
    let _guard = Guard::of::<PriorityClass>(&[&name]);
    let identity = object(&tf.class_identity_type, &[("name", Value::string(&name))]);

    // Create: the plan already knows the identity, and apply returns it.
    let config = object(
        &ty,
        &[
            ("name", Value::string(&name)),
            ("value", Value::int(100_000)),
            (
                "labels",
                Value::Map([("team".to_string(), Value::string("ml"))].into()),
            ),
        ],
    );
    let plan = tf.plan(&Value::Null, &config, &config).await;
    assert_eq!(
        identity_value(plan.planned_identity.as_ref(), &tf.class_identity_type),
        identity
    );
    let planned = decode_msgpack(&plan.planned_state.unwrap().msgpack, &ty).unwrap();
    let created = tf
        .apply(&Value::Null, &planned, &config, plan.planned_private)
        .await;
    assert!(created.errors.is_empty(), "{:?}", created.errors);
    let (state, private) = (created.state, created.private);
    assert_eq!(state.attr("id"), &Value::string(&name));
    assert!(state.is_wholly_known());
    assert_eq!(created.identity, identity);

    // Read gives the same state and identity; planning the same config
    // again changes nothing.
    let read = tf.read(&state, private.clone(), &identity).await;
    assert!(read.errors.is_empty(), "{:?}", read.errors);
    assert_eq!(read.state, state);
    assert_eq!(read.identity, identity);
    let again = tf.plan(&read.state, &read.state, &config).await;
    let replanned = decode_msgpack(&again.planned_state.unwrap().msgpack, &ty).unwrap();
    assert_eq!(replanned, read.state);
    assert!(again.requires_replace.is_empty());

    // An update in place keeps the identity.
    let mut relabelled = config.clone();
    *relabelled.attr_mut("labels").unwrap() =
        Value::Map([("team".to_string(), Value::string("infra"))].into());
    let mut proposed = relabelled.clone();
    *proposed.attr_mut("id").unwrap() = state.attr("id").clone();
    for computed in ["preemption_policy", "global_default"] {
        *proposed.attr_mut(computed).unwrap() = state.attr(computed).clone();
    }
    let update = tf.plan(&state, &proposed, &relabelled).await;
    assert!(update.requires_replace.is_empty());
    assert_eq!(
        identity_value(update.planned_identity.as_ref(), &tf.class_identity_type),
        identity
    );
    let planned = decode_msgpack(&update.planned_state.unwrap().msgpack, &ty).unwrap();
    let updated = tf
        .apply(&state, &planned, &relabelled, update.planned_private)
        .await;
    assert!(updated.errors.is_empty(), "{:?}", updated.errors);
    assert_eq!(
        updated.state.attr("labels"),
        relabelled.attr("labels"),
        "not updated"
    );
    assert_eq!(updated.identity, identity);
    let (state, private) = (updated.state, updated.private);

    // A new value requires replacement.
    let mut bigger = relabelled.clone();
    *bigger.attr_mut("value").unwrap() = Value::int(200_000);
    let mut proposed = bigger.clone();
    *proposed.attr_mut("id").unwrap() = state.attr("id").clone();
    let replace = tf.plan(&state, &proposed, &bigger).await;
    assert_eq!(replace.requires_replace.len(), 1);

    // Import by name and import by identity give the same skeleton and
    // identity, and a read of either gives the state apply wrote.
    let by_id = tf.import(&name, None).await;
    let by_identity = tf.import("", Some(&identity)).await;
    assert!(by_id.errors.is_empty() && by_identity.errors.is_empty());
    assert_eq!(by_id.state, by_identity.state);
    assert_eq!(by_id.private, by_identity.private);
    assert_eq!(by_id.identity, identity);
    assert_eq!(by_identity.identity, identity);
    let after_import = tf
        .read(
            &by_identity.state,
            by_identity.private,
            &by_identity.identity,
        )
        .await;
    assert!(after_import.errors.is_empty(), "{:?}", after_import.errors);
    assert_eq!(after_import.state, state);
    assert_eq!(after_import.identity, identity);

    // Destroy: no state and no identity; a read then finds nothing.
    let gone = tf
        .apply(&state, &Value::Null, &Value::Null, private.clone())
        .await;
    assert!(gone.errors.is_empty(), "{:?}", gone.errors);
    assert_eq!(gone.state, Value::Null);
    assert_eq!(gone.identity, Value::Null);
    let after = tf.read(&state, private, &identity).await;
    assert!(after.errors.is_empty(), "{:?}", after.errors);
    assert_eq!(after.state, Value::Null);
    assert_eq!(after.identity, Value::Null);
}

/// `terraform query` with a `list "gpufleet_priority_class"` block, as
/// Terraform 1.14 makes its calls (hashicorp/terraform v1.14,
/// internal/plugin6/grpc_provider.go): schema, identity schemas, validate
/// the provider and the list block's `config`, configure, then one
/// ListResource stream. Five hand-written classes come back exactly once
/// each, with their identity and state (without kubectl's bookkeeping
/// annotation on one of them); configuration generated from each
/// state (every configurable attribute, as `-generate-config-out` writes
/// it) imports by that identity and plans nothing.
#[tokio::test]
async fn list_resource_as_terraform_query_calls_it() {
    let kubeconfig = common::provider_kubeconfig();
    let run = common::unique_name("pc-list");
    let names: Vec<String> = (1..=5).map(|i| format!("{run}-{i}")).collect();
    let _guard = Guard::of::<PriorityClass>(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let selector = format!("gpufleet.test/list={run}");
    let api = Api::<PriorityClass>::all(common::kube_client().await);
    for (i, name) in names.iter().enumerate() {
        let mut labels = BTreeMap::from([("gpufleet.test/list".to_string(), run.clone())]);
        if i % 2 == 0 {
            labels.insert("team".into(), format!("team-{i}"));
        }
        let class = PriorityClass {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                labels: Some(labels),
                // As `kubectl apply` leaves it: with its record of the
                // manifest, which is kubectl's and never listed.
                annotations: (i == 3).then(|| {
                    BTreeMap::from([
                        ("example.com/owner".to_string(), "platform".to_string()),
                        (
                            "kubectl.kubernetes.io/last-applied-configuration".to_string(),
                            format!("{{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{{\"name\":\"{name}\"}},\"value\":4000}}\n"),
                        ),
                    ])
                }),
                ..Default::default()
            },
            value: Some(1000 * (i as i32 + 1)),
            preemption_policy: (i % 2 == 1).then(|| "Never".to_string()),
            description: (i != 2).then(|| format!("hand-written class {i}")),
            ..Default::default()
        };
        api.create(&PostParams::default(), &class).await.unwrap();
    }

    let plugin = start_plugin().await;
    let mut tf = Terraform::new(&plugin).await;
    let schema = tf.provider_schema().await;
    let list_type = block_type(&schema.list_resource_schemas[PRIORITY_CLASS]);
    let provider_config = object(
        &tf.provider_type,
        &[("config_path", Value::string(&kubeconfig))],
    );
    let validated = tf
        .client
        .validate_provider_config(pb::validate_provider_config::Request {
            config: dynamic(&provider_config, &tf.provider_type),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(errors(&validated.diagnostics).is_empty());
    let list_config = |selector: Option<&str>| {
        object(
            &list_type,
            &[(
                "label_selector",
                selector.map_or(Value::Null, Value::string),
            )],
        )
    };
    let validated = tf
        .client
        .validate_list_resource_config(pb::validate_list_resource_config::Request {
            type_name: PRIORITY_CLASS.into(),
            config: dynamic(&list_config(Some(&selector)), &list_type),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(errors(&validated.diagnostics).is_empty());
    assert_eq!(tf.configure(&kubeconfig).await, Vec::<String>::new());

    let list = |selector: Option<&str>, include: bool, limit: i64| pb::list_resource::Request {
        type_name: PRIORITY_CLASS.into(),
        config: dynamic(&list_config(selector), &list_type),
        include_resource_object: include,
        limit,
    };
    let events = |request| list_events(&tf.client, request);
    let found = events(list(Some(&selector), true, 100)).await;
    let listed: Vec<&str> = found.iter().map(|e| e.display_name.as_str()).collect();
    assert_eq!(listed, names, "each class exactly once");
    for event in &found {
        assert!(
            errors(&event.diagnostic).is_empty(),
            "{:?}",
            event.diagnostic
        );
        assert_eq!(
            identity_value(event.identity.as_ref(), &tf.class_identity_type),
            object(
                &tf.class_identity_type,
                &[("name", Value::string(&event.display_name))]
            )
        );
    }
    // Terraform stops at its limit; without a selector every class but
    // Kubernetes' own `system-` ones (which validation refuses) is listed,
    // and only identities travel unless objects are asked for.
    assert_eq!(events(list(Some(&selector), true, 2)).await.len(), 2);
    let everything = events(list(None, false, 1000)).await;
    assert!(everything.iter().all(|e| e.resource_object.is_none()));
    let all_names: Vec<&str> = everything.iter().map(|e| e.display_name.as_str()).collect();
    assert!(names.iter().all(|n| all_names.contains(&n.as_str())));
    assert!(
        !all_names.iter().any(|n| n.starts_with("system-")),
        "{all_names:?}"
    );

    let resources = FrameworkProvider::new(Gpufleet);
    let attrs = &resources
        .resources()
        .find(|(n, _)| *n == PRIORITY_CLASS)
        .unwrap()
        .1
        .schema()
        .attrs;
    let ty = tf.class_type.clone();
    for event in &found {
        let state = decode_msgpack(&event.resource_object.as_ref().unwrap().msgpack, &ty).unwrap();
        assert_eq!(state.attr("name"), &Value::string(&event.display_name));
        let annotations = if event.display_name == names[3] {
            Value::Map([("example.com/owner".to_string(), Value::string("platform"))].into())
        } else {
            Value::Null
        };
        assert_eq!(
            state.attr("annotations"),
            &annotations,
            "{}",
            event.display_name
        );
        // What -generate-config-out writes: every attribute a configuration may set.
        let mut config = state.clone();
        for attr in attrs
            .iter()
            .filter(|a| !a.flags.optional && !a.flags.required)
        {
            *config.attr_mut(attr.name).unwrap() = Value::Null;
        }
        let identity = identity_value(event.identity.as_ref(), &tf.class_identity_type);
        let imported = tf.import("", Some(&identity)).await;
        assert!(imported.errors.is_empty(), "{:?}", imported.errors);
        let read = tf
            .read(&imported.state, imported.private, &imported.identity)
            .await;
        assert!(read.errors.is_empty(), "{:?}", read.errors);
        assert_eq!(
            read.state, state,
            "{}: listed and imported states differ",
            event.display_name
        );
        let proposed = gpufleet::framework::plan::proposed(attrs, &read.state, &config);
        let plan = tf.plan(&read.state, &proposed, &config).await;
        assert!(
            errors(&plan.diagnostics).is_empty(),
            "{:?}",
            plan.diagnostics
        );
        let planned = decode_msgpack(&plan.planned_state.unwrap().msgpack, &ty).unwrap();
        assert_eq!(
            planned, read.state,
            "{}: the plan changes something",
            event.display_name
        );
        assert!(plan.requires_replace.is_empty());
    }
}

const FLEET: &str = "gpufleet_fleet";
const NODE_TAINT: &str = "gpufleet_node_taint";
const QUEUE: &str = "gpufleet_queue";
/// The label that puts a list test's objects in its selector, valued with
/// the run.
const LISTED_BY: &str = "gpufleet.test/list";

/// The events of one ListResource stream, in order.
async fn list_events(
    client: &ProviderClient<Channel>,
    request: pb::list_resource::Request,
) -> Vec<pb::list_resource::Event> {
    let mut client = client.clone();
    let mut stream = client.list_resource(request).await.unwrap().into_inner();
    let mut events = Vec::new();
    while let Some(event) = stream.message().await.unwrap() {
        events.push(event);
    }
    events
}

/// A value as HCL, as hclwrite's TokensForValue writes it (keys always
/// quoted, which HCL reads the same as bare ones).
fn hcl_value(value: &Value) -> String {
    let joined = |items: Vec<String>| items.join(", ");
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => hcl_string(s),
        Value::List(items) | Value::Set(items) | Value::Tuple(items) => {
            format!("[{}]", joined(items.iter().map(hcl_value).collect()))
        }
        Value::Map(entries) | Value::Object(entries) => format!(
            "{{ {} }}",
            joined(
                entries
                    .iter()
                    .map(|(k, v)| format!("{} = {}", hcl_string(k), hcl_value(v)))
                    .collect()
            )
        ),
        Value::Unknown(_) | Value::Dynamic(..) => panic!("a listed state holds {value:?}"),
    }
}

/// A quoted HCL string: escapes, and `${`/`%{` doubled so that they stay text.
fn hcl_string(s: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '$' | '%' if chars.peek() == Some(&'{') => {
                out.push(c);
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What Terraform makes of a listed state before writing configuration
/// from it, for a provider that does not generate configuration itself
/// (hashicorp/terraform v1.14, internal/genconfig,
/// ExtractLegacyConfigFromState): read-only attributes, a top-level optional
/// and computed `id`, and empty optional strings become null, at any depth.
fn legacy_config(attrs: &[pb::schema::Attribute], state: &Value, top: bool) -> Value {
    Value::Object(
        attrs
            .iter()
            .map(|a| {
                let value = state.attr(&a.name);
                let read_only = a.computed && !a.optional;
                let legacy_id = top && a.name == "id" && a.computed && a.optional;
                let empty = a.optional && value == &Value::string("");
                let config = if value.is_null() || a.deprecated || read_only || legacy_id || empty {
                    Value::Null
                } else if let Some(nested) = &a.nested_type {
                    let inner = |v: &Value| legacy_config(&nested.attributes, v, false);
                    match value {
                        Value::List(items) => Value::List(items.iter().map(inner).collect()),
                        Value::Set(items) => Value::Set(items.iter().map(inner).collect()),
                        Value::Map(m) => {
                            Value::Map(m.iter().map(|(k, v)| (k.clone(), inner(v))).collect())
                        }
                        object => inner(object),
                    }
                } else {
                    value.clone()
                };
                (a.name.clone(), config)
            })
            .collect(),
    )
}

/// The attributes of `config` as Terraform's generator writes them
/// (internal/genconfig, writeConfigAttributesFromExisting): sorted by name,
/// computed ones left out while null, a null nested attribute as `null`.
/// (A string holding a JSON object or array would be written with
/// `jsonencode`, the same value; none of these resources has one.)
fn write_attributes(
    out: &mut String,
    attrs: &[pb::schema::Attribute],
    config: &Value,
    indent: usize,
) {
    let mut attrs: Vec<&pb::schema::Attribute> = attrs.iter().collect();
    attrs.sort_by(|a, b| a.name.cmp(&b.name));
    let pad = " ".repeat(indent);
    for a in attrs {
        let value = config.attr(&a.name);
        if (a.computed && value.is_null()) || a.deprecated {
            continue;
        }
        let name = &a.name;
        let nested = a.nested_type.as_ref().filter(|_| !value.is_null());
        let Some(nested) = nested else {
            let written = if a.sensitive {
                "null # sensitive".to_string()
            } else {
                hcl_value(value)
            };
            out.push_str(&format!("{pad}{name} = {written}\n"));
            continue;
        };
        use pb::schema::object::NestingMode;
        match NestingMode::try_from(nested.nesting).unwrap() {
            NestingMode::Single => {
                out.push_str(&format!("{pad}{name} = {{\n"));
                write_attributes(out, &nested.attributes, value, indent + 2);
                out.push_str(&format!("{pad}}}\n"));
            }
            NestingMode::List | NestingMode::Set => {
                let (Value::List(items) | Value::Set(items)) = value else {
                    panic!("{name}: {value:?} is not a collection")
                };
                out.push_str(&format!("{pad}{name} = [\n"));
                for item in items {
                    out.push_str(&format!("{pad}  {{\n"));
                    write_attributes(out, &nested.attributes, item, indent + 4);
                    out.push_str(&format!("{pad}  }},\n"));
                }
                out.push_str(&format!("{pad}]\n"));
            }
            NestingMode::Map => {
                let Value::Map(items) = value else {
                    panic!("{name}: {value:?} is not a map")
                };
                out.push_str(&format!("{pad}{name} = {{\n"));
                for (key, item) in items {
                    out.push_str(&format!("{pad}  {} = {{\n", hcl_string(key)));
                    write_attributes(out, &nested.attributes, item, indent + 4);
                    out.push_str(&format!("{pad}  }}\n"));
                }
                out.push_str(&format!("{pad}}}\n"));
            }
            NestingMode::Invalid => panic!("{name}: invalid nesting"),
        }
    }
}

/// A listed object as `terraform query -generate-config-out` writes it
/// (internal/genconfig, GenerateListResourceContents): the resource block,
/// then the import block with its identity, every identity attribute
/// written, null or not.
fn generated_config(
    type_name: &str,
    name: &str,
    schema: &pb::Schema,
    identity_schema: &pb::ResourceIdentitySchema,
    state: &Value,
    identity: &Value,
) -> String {
    let attrs = &schema.block.as_ref().unwrap().attributes;
    let mut out = format!("resource \"{type_name}\" \"{name}\" {{\n  provider = gpufleet\n");
    write_attributes(&mut out, attrs, &legacy_config(attrs, state, true), 2);
    out.push_str(&format!(
        "}}\n\nimport {{\n  to       = {type_name}.{name}\n  provider = gpufleet\n  identity = {{\n"
    ));
    let mut names: Vec<&str> = identity_schema
        .identity_attributes
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    names.sort();
    for attr in names {
        out.push_str(&format!(
            "    {attr} = {}\n",
            hcl_value(identity.attr(attr))
        ));
    }
    out.push_str("  }\n}\n\n");
    out
}

/// The NodePools a platform team wrote by hand, all labelled for `run`:
/// the six of tests/node_pools, and fourteen variations of them (a node
/// label, a NodePool annotation or one more taint).
fn hand_written_node_pools(run: &str) -> Vec<serde_json::Value> {
    const FIXTURES: &[&str] = &[
        "gpu-training",
        "inference",
        "cpu-general",
        "static",
        "azure-a100",
        "spot-mixed-gpu",
    ];
    (0..20)
        .map(|i| {
            let file = FIXTURES[i % FIXTURES.len()];
            let path = common::repo_root().join(format!("tests/node_pools/{file}.yaml"));
            let yaml = std::fs::read_to_string(&path).unwrap();
            let name = format!("{run}-{i:02}-{file}");
            let mut pool: serde_json::Value =
                serde_saphyr::from_str(&yaml.replace("__NAME__", &name)).unwrap();
            let metadata = &mut pool["metadata"];
            metadata["labels"][LISTED_BY] = serde_json::json!(run);
            let variant = format!("v{i}");
            match i / FIXTURES.len() {
                0 => {}
                1 => {
                    pool["spec"]["template"]["metadata"]["labels"]["example.com/variant"] =
                        serde_json::json!(variant)
                }
                2 => pool["metadata"]["annotations"]["example.com/variant"] =
                    serde_json::json!(variant),
                _ => {
                    let taints = &mut pool["spec"]["template"]["spec"]["taints"];
                    if taints.is_null() {
                        *taints = serde_json::json!([]);
                    }
                    taints.as_array_mut().unwrap().push(serde_json::json!(
                        {"key": "example.com/variant", "value": variant, "effect": "PreferNoSchedule"}
                    ));
                }
            }
            pool
        })
        .collect()
}

fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: value.map(Into::into),
        effect: effect.into(),
        time_added: None,
    }
}

/// What an adoption test lists of one type: the listed objects' events
/// and the schemas to write their configuration with.
struct Listed {
    type_name: &'static str,
    events: Vec<pb::list_resource::Event>,
    schema: pb::Schema,
    identity_schema: pb::ResourceIdentitySchema,
}

/// `terraform query -generate-config-out` over a cluster of hand-written
/// objects, its calls made as Terraform 1.14 makes them (see
/// [`list_resource_as_terraform_query_calls_it`]): 20 NodePools
/// (tests/node_pools' and variations), 5 PriorityClasses, 3 nodes with
/// workload taints and, when Kueue runs, a ClusterQueue with a LocalQueue
/// in each of its two namespaces come back exactly once each, with their
/// identity and object; configuration written from each object as Terraform's generator
/// writes it imports by that identity with the real CLIs, and the plan
/// after the import is empty. A fleet and a class gpufleet applied are
/// listed too, except with `only_unmanaged`; a node with only system
/// taints, or none, is not.
#[test]
fn list_resources_adopt_a_hand_written_cluster() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let kubeconfig = common::provider_kubeconfig();
    let run = common::unique_name("adopt");
    let selector = format!("{LISTED_BY}={run}");
    let labelled = format!("  node_pool_labels = {{ \"{LISTED_BY}\" = \"{run}\" }}\n");

    let pools = hand_written_node_pools(&run);
    let pool_names: Vec<String> = pools
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let applied_name = format!("{run}-applied");
    let mut pool_guard = Guard::node_pools(&[]);
    let class_names: Vec<String> = (1..=5).map(|i| format!("{run}-class-{i}")).collect();
    let mut class_guard = Guard::of::<PriorityClass>(&[]);
    let mut node_guard = Guard::of::<Node>(&[]);
    let node_taints = [
        (
            "gpu",
            vec![taint("nvidia.com/gpu", Some("present"), "NoSchedule")],
        ),
        (
            "two-effects",
            vec![
                taint("nvidia.com/gpu", Some("present"), "NoSchedule"),
                taint("nvidia.com/gpu", None, "NoExecute"),
                taint("karpenter.sh/disrupted", None, "NoSchedule"),
            ],
        ),
        ("team", vec![taint("team", Some("ml"), "PreferNoSchedule")]),
        (
            "system",
            vec![taint("karpenter.sh/disrupted", None, "NoSchedule")],
        ),
        ("untainted", vec![]),
    ];
    let node_names: Vec<String> = node_taints
        .iter()
        .map(|(what, _)| format!("{run}-{what}"))
        .collect();
    let tainted_nodes = &node_names[..3];
    // A ClusterQueue as a team writes it for Kueue, with the LocalQueues of
    // its namespaces.
    let kueue = common::fixtures::kueue_running("adopting a hand-written ClusterQueue");
    let queue_names: Vec<String> = if kueue {
        vec![format!("{run}-queue")]
    } else {
        vec![]
    };
    let queue_namespaces = [format!("{run}-a"), format!("{run}-b")];
    let mut queue_guard = Guard::custom(kueue_kind("ClusterQueue", "clusterqueues"), &[]);
    let mut namespace_guard = Guard::of::<Namespace>(&[]);
    runtime.block_on(async {
        let client = common::kube_client().await;
        let pool_api = common::fixtures::node_pool_api().await;
        for (name, pool) in pool_names.iter().zip(&pools) {
            pool_guard.add(name);
            let pool: DynamicObject = serde_json::from_value(pool.clone()).unwrap();
            pool_api
                .create(&PostParams::default(), &pool)
                .await
                .unwrap();
        }
        let class_api = Api::<PriorityClass>::all(client.clone());
        for (i, name) in class_names.iter().enumerate() {
            class_guard.add(name);
            let class = PriorityClass {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.clone()),
                    labels: Some(BTreeMap::from([(LISTED_BY.to_string(), run.clone())])),
                    ..Default::default()
                },
                value: Some(100 * (i as i32 + 1)),
                preemption_policy: (i % 2 == 0).then(|| "Never".to_string()),
                description: (i != 1).then(|| format!("hand-written class {i}")),
                ..Default::default()
            };
            class_api
                .create(&PostParams::default(), &class)
                .await
                .unwrap();
        }
        let node_api = Api::<Node>::all(client);
        for (name, (_, taints)) in node_names.iter().zip(&node_taints) {
            node_guard.add(name);
            let node = Node {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.clone()),
                    labels: Some(BTreeMap::from([(LISTED_BY.to_string(), run.clone())])),
                    ..Default::default()
                },
                spec: Some(NodeSpec {
                    taints: Some(taints.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            };
            node_api
                .create(&PostParams::default(), &node)
                .await
                .unwrap();
        }
        for queue in &queue_names {
            let client = common::kube_client().await;
            let namespaces = Api::<Namespace>::all(client.clone());
            for namespace in &queue_namespaces {
                namespace_guard.add(namespace);
                let namespace: Namespace =
                    serde_json::from_value(serde_json::json!({"metadata": {"name": namespace}}))
                        .unwrap();
                namespaces
                    .create(&PostParams::default(), &namespace)
                    .await
                    .unwrap();
            }
            queue_guard.add(queue);
            let cluster_queue: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": queue, "labels": {LISTED_BY: run}},
                "spec": {
                    "cohortName": format!("{run}-cohort"),
                    "namespaceSelector": {"matchExpressions": [{
                        "key": "kubernetes.io/metadata.name",
                        "operator": "In",
                        "values": queue_namespaces,
                    }]},
                    "resourceGroups": [{
                        "coveredResources": ["nvidia.com/gpu", "cpu"],
                        "flavors": [{
                            "name": format!("{run}-h100"),
                            "resources": [
                                {"name": "nvidia.com/gpu", "nominalQuota": 16, "lendingLimit": "8"},
                                {"name": "cpu", "nominalQuota": "1.5"},
                            ],
                        }],
                    }],
                },
            }))
            .unwrap();
            Api::<DynamicObject>::all_with(
                client.clone(),
                &kueue_kind("ClusterQueue", "clusterqueues"),
            )
            .create(&PostParams::default(), &cluster_queue)
            .await
            .unwrap();
            for namespace in &queue_namespaces {
                let local_queue: DynamicObject = serde_json::from_value(serde_json::json!({
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": queue, "namespace": namespace},
                    "spec": {"clusterQueue": queue},
                }))
                .unwrap();
                Api::<DynamicObject>::namespaced_with(
                    client.clone(),
                    namespace,
                    &kueue_kind("LocalQueue", "localqueues"),
                )
                .create(&PostParams::default(), &local_queue)
                .await
                .unwrap();
            }
        }
    });
    // A fleet and a class that a Terraform state manages, carrying the
    // run's label.
    let cli = &common::terraform::clis()[0];
    let mut managed = Workspace::new(cli);
    pool_guard.add(&applied_name);
    class_guard.add(&applied_name);
    let class_labels = format!("  labels = {{ \"{LISTED_BY}\" = \"{run}\" }}\n");
    managed.config(
        &(fleet("applied", &applied_name, &(labelled + INFERENCE))
            + &class("applied", &applied_name, 10, &class_labels)),
    );
    managed.apply();

    let plugin = runtime.block_on(start_plugin());
    let (client, schema, listed) = runtime.block_on(async {
        let mut client = connect(&plugin, true).await.unwrap();
        let schema = client
            .get_provider_schema(pb::get_provider_schema::Request {})
            .await
            .unwrap()
            .into_inner();
        let identities = client
            .get_resource_identity_schemas(pb::get_resource_identity_schemas::Request {})
            .await
            .unwrap()
            .into_inner();
        let provider_type = block_type(schema.provider.as_ref().unwrap());
        let provider_config = object(
            &provider_type,
            &[("config_path", Value::string(&kubeconfig))],
        );
        let validated = client
            .validate_provider_config(pb::validate_provider_config::Request {
                config: dynamic(&provider_config, &provider_type),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(errors(&validated.diagnostics).is_empty());
        let list_config = |type_name: &str, only_unmanaged: Option<bool>| {
            let ty = block_type(&schema.list_resource_schemas[type_name]);
            let mut pairs = vec![("label_selector", Value::string(&selector))];
            if let Some(only) = only_unmanaged {
                pairs.push(("only_unmanaged", Value::Bool(only)));
            }
            dynamic(&object(&ty, &pairs), &ty)
        };
        let mut requests: Vec<(&'static str, Option<bool>)> = vec![
            (FLEET, Some(true)),
            (PRIORITY_CLASS, Some(true)),
            (NODE_TAINT, None),
        ];
        if kueue {
            requests.push((QUEUE, None));
        }
        for &(type_name, only_unmanaged) in &requests {
            let validated = client
                .validate_list_resource_config(pb::validate_list_resource_config::Request {
                    type_name: type_name.into(),
                    config: list_config(type_name, only_unmanaged),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            assert!(errors(&validated.diagnostics).is_empty(), "{type_name}");
            // A selector the API server would refuse fails at validation,
            // at its attribute inside the `list` block's `config`, from
            // which Terraform 1.14+ finds the line.
            let ty = block_type(&schema.list_resource_schemas[type_name]);
            let bad = object(&ty, &[("label_selector", Value::string("team in (ml"))]);
            let refused = client
                .validate_list_resource_config(pb::validate_list_resource_config::Request {
                    type_name: type_name.into(),
                    config: dynamic(&bad, &ty),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            let [error] = &refused.diagnostics[..] else {
                panic!("{type_name}: {:?}", refused.diagnostics)
            };
            assert_eq!(attribute_names(error), ["config", "label_selector"]);
            assert!(error.detail.contains("does not end with `)`"), "{error:?}");
        }
        let configured = client
            .configure_provider(pb::configure_provider::Request {
                terraform_version: "1.14.0".into(),
                config: dynamic(&provider_config, &provider_type),
                client_capabilities: None,
            })
            .await
            .unwrap()
            .into_inner();
        assert!(errors(&configured.diagnostics).is_empty());

        let list = |type_name: &str, only_unmanaged: Option<bool>| pb::list_resource::Request {
            type_name: type_name.into(),
            config: list_config(type_name, only_unmanaged),
            include_resource_object: true,
            limit: 100,
        };
        // The managed fleet and class are listed, unless only unmanaged
        // objects are asked for.
        for type_name in [FLEET, PRIORITY_CLASS] {
            let every = list_events(&client, list(type_name, Some(false))).await;
            assert!(
                every.iter().any(|e| e.display_name == applied_name),
                "{type_name}: the applied object is listed too"
            );
        }
        let expected: [(&str, &[String]); 4] = [
            (FLEET, &pool_names[..]),
            (PRIORITY_CLASS, &class_names[..]),
            (NODE_TAINT, tainted_nodes),
            (QUEUE, &queue_names[..]),
        ];
        let mut listed = Vec::new();
        for ((type_name, only_unmanaged), (_, names)) in requests.into_iter().zip(expected) {
            let identity_schema = identities.identity_schemas[type_name].clone();
            let identity_type = identity_type(&identity_schema);
            let events = list_events(&client, list(type_name, only_unmanaged)).await;
            let mut found: Vec<&str> = events.iter().map(|e| e.display_name.as_str()).collect();
            found.sort();
            let mut wanted: Vec<&str> = names.iter().map(String::as_str).collect();
            wanted.sort();
            assert_eq!(found, wanted, "{type_name}: each exactly once");
            for event in &events {
                assert!(
                    errors(&event.diagnostic).is_empty(),
                    "{:?}",
                    event.diagnostic
                );
                assert!(event.resource_object.is_some(), "{type_name}: no object");
                let identity = identity_value(event.identity.as_ref(), &identity_type);
                let expected = if type_name == NODE_TAINT {
                    object(
                        &identity_type,
                        &[("node_name", Value::string(&event.display_name))],
                    )
                } else {
                    object(
                        &identity_type,
                        &[("name", Value::string(&event.display_name))],
                    )
                };
                assert_eq!(identity, expected, "{type_name}: {}", event.display_name);
            }
            listed.push(Listed {
                type_name,
                events,
                schema: schema.resource_schemas[type_name].clone(),
                identity_schema,
            });
        }
        (client, schema, listed)
    });
    managed.destroy();

    let mut generated = String::new();
    let mut count = 0;
    for Listed {
        type_name,
        events,
        schema,
        identity_schema,
    } in &listed
    {
        let ty = block_type(schema);
        let identity_type = identity_type(identity_schema);
        for (i, event) in events.iter().enumerate() {
            let state =
                decode_msgpack(&event.resource_object.as_ref().unwrap().msgpack, &ty).unwrap();
            let identity = identity_value(event.identity.as_ref(), &identity_type);
            let name = format!("{}_{i}", type_name.trim_start_matches("gpufleet_"));
            generated +=
                &generated_config(type_name, &name, schema, identity_schema, &state, &identity);
            count += 1;
        }
    }
    assert_eq!(count, 28 + queue_names.len());
    common::terraform::each_identity_cli(|cli| {
        let mut adopted = Workspace::new(cli);
        adopted.config(&generated);
        adopted.init();
        let plan = adopted.run(&["plan", "-no-color", "-input=false"]);
        assert!(plan.success, "{}: {}{}", cli.name, plan.stdout, plan.stderr);
        let summary = format!("{count} to import, 0 to add, 0 to change, 0 to destroy");
        assert!(
            plan.stdout.contains(&summary),
            "{}: {}\n{generated}",
            cli.name,
            plan.stdout
        );
        adopted.apply();
        // The objects stay the guards' to delete.
        adopted.forget();
    });
    // An import, and an apply with nothing to change, leave no mark of
    // gpufleet: the adopted NodePools are still listed as unmanaged.
    let ty = block_type(&schema.list_resource_schemas[FLEET]);
    let config = object(
        &ty,
        &[
            ("label_selector", Value::string(&selector)),
            ("only_unmanaged", Value::Bool(true)),
        ],
    );
    let again = runtime.block_on(list_events(
        &client,
        pb::list_resource::Request {
            type_name: FLEET.into(),
            config: dynamic(&config, &ty),
            include_resource_object: false,
            limit: 100,
        },
    ));
    assert_eq!(again.len(), pool_names.len());
}

/// Puts `object` into the test cluster's etcd as the API server stores it
/// (JSON, under `/registry/<group>/<plural>/<name>`), through etcd's JSON
/// gateway: an object stored under an older schema of its CRD, which the
/// API server serves as stored (it validates writes, not reads). `false`
/// (a skip) when the cluster is not one testbed/cluster.sh runs.
fn store_in_etcd(key: &str, object: &serde_json::Value) -> bool {
    use base64::Engine;
    let dir = std::path::Path::new(&common::kubeconfig())
        .parent()
        .unwrap()
        .to_path_buf();
    let Some(port) = std::fs::read_to_string(dir.join("env"))
        .ok()
        .and_then(|env| {
            env.lines()
                .find_map(|l| l.strip_prefix("etcd_port=").map(str::to_string))
        })
    else {
        common::skipped(
            "an object stored in etcd",
            "the test cluster is not one testbed/cluster.sh runs",
        );
        return false;
    };
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let request = serde_json::json!({
        "key": b64(key.as_bytes()),
        "value": b64(object.to_string().as_bytes()),
    });
    let out = std::process::Command::new("curl")
        .args(["-sf", "--max-time", "10", "-X", "POST"])
        .arg(format!("http://127.0.0.1:{port}/v3/kv/put"))
        .args(["-d", &request.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "etcd put failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// One NodePool that does not parse as a fleet does not cost the list the
/// others. karpenter.sh/v1's CRD (Karpenter v1.15) admits nothing gpufleet's
/// parse refuses (every type and required field agree), so the NodePool is
/// one stored before its CRD required `nodeClassRef.group` (early
/// karpenter.sh/v1 schemas in Karpenter's history named the class by
/// `apiVersion`, `kind` and `name`): the API server serves it as stored. The fleet
/// list reports it in a warning naming it, first in the stream as
/// Terraform shows warnings, and lists the NodePools beside it.
#[tokio::test]
async fn a_node_pool_that_does_not_parse_is_a_warning_and_the_rest_are_listed() {
    let kubeconfig = common::provider_kubeconfig();
    let run = common::unique_name("unparsed");
    let selector = format!("{LISTED_BY}={run}");
    let pools: Vec<serde_json::Value> = hand_written_node_pools(&run).into_iter().take(2).collect();
    let good: Vec<String> = pools
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let old = format!("{run}-old-schema");
    let mut guard = Guard::node_pools(&[]);
    let api = common::fixtures::node_pool_api().await;
    for (name, pool) in good.iter().zip(&pools) {
        guard.add(name);
        let pool: DynamicObject = serde_json::from_value(pool.clone()).unwrap();
        api.create(&PostParams::default(), &pool).await.unwrap();
    }
    guard.add(&old);
    let stored = serde_json::json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {
            "name": old,
            "uid": "5d1c8a7e-3f4b-4c2a-9e61-0a7b2c9d4e10",
            "creationTimestamp": "2024-08-01T00:00:00Z",
            "labels": {LISTED_BY: run},
        },
        "spec": {
            "template": {"spec": {
                "nodeClassRef": {"kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            }},
            "disruption": {"consolidateAfter": "0s", "budgets": [{"nodes": "10%"}]},
        },
    });
    if !store_in_etcd(&format!("/registry/karpenter.sh/nodepools/{old}"), &stored) {
        return;
    }
    let started = std::time::Instant::now();
    while api.get_opt(&old).await.unwrap().is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the API server does not serve {old}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    let plugin = start_plugin().await;
    let mut tf = Terraform::new(&plugin).await;
    let schema = tf.provider_schema().await;
    let list_type = block_type(&schema.list_resource_schemas[FLEET]);
    assert_eq!(tf.configure(&kubeconfig).await, Vec::<String>::new());
    let config = object(&list_type, &[("label_selector", Value::string(&selector))]);
    let events = list_events(
        &tf.client,
        pb::list_resource::Request {
            type_name: FLEET.into(),
            config: dynamic(&config, &list_type),
            include_resource_object: true,
            limit: 100,
        },
    )
    .await;
    let (warning, listed) = events.split_first().expect("no events");
    let [diagnostic] = &warning.diagnostic[..] else {
        panic!("not one warning first: {events:?}")
    };
    assert_eq!(
        diagnostic.severity,
        pb::diagnostic::Severity::Warning as i32,
        "{diagnostic:?}"
    );
    assert!(warning.display_name.is_empty() && warning.identity.is_none());
    assert!(
        diagnostic.detail.contains(&format!("NodePool \"{old}\""))
            && diagnostic.detail.contains("missing field `group`"),
        "{diagnostic:?}"
    );
    let mut found: Vec<&str> = listed.iter().map(|e| e.display_name.as_str()).collect();
    found.sort();
    let mut wanted: Vec<&str> = good.iter().map(String::as_str).collect();
    wanted.sort();
    assert_eq!(found, wanted, "the other NodePools are listed");
    for event in listed {
        assert!(event.diagnostic.is_empty(), "{:?}", event.diagnostic);
        assert!(event.resource_object.is_some());
    }
}

/// A TCP front for the API server: until [`Front::answer`] it accepts every
/// connection and never answers (an API server that hangs); from then on it
/// forwards new connections to the real one.
struct Front {
    address: String,
    forwarding: Arc<std::sync::atomic::AtomicBool>,
    held: Arc<std::sync::Mutex<Vec<TcpStream>>>,
}

impl Front {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front = Front {
            address: listener.local_addr().unwrap().to_string(),
            forwarding: Default::default(),
            held: Default::default(),
        };
        let (forwarding, held) = (front.forwarding.clone(), front.held.clone());
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                if !forwarding.load(std::sync::atomic::Ordering::SeqCst) {
                    held.lock().unwrap().push(conn);
                    continue;
                }
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let mut api = TcpStream::connect(&upstream).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut conn, &mut api).await;
                });
            }
        });
        front
    }

    /// Forwards from now on; the connections held so far are closed.
    fn answer(&self) {
        self.forwarding
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.held.lock().unwrap().clear();
    }
}

/// A read against an API server that accepts connections and never answers
/// hangs; StopProvider must cut it short with a diagnostic, and the same
/// plugin process must then serve a new read against the API server.
#[tokio::test]
async fn stop_provider_cancels_work_in_flight() {
    // A class to read, made behind the provider's back.
    let name = common::unique_name("pc-stop");
    let _guard = Guard::of::<PriorityClass>(&[&name]);
    let class = PriorityClass {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        value: Some(77),
        ..Default::default()
    };
    Api::<PriorityClass>::all(common::kube_client().await)
        .create(&PostParams::default(), &class)
        .await
        .unwrap();

    // The plugin's kubeconfig is the cluster's, with the front as its server.
    let kubeconfig_text = std::fs::read_to_string(common::kubeconfig()).unwrap();
    let parsed = kube::config::Kubeconfig::from_yaml(&kubeconfig_text).unwrap();
    let server = parsed.clusters[0]
        .cluster
        .as_ref()
        .and_then(|c| c.server.clone())
        .unwrap();
    let upstream = server.strip_prefix("https://").unwrap().to_string();
    let front = Front::start(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        kubeconfig_text.replace(&server, &format!("https://{}", front.address)),
    )
    .unwrap();

    let plugin = start_plugin().await;
    let mut tf = Terraform::new(&plugin).await;
    assert!(tf.configure(kubeconfig.to_str().unwrap()).await.is_empty());
    let ty = tf.class_type.clone();
    let state = object(
        &ty,
        &[
            ("id", Value::string(&name)),
            ("name", Value::string(&name)),
            ("value", Value::int(77)),
        ],
    );

    let mut reader = tf.client.clone();
    let (hanging_state, hanging_ty) = (state.clone(), ty.clone());
    let read = tokio::spawn(async move {
        reader
            .read_resource(pb::read_resource::Request {
                type_name: PRIORITY_CLASS.into(),
                current_state: dynamic(&hanging_state, &hanging_ty),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !read.is_finished(),
        "the read should still be waiting on the silent server"
    );
    let stopped = std::time::Instant::now();
    tf.client
        .stop_provider(pb::stop_provider::Request {})
        .await
        .unwrap();
    let response = tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .expect("StopProvider did not cancel the read")
        .unwrap();
    assert!(stopped.elapsed() < std::time::Duration::from_secs(2));
    let errs = errors(&response.diagnostics);
    assert!(
        errs.iter().any(|e| e.contains("Operation cancelled")),
        "{errs:?}"
    );
    // The prior state is handed back: nothing Terraform knew is lost.
    let handed_back = decode_msgpack(&response.new_state.unwrap().msgpack, &ty).unwrap();
    assert_eq!(handed_back, state);

    // The API server answers now: a new read on the same plugin process,
    // through the same cancellable path, reaches it and reads the class.
    front.answer();
    let read_again = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tf.read(&state, Vec::new(), &Value::Null),
    )
    .await
    .expect("the read after StopProvider hung");
    let (after_stop, errs) = (read_again.state, read_again.errors);
    assert!(
        errs.is_empty(),
        "the read after StopProvider failed: {errs:?}"
    );
    assert_eq!(after_stop.attr("id"), &Value::string(&name));
    assert_eq!(after_stop.attr("value").as_i64(), Some(77));
    assert_eq!(
        after_stop.attr("preemption_policy"),
        &Value::string("PreemptLowerPriority"),
        "not read from the API server"
    );
}
