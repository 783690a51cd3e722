//! Least privilege and secrets, against the real API server.
//!
//! `docs/rbac.yaml` holds exactly what gpufleet needs: `make test` runs the
//! whole acceptance suite with the provider bound only to it (see
//! `common::provider_kubeconfig`), and here every verb of every rule is
//! taken away in turn: some operation must then fail (or, for what a plan
//! only checks, warn), naming the verb, the resource and the rule that is
//! missing. A full apply with a token, a client
//! key and an exec credential plugin, logged at `TF_LOG=trace`, shows none of
//! the three.

use std::collections::BTreeMap;
use std::path::Path;

use common::fixtures::{
    class, cluster_policies, first_cluster_policy_name, helm_cluster_policy, live_priority_class,
};
use common::terraform::{Cli, PROVIDER_VERSION, Workspace, each_cli};
use common::{block_on, kube_client, unique_name};
use gpufleet::framework::FrameworkProvider;
use gpufleet::framework::plan::proposed;
use gpufleet::kit::permissions::{Rule, Scope, rules};
use gpufleet::protocol::codec::from_json;
use gpufleet::protocol::diagnostics::Severity;
use gpufleet::protocol::provider::{ApplyRequest, ListRequest, PlanRequest, Provider, ReadRequest};
use gpufleet::protocol::{Diagnostics, Value};
use gpufleet::provider::{Gpufleet, RBAC_OPERATOR_NAMESPACE, permissions};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// The namespace a Role of `scope` goes in; `None` for the ClusterRole.
fn namespace_of(scope: Scope) -> Option<&'static str> {
    match scope {
        Scope::Cluster => None,
        Scope::OperatorNamespace => Some(RBAC_OPERATOR_NAMESPACE),
        Scope::Namespace(namespace) => Some(namespace),
    }
}

/// A role with `rules`, bound to `user`, removed again when dropped.
struct Grant {
    name: String,
    namespaces: Vec<String>,
}

impl Grant {
    async fn new(user: &str, rules: &[Rule]) -> Self {
        let client = kube_client().await;
        let name = user.to_string();
        let policy = |scope: Scope| -> Vec<PolicyRule> {
            rules
                .iter()
                .filter(|r| r.scope == scope && !r.verbs.is_empty())
                .map(|r| PolicyRule {
                    api_groups: Some(vec![r.group.clone()]),
                    resources: Some(vec![r.resource.clone()]),
                    resource_names: Some(r.resource_names.clone()).filter(|n| !n.is_empty()),
                    verbs: r.verbs.clone(),
                    ..Default::default()
                })
                .collect()
        };
        let meta = |namespace: Option<&str>| ObjectMeta {
            name: Some(name.clone()),
            namespace: namespace.map(str::to_string),
            ..Default::default()
        };
        let subjects = Some(vec![Subject {
            kind: "User".into(),
            name: user.into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Default::default()
        }]);
        let role_ref = |kind: &str| RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: kind.into(),
            name: name.clone(),
        };
        let pp = PostParams::default();
        Api::<ClusterRole>::all(client.clone())
            .create(
                &pp,
                &ClusterRole {
                    metadata: meta(None),
                    rules: Some(policy(Scope::Cluster)),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        Api::<ClusterRoleBinding>::all(client.clone())
            .create(
                &pp,
                &ClusterRoleBinding {
                    metadata: meta(None),
                    role_ref: role_ref("ClusterRole"),
                    subjects: subjects.clone(),
                },
            )
            .await
            .unwrap();
        let mut namespaces = Vec::new();
        for rule in rules {
            let Some(ns) = namespace_of(rule.scope) else {
                continue;
            };
            if namespaces.iter().any(|n| n == ns) {
                continue;
            }
            Api::<Role>::namespaced(client.clone(), ns)
                .create(
                    &pp,
                    &Role {
                        metadata: meta(Some(ns)),
                        rules: Some(policy(rule.scope)),
                    },
                )
                .await
                .unwrap();
            Api::<RoleBinding>::namespaced(client.clone(), ns)
                .create(
                    &pp,
                    &RoleBinding {
                        metadata: meta(Some(ns)),
                        role_ref: role_ref("Role"),
                        subjects: subjects.clone(),
                    },
                )
                .await
                .unwrap();
            namespaces.push(ns.to_string());
        }
        let grant = Self { name, namespaces };
        grant.await_effect(user, rules).await;
        grant
    }

    /// RBAC takes effect once the API server's caches have the new role
    /// and binding: asks until it allows the first granted verb.
    async fn await_effect(&self, user: &str, rules: &[Rule]) {
        let Some(rule) = rules.iter().find(|r| !r.verbs.is_empty()) else {
            return;
        };
        let reviews = Api::<SubjectAccessReview>::all(kube_client().await);
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.into()),
                resource_attributes: Some(ResourceAttributes {
                    group: Some(rule.group.clone()),
                    resource: Some(rule.resource.clone()),
                    verb: Some(rule.verbs[0].clone()),
                    namespace: namespace_of(rule.scope).map(str::to_string),
                    name: rule.resource_names.first().cloned(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        for _ in 0..100 {
            let answer = reviews
                .create(&PostParams::default(), &review)
                .await
                .unwrap();
            if answer.status.is_some_and(|s| s.allowed) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("RBAC did not allow {user} what its role grants within 5s");
    }
}

impl Drop for Grant {
    /// On a thread of its own: grants are dropped inside the tests' async
    /// blocks, where no runtime can be started.
    fn drop(&mut self) {
        let (name, namespaces) = (self.name.clone(), self.namespaces.clone());
        let cleanup = move || {
            block_on(async move {
                let client = kube_client().await;
                let dp = DeleteParams::default();
                let _ = Api::<ClusterRoleBinding>::all(client.clone())
                    .delete(&name, &dp)
                    .await;
                let _ = Api::<ClusterRole>::all(client.clone())
                    .delete(&name, &dp)
                    .await;
                for ns in namespaces {
                    let _ = Api::<RoleBinding>::namespaced(client.clone(), &ns)
                        .delete(&name, &dp)
                        .await;
                    let _ = Api::<Role>::namespaced(client.clone(), &ns)
                        .delete(&name, &dp)
                        .await;
                }
            })
        };
        let _ = std::thread::spawn(cleanup).join();
    }
}

/// The admin kubeconfig impersonating `user`: requests are authorized as
/// that user, whose only rights are the roles a test binds to it.
fn impersonating(dir: &Path, user: &str) -> String {
    let mut kubeconfig = kube::config::Kubeconfig::read_from(common::kubeconfig()).unwrap();
    let current = kubeconfig.current_context.clone().unwrap();
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == current)
        .unwrap();
    let user_name = context.context.as_ref().unwrap().user.clone().unwrap();
    let auth = kubeconfig
        .auth_infos
        .iter_mut()
        .find(|a| a.name == user_name)
        .unwrap();
    auth.auth_info.as_mut().unwrap().impersonate = Some(user.to_string());
    let path = dir.join(format!("{user}.kubeconfig"));
    // JSON is YAML, and kube writes the key data back as it read it.
    std::fs::write(&path, serde_json::to_string(&kubeconfig).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

/// A node for the taint workouts, deleted when dropped.
struct TestNode {
    name: String,
    pool: String,
}

impl TestNode {
    fn new() -> Self {
        let name = unique_name("lp-node");
        let pool = unique_name("lp-pool");
        block_on(async {
            let node: Node = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {"gpufleet.test/lp-pool": pool}},
            }))
            .unwrap();
            Api::<Node>::all(kube_client().await)
                .create(&PostParams::default(), &node)
                .await
                .unwrap();
        });
        Self { name, pool }
    }
}

impl Drop for TestNode {
    fn drop(&mut self) {
        let name = self.name.clone();
        block_on(async move {
            let _ = Api::<Node>::all(kube_client().await)
                .delete(&name, &DeleteParams::default())
                .await;
        });
    }
}

/// What the sharing resources find of the GPU Operator: its ClusterPolicy,
/// and a device-plugin DaemonSet with a pod on the test node, so that
/// pointing the policy and restarting the plugin make their calls. The
/// DaemonSet runs no pods of its own (its node selector matches nothing);
/// the pod belongs to the node (so the DaemonSet does not adopt it) and,
/// with no kubelet there, stays listed while it terminates.
struct Operator {
    policy: String,
    /// The cluster's one ClusterPolicy, held until the Drop above has
    /// deleted it (fields drop after it).
    _only_policy: std::sync::RwLockWriteGuard<'static, ()>,
}

const DEVICE_PLUGIN_APP: &str = "gpufleet-lp-device-plugin";

impl Operator {
    fn new(node: &TestNode) -> Self {
        let only_policy = common::exclusive::own_cluster_policy();
        // The one that counts, beside one the cluster may hold already.
        let policy = first_cluster_policy_name();
        block_on(async {
            let client = kube_client().await;
            let ns = RBAC_OPERATOR_NAMESPACE;
            let pp = PostParams::default();
            // What a run that aborted may have left.
            let _ = Api::<DaemonSet>::namespaced(client.clone(), ns)
                .delete("nvidia-device-plugin-daemonset", &DeleteParams::default())
                .await;
            let _ = Api::<Pod>::namespaced(client.clone(), ns)
                .delete("lp-device-plugin", &DeleteParams::default().grace_period(0))
                .await;
            create_policy(&client, &policy).await;
            let daemon_set: DaemonSet = serde_json::from_value(json!({
                "metadata": {"name": "nvidia-device-plugin-daemonset"},
                "spec": {
                    "selector": {"matchLabels": {"app": DEVICE_PLUGIN_APP}},
                    "template": {
                        "metadata": {"labels": {"app": DEVICE_PLUGIN_APP}},
                        "spec": {
                            "nodeSelector": {"gpufleet.test/no-such-node": "true"},
                            "containers": [{"name": "plugin", "image": "nvidia/k8s-device-plugin"}],
                        },
                    },
                },
            }))
            .unwrap();
            Api::<DaemonSet>::namespaced(client.clone(), ns)
                .create(&pp, &daemon_set)
                .await
                .unwrap();
            let uid = Api::<Node>::all(client.clone())
                .get(&node.name)
                .await
                .unwrap()
                .metadata
                .uid;
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {
                    "name": "lp-device-plugin",
                    "labels": {"app": DEVICE_PLUGIN_APP},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": uid, "controller": true}],
                },
                "spec": {
                    "nodeName": node.name,
                    "containers": [{"name": "plugin", "image": "nvidia/k8s-device-plugin"}],
                },
            }))
            .unwrap();
            Api::<Pod>::namespaced(client, ns)
                .create(&pp, &pod)
                .await
                .unwrap();
        });
        Self {
            policy,
            _only_policy: only_policy,
        }
    }
}

/// The test's ClusterPolicy, made as `helm install` of the operator's chart
/// makes it (a creator other than gpufleet owns its fields).
async fn create_policy(client: &kube::Client, name: &str) {
    common::helm::install_cluster_policy(client, &helm_cluster_policy(name, None)).await;
}

/// Points the test's ClusterPolicy (the first by name, as gpufleet takes
/// it) at gpufleet's ConfigMap, as `--set devicePlugin.config.name=...`
/// would, or at none: a fleet's or node sharing's sharing that no device
/// plugin reads is refused, while gpufleet_gpu_sharing, which points it
/// itself, deletes the ConfigMap on destroy only once nothing reads it.
async fn point_policy_at_config_map(reads: bool) {
    let client = kube_client().await;
    let policies = cluster_policies(&client);
    let name = common::fixtures::cluster_policy_names(&client)
        .await
        .into_iter()
        .min()
        .unwrap();
    let config = if reads {
        json!({"name": "gpufleet-device-plugin"})
    } else {
        serde_json::Value::Null
    };
    let patch = json!({"spec": {"devicePlugin": {"config": config}}});
    policies
        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

/// The ClusterPolicy made again: a workout that failed half-way (on
/// purpose, for want of a rule) left gpufleet holding fields its state,
/// gone with it, would have given back.
async fn recreate_policy(name: &str) {
    let client = kube_client().await;
    cluster_policies(&client)
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    create_policy(&client, name).await;
}

impl Drop for Operator {
    fn drop(&mut self) {
        let policy = self.policy.clone();
        block_on(async move {
            let client = kube_client().await;
            let ns = RBAC_OPERATOR_NAMESPACE;
            let _ = cluster_policies(&client)
                .delete(&policy, &DeleteParams::default())
                .await;
            let _ = Api::<DaemonSet>::namespaced(client.clone(), ns)
                .delete("nvidia-device-plugin-daemonset", &DeleteParams::default())
                .await;
            let _ = Api::<Pod>::namespaced(client, ns)
                .delete("lp-device-plugin", &DeleteParams::default().grace_period(0))
                .await;
        });
    }
}

/// A configuration to create a resource with and one to update it to, so
/// that a lifecycle makes every call the resource can make.
struct Workout {
    type_name: &'static str,
    create: serde_json::Value,
    update: serde_json::Value,
}

/// One workout per resource type that declares permissions, with names of
/// their own (`tag`).
fn workouts(tag: &str, node: &str, pool: &str) -> Vec<Workout> {
    let class_name = format!("lp-class-{tag}");
    let fleet_name = format!("lp-fleet-{tag}");
    let taint =
        |key: &str, value: &str| json!([{"key": key, "value": value, "effect": "NoSchedule"}]);
    let node_class =
        json!({"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"});
    // The plain fleet's plan reads an EC2NodeClass (the testbed installs
    // its CRD; none need exist), the shared fleet's a KWOKNodeClass.
    let ec2_class =
        json!({"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"});
    vec![
        Workout {
            type_name: "gpufleet_priority_class",
            // Fenced: its admission policy and binding are written too.
            create: json!({"name": class_name, "value": 5, "allowed_namespaces": ["lp-allowed"]}),
            update: json!({"name": class_name, "value": 5, "allowed_namespaces": ["lp-allowed"], "description": "updated"}),
        },
        Workout {
            type_name: "gpufleet_fleet",
            create: json!({"name": fleet_name, "node_class": ec2_class, "accelerators": ["L4"]}),
            update: json!({"name": fleet_name, "node_class": ec2_class, "accelerators": ["L4"], "weight": 10}),
        },
        Workout {
            type_name: "gpufleet_fleet",
            create: json!({"name": format!("{fleet_name}-shared"), "node_class": node_class, "accelerators": ["L4"], "accelerator_count": {"min": 1, "max": 2},
                "gpu_sharing": {"strategy": "time_slicing", "replicas": 2}}),
            update: json!({"name": format!("{fleet_name}-shared"), "node_class": node_class, "accelerators": ["L4"], "accelerator_count": {"min": 1, "max": 2},
                "gpu_sharing": {"strategy": "time_slicing", "replicas": 4}}),
        },
        // The fleet as a Kueue flavor, and a queue (on a fleet that is not
        // there: Kueue takes the ClusterQueue, inactive) serving `default`.
        Workout {
            type_name: "gpufleet_fleet",
            create: json!({"name": format!("{fleet_name}-kueue"), "node_class": node_class, "accelerators": ["L4"], "kueue_flavor": true}),
            update: json!({"name": format!("{fleet_name}-kueue"), "node_class": node_class, "accelerators": ["L4"], "kueue_flavor": true,
                "taints": taint("gpufleet.test/lp", "kueue")}),
        },
        Workout {
            type_name: "gpufleet_queue",
            create: json!({"name": format!("lp-queue-{tag}"), "namespaces": ["default"],
                "quotas": [{"fleet": format!("{fleet_name}-kueue"), "gpu_resource": "nvidia.com/gpu", "gpus": 8}]}),
            update: json!({"name": format!("lp-queue-{tag}"), "namespaces": ["default"],
                "quotas": [{"fleet": format!("{fleet_name}-kueue"), "gpu_resource": "nvidia.com/gpu", "gpus": 16}]}),
        },
        Workout {
            type_name: "gpufleet_gpu_sharing",
            create: json!({"strategy": "time_slicing", "replicas": 2}),
            update: json!({"strategy": "time_slicing", "replicas": 4}),
        },
        Workout {
            type_name: "gpufleet_node_sharing",
            create: json!({"name": format!("lp-{tag}"), "node_name": node, "strategy": "time_slicing", "replicas": 2}),
            update: json!({"name": format!("lp-{tag}"), "node_name": node, "strategy": "time_slicing", "replicas": 4}),
        },
        Workout {
            type_name: "gpufleet_node_sharing",
            create: json!({"name": format!("lp-sel-{tag}"), "node_selector": {"gpufleet.test/lp-pool": pool}, "strategy": "time_slicing", "replicas": 2}),
            update: json!({"name": format!("lp-sel-{tag}"), "node_selector": {"gpufleet.test/lp-pool": pool}, "strategy": "time_slicing", "replicas": 4}),
        },
        Workout {
            type_name: "gpufleet_node_join",
            create: json!({"token_id": token_id(tag), "ttl": "1h", "rotate_when_expires_within": "10m", "manage_bootstrap_rbac": true}),
            update: json!({"token_id": token_id(tag), "ttl": "1h", "rotate_when_expires_within": "10m", "manage_bootstrap_rbac": true, "labels": {"team": "ml"}}),
        },
        Workout {
            type_name: "gpufleet_node_taint",
            create: json!({"node_name": node, "taints": taint(&format!("gpufleet.test/lp-{tag}"), "a")}),
            update: json!({"node_name": node, "taints": taint(&format!("gpufleet.test/lp-{tag}"), "b")}),
        },
        Workout {
            type_name: "gpufleet_node_taint",
            create: json!({"node_selector": {"gpufleet.test/lp-pool": pool}, "taints": taint(&format!("gpufleet.test/lp-sel-{tag}"), "a")}),
            update: json!({"node_selector": {"gpufleet.test/lp-pool": pool}, "taints": taint(&format!("gpufleet.test/lp-sel-{tag}"), "b")}),
        },
    ]
}

/// The node join workout's token id, fixed per tag so a half-done workout's
/// Secret can be found and removed.
fn token_id(tag: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (tag, std::process::id()).hash(&mut hasher);
    format!("{:06x}", hasher.finish() & 0xff_ffff)
}

/// What a denial is called: an error where it stops an operation, a
/// warning where it only keeps a plan from checking something (the node
/// class a fleet names).
const DENIED: &str = "Permission denied by Kubernetes";

fn errors(diagnostics: &Diagnostics) -> Result<(), Diagnostics> {
    if diagnostics
        .0
        .iter()
        .any(|d| d.severity == Severity::Error || d.summary == DENIED)
    {
        Err(diagnostics.clone())
    } else {
        Ok(())
    }
}

/// Create, read, update and destroy, the way Terraform drives the provider.
async fn lifecycle(
    provider: &FrameworkProvider<Gpufleet>,
    workout: &Workout,
) -> Result<(), Diagnostics> {
    let schema = provider
        .object_schemas()
        .find(|(name, _)| name == workout.type_name)
        .map(|(_, schema)| schema.clone())
        .unwrap();
    let ty = schema.value_type();
    let type_name = workout.type_name.to_string();
    let change = |prior: Value, config: Value, private: Vec<u8>| {
        let type_name = type_name.clone();
        let attrs = schema.attrs.clone();
        async move {
            let plan = provider
                .plan_resource_change(PlanRequest {
                    type_name: type_name.clone(),
                    proposed_new_state: if config.is_null() {
                        Value::Null
                    } else {
                        proposed(&attrs, &prior, &config)
                    },
                    prior_state: prior.clone(),
                    config: config.clone(),
                    prior_private: private,
                })
                .await;
            errors(&plan.diagnostics)?;
            let applied = provider
                .apply_resource_change(ApplyRequest {
                    type_name,
                    prior_state: prior,
                    planned_state: plan.planned_state,
                    config,
                    planned_private: plan.planned_private,
                })
                .await;
            errors(&applied.diagnostics)?;
            Ok::<_, Diagnostics>((applied.state, applied.private))
        }
    };
    let create = from_json(&workout.create, &ty).unwrap();
    let update = from_json(&workout.update, &ty).unwrap();
    let (state, private) = change(Value::Null, create, Vec::new()).await?;
    let read = provider
        .read_resource(ReadRequest {
            type_name: type_name.clone(),
            current_state: state,
            private,
        })
        .await;
    errors(&read.diagnostics)?;
    // A listable type is listed too (ListResource, as `terraform query` does).
    let list_schema = provider
        .resources()
        .find(|(name, _)| *name == workout.type_name)
        .and_then(|(_, r)| r.list_schema().cloned());
    if let Some(list_schema) = list_schema {
        let (_, diagnostics) = provider
            .list_resource(ListRequest {
                type_name: type_name.clone(),
                config: from_json(&json!({}), &list_schema.value_type()).unwrap(),
            })
            .await;
        errors(&diagnostics)?;
    }
    let (state, private) = change(read.state, update, read.private).await?;
    let (gone, _) = change(state, Value::Null, private).await?;
    assert!(
        gone.is_null(),
        "{}: destroy left a state",
        workout.type_name
    );
    Ok(())
}

/// Runs every workout as `user` until one fails.
async fn workouts_as(
    dir: &Path,
    user: &str,
    node: &TestNode,
    tag: &str,
) -> Result<(), Diagnostics> {
    let provider = FrameworkProvider::new(Gpufleet);
    let config_type = provider
        .object_schemas()
        .find(|(name, _)| name == "provider")
        .map(|(_, schema)| schema.value_type())
        .unwrap();
    let config = from_json(
        &json!({"config_path": impersonating(dir, user)}),
        &config_type,
    )
    .unwrap();
    errors(&provider.configure(config, "test").await)?;
    for workout in workouts(tag, &node.name, &node.pool) {
        let shares = workout.create["gpu_sharing"].is_object()
            || workout.type_name == "gpufleet_node_sharing";
        point_policy_at_config_map(shares).await;
        lifecycle(&provider, &workout).await?;
    }
    Ok(())
}

/// Removes what a workout that failed half-way may have left.
async fn clean_up(tag: &str) {
    let client = kube_client().await;
    let _ = Api::<k8s_openapi::api::scheduling::v1::PriorityClass>::all(client.clone())
        .delete(&format!("lp-class-{tag}"), &DeleteParams::default())
        .await;
    // The class's admission policy and binding.
    for (kind, plural) in [
        (
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
        ),
        ("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
    ] {
        let resource = kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
            plural,
        );
        let _ = Api::<kube::api::DynamicObject>::all_with(client.clone(), &resource)
            .delete(
                &format!("gpufleet-class-lp-class-{tag}"),
                &DeleteParams::default(),
            )
            .await;
    }
    // A half-done Kueue workout's queue (no workload holds it) and flavor.
    let kueue = |kind: &str, plural: &str| {
        kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind),
            plural,
        )
    };
    let queue = format!("lp-queue-{tag}");
    let _ = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        "default",
        &kueue("LocalQueue", "localqueues"),
    )
    .delete(&queue, &DeleteParams::default())
    .await;
    let _ = Api::<kube::api::DynamicObject>::all_with(
        client.clone(),
        &kueue("ClusterQueue", "clusterqueues"),
    )
    .delete(&queue, &DeleteParams::default())
    .await;
    let _ = Api::<kube::api::DynamicObject>::all_with(
        client.clone(),
        &kueue("ResourceFlavor", "resourceflavors"),
    )
    .delete(&format!("lp-fleet-{tag}-kueue"), &DeleteParams::default())
    .await;
    for fleet in [
        format!("lp-fleet-{tag}"),
        format!("lp-fleet-{tag}-shared"),
        format!("lp-fleet-{tag}-kueue"),
    ] {
        let _ = common::fixtures::node_pool_api()
            .await
            .delete(&fleet, &DeleteParams::default())
            .await;
    }
    let _ = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), "kube-system")
        .delete(
            &format!("bootstrap-token-{}", token_id(tag)),
            &DeleteParams::default(),
        )
        .await;
    // What a half-done node join workout set up for its token's group.
    let group = "system:bootstrappers:gpufleet";
    for name in [
        format!("gpufleet:kubelet-bootstrap:{group}"),
        format!("gpufleet:node-autoapprove-bootstrap:{group}"),
        "gpufleet:node-autoapprove-certificate-rotation".to_string(),
    ] {
        let _ = Api::<ClusterRoleBinding>::all(client.clone())
            .delete(&name, &DeleteParams::default())
            .await;
    }
    let reader = "gpufleet:bootstrap-signer-clusterinfo";
    let _ = Api::<Role>::namespaced(client.clone(), "kube-public")
        .delete(reader, &DeleteParams::default())
        .await;
    let _ = Api::<RoleBinding>::namespaced(client.clone(), "kube-public")
        .delete(reader, &DeleteParams::default())
        .await;
    let public = Api::<ConfigMap>::namespaced(client.clone(), "kube-public");
    if let Ok(Some(info)) = public.get_opt("cluster-info").await
        && info
            .metadata
            .annotations
            .unwrap_or_default()
            .get("gpufleet/created-by")
            == Some(&"gpufleet_node_join".to_string())
    {
        let _ = public
            .delete("cluster-info", &DeleteParams::default())
            .await;
    }
    // A half-done sharing workout's keys (the ConfigMap holds only those).
    let _ = Api::<ConfigMap>::namespaced(client, RBAC_OPERATOR_NAMESPACE)
        .delete("gpufleet-device-plugin", &DeleteParams::default())
        .await;
}

#[test]
fn every_rule_is_needed_and_a_missing_one_is_named() {
    let rules = rules(&permissions());
    let every_type: Vec<&str> = workouts("x", "node", "pool")
        .iter()
        .map(|w| w.type_name)
        .collect();
    for (type_name, declared) in permissions() {
        assert!(
            declared.is_empty() || every_type.contains(&type_name),
            "{type_name} declares permissions but has no workout here"
        );
    }
    let node = TestNode::new();
    let operator = Operator::new(&node);
    let dir = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    block_on(async {
        // The whole role is enough for every workout...
        let user = format!("gpufleet-lp-all-{pid}");
        let _grant = Grant::new(&user, &rules).await;
        let all = workouts_as(dir.path(), &user, &node, "all").await;
        clean_up("all").await;
        if let Err(d) = all {
            panic!("the generated role does not suffice: {d:#?}");
        }
        // ...and without any one verb, something fails and says which.
        let mut cases = 0;
        for (i, rule) in rules.iter().enumerate() {
            for verb in &rule.verbs {
                cases += 1;
                let mut fewer = rules.clone();
                fewer[i].verbs.retain(|v| v != verb);
                let tag = format!("{verb}-{}", rule.resource).replace('/', "-");
                let user = format!("gpufleet-lp-without-{tag}-{pid}");
                let _grant = Grant::new(&user, &fewer).await;
                let result = workouts_as(dir.path(), &user, &node, &tag).await;
                clean_up(&tag).await;
                recreate_policy(&operator.policy).await;
                let diagnostics = match result {
                    Ok(()) => panic!(
                        "without {verb} on {} every workout still passed: the rule is not needed",
                        rule.resource
                    ),
                    Err(d) => d,
                };
                let denied = diagnostics
                    .0
                    .iter()
                    .find(|d| d.severity == Severity::Error || d.summary == DENIED)
                    .unwrap();
                let missing = Rule {
                    verbs: vec![verb.clone()],
                    needed_by: Vec::new(),
                    ..rule.clone()
                }
                .yaml("  ");
                assert_eq!(denied.summary, DENIED, "{denied:#?}");
                for text in [
                    format!("cannot {verb} resource \"{}\"", rule.resource),
                    format!("in API group \"{}\"", rule.group),
                    missing,
                ] {
                    assert!(
                        denied.detail.contains(&text),
                        "without {verb} on {}: {text:?} missing from:\n{}",
                        rule.resource,
                        denied.detail
                    );
                }
            }
        }
        eprintln!("least privilege: {cases} verbs removed one at a time, each named when missing");
    });
}

/// What the CLIs print for a missing rule: the rule to add.
#[test]
fn the_cli_shows_the_missing_rule() {
    let mut fewer = rules(&permissions());
    let classes = fewer
        .iter_mut()
        .find(|r| r.resource == "priorityclasses")
        .unwrap();
    classes.verbs.retain(|v| v != "create");
    let user = format!("gpufleet-lp-cli-{}", std::process::id());
    let _grant = block_on(Grant::new(&user, &fewer));
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        let kubeconfig = impersonating(ws.path(), &user);
        let name = unique_name("pc-lp");
        ws.config_raw(
            &(common::terraform::provider_block_for(&kubeconfig, "") + &class("c", &name, 1, "")),
        );
        let out = ws.apply_fails().replace('│', " ");
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        for text in [
            "Permission denied by Kubernetes",
            "cannot create resource \"priorityclasses\" in API group \"scheduling.k8s.io\"",
            "a ClusterRole needs the rule - apiGroups: [\"scheduling.k8s.io\"] resources: [\"priorityclasses\"] verbs: [\"create\"]",
            "docs/rbac.yaml",
        ] {
            assert!(
                flat.contains(text),
                "{}: {text:?} missing:\n{out}",
                cli.name
            );
        }
        assert!(live_priority_class(&name).is_none());
        ws.forget();
    });
}

/// `cli` logging at trace level into its stderr.
fn tracing(cli: &Cli, dir: &Path) -> Cli {
    let wrapper = dir.join(format!("{}-trace", cli.name));
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nTF_LOG=trace exec '{}' \"$@\"\n",
            cli.path.display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&wrapper, permissions).unwrap();
    Cli {
        path: wrapper,
        ..cli.clone()
    }
}

/// A fresh token of the ServiceAccount cluster.sh binds to docs/rbac.yaml.
fn service_account_token() -> String {
    block_on(async {
        let request = serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
        Api::<ServiceAccount>::namespaced(kube_client().await, "default")
            .create_token_request("gpufleet-provider", &PostParams::default(), &request)
            .await
            .unwrap()
            .status
            .and_then(|status| status.token)
            .expect("the TokenRequest's status carries the token")
    })
}

#[test]
fn trace_logs_hold_no_credentials() {
    let pki = Path::new(&common::kubeconfig()).with_file_name("pki");
    if !pki.join("provider.key").exists() {
        common::skipped(
            "trace_logs_hold_no_credentials",
            "the cluster has no cluster.sh user gpufleet-provider",
        );
        return;
    }
    let server = {
        let kubeconfig = kube::config::Kubeconfig::read_from(common::kubeconfig()).unwrap();
        kubeconfig.clusters[0]
            .cluster
            .as_ref()
            .unwrap()
            .server
            .clone()
            .unwrap()
    };
    let key = std::fs::read_to_string(pki.join("provider.key")).unwrap();
    each_cli(|cli| {
        let wrappers = tempfile::tempdir().unwrap();
        let mut ws = Workspace::new(&tracing(cli, wrappers.path()));
        let token = service_account_token();
        let exec_token = service_account_token();
        let exec_token_file = ws.path().join("exec-token");
        std::fs::write(&exec_token_file, &exec_token).unwrap();
        let plugin = ws.path().join("exec-credential.sh");
        std::fs::write(
            &plugin,
            "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' \"$(cat \"$1\")\"\n",
        )
        .unwrap();
        let names: BTreeMap<&str, String> = ["token", "client_key", "exec"]
            .into_iter()
            .map(|how| (how, unique_name("pc-secret")))
            .collect();
        let ca = format!(
            "  host = \"{server}\"\n  cluster_ca_certificate = file(\"{}\")\n",
            pki.join("ca.crt").display()
        );
        let providers = [
            ("token", format!("{ca}  token = \"{token}\"\n")),
            (
                "client_key",
                format!(
                    "{ca}  client_certificate = file(\"{}\")\n  client_key = file(\"{}\")\n",
                    pki.join("provider.crt").display(),
                    pki.join("provider.key").display()
                ),
            ),
            (
                "exec",
                format!(
                    "{ca}  exec = {{\n    api_version = \"client.authentication.k8s.io/v1\"\n    command = \"sh\"\n    args = [\"{}\", \"{}\"]\n  }}\n",
                    plugin.display(),
                    exec_token_file.display()
                ),
            ),
        ];
        let mut main = format!(
            "terraform {{\n  required_providers {{\n    gpufleet = {{\n      source  = \"gpufleet/gpufleet\"\n      version = \"{PROVIDER_VERSION}\"\n    }}\n  }}\n}}\n\n"
        );
        for (how, settings) in &providers {
            main.push_str(&format!(
                "provider \"gpufleet\" {{\n  alias = \"{how}\"\n{settings}}}\n\n"
            ));
            main.push_str(
                &class(how, &names[how], 1, "")
                    .replace("{\n", &format!("{{\n  provider = gpufleet.{how}\n")),
            );
        }
        ws.config_raw(&main);
        let apply = ws.apply();
        for name in names.values() {
            assert!(
                live_priority_class(name).is_some(),
                "{name} was not created"
            );
        }
        let destroy = ws.run(&["destroy", "-auto-approve", "-no-color", "-input=false"]);
        assert!(destroy.success, "{}", destroy.stderr);
        ws.forget();
        let log = [apply, destroy]
            .into_iter()
            .map(|run| run.stdout + &run.stderr)
            .collect::<String>();
        assert!(
            log.contains("[TRACE]") && log.contains("ApplyResourceChange"),
            "{}: the log is not a trace log:\n{}",
            cli.name,
            &log[..log.len().min(2000)]
        );
        let mut secrets: Vec<(&str, String)> =
            vec![("token", token.clone()), ("exec token", exec_token.clone())];
        // The key and every line of its base64 body.
        secrets.push(("client key", key.trim().to_string()));
        for line in key
            .lines()
            .filter(|l| !l.starts_with("-----") && l.len() >= 16)
        {
            secrets.push(("a line of the client key", line.to_string()));
        }
        for (what, secret) in &secrets {
            assert!(
                !log.contains(secret.as_str()),
                "{}: the trace log holds the {what}",
                cli.name
            );
        }
        eprintln!(
            "{}: {} bytes of trace log, none of {} secrets in it",
            cli.name,
            log.len(),
            secrets.len()
        );
    });
}
