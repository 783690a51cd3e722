//! `gpufleet_node_join` through the real terraform and tofu CLIs against the
//! real API server and controller-manager (bootstrap-token authentication,
//! the Node authorizer, NodeRestriction, and the bootstrapsigner,
//! tokencleaner, csrapproving and csrsigning controllers; see
//! testbed/README.md). The test joins a server the way a
//! kubelet's TLS bootstrap does, with nothing but what the resource outputs
//! (common::tls_bootstrap); the real scheduler then keeps pods without the
//! tolerations off it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use common::terraform::{ImportBy, Workspace, each_cli};
use common::tls_bootstrap::{self, JoinMaterial};
use common::{block_on, kube_client, kubeconfig, unique_name};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

const RESOURCE: &str = "gpufleet_node_join.gpu";
const GROUP: &str = "system:bootstrappers:gpufleet";
/// The binding kubeadm names `kubeadm:node-autoapprove-certificate-rotation`,
/// under gpufleet's name: made by the test beforehand, so the provider must
/// leave it alone.
const FOREIGN_BINDING: &str = "gpufleet:node-autoapprove-certificate-rotation";
/// What `manage_bootstrap_rbac` creates for the default group.
const CREATED: &[(&str, &str)] = &[
    (
        "ClusterRoleBinding",
        "gpufleet:kubelet-bootstrap:system:bootstrappers:gpufleet",
    ),
    (
        "ClusterRoleBinding",
        "gpufleet:node-autoapprove-bootstrap:system:bootstrappers:gpufleet",
    ),
    ("Role", "gpufleet:bootstrap-signer-clusterinfo"),
    ("RoleBinding", "gpufleet:bootstrap-signer-clusterinfo"),
    ("ConfigMap", "cluster-info"),
];

fn body(extra: &str) -> String {
    format!(
        "resource \"gpufleet_node_join\" \"gpu\" {{\n  ttl = \"2h\"\n  taints = [\n    {{ key = \"nvidia.com/gpu\", value = \"training\", effect = \"NoSchedule\" }},\n    {{ key = \"workload\", value = \"training\", effect = \"NoExecute\" }},\n  ]\n  labels = {{ \"example.com/pool\" = \"h100\" }}\n  sharing_config = \"h100-mps\"\n{extra}}}\n\noutput \"join\" {{\n  sensitive = true\n  value = {{\n    token = gpufleet_node_join.gpu.token\n    endpoint = gpufleet_node_join.gpu.api_server_endpoint\n    ca_cert_hash = gpufleet_node_join.gpu.ca_cert_hash\n    kubelet_config = gpufleet_node_join.gpu.kubelet_config\n    node_labels_flag = gpufleet_node_join.gpu.kubelet_node_labels_flag\n    kubeadm_join_command = gpufleet_node_join.gpu.kubeadm_join_command\n  }}\n}}\n"
    )
}

fn material_of(ws: &Workspace) -> JoinMaterial {
    JoinMaterial::of(&ws.output("join"))
}

/// The annotations of a node bootstrap object (kind, name) the provider
/// may create, with its field managers under the key `managers`; `None`
/// when it does not exist.
fn bootstrap_object(kind: &str, name: &str) -> Option<BTreeMap<String, String>> {
    block_on(async {
        let client = kube_client().await;
        let meta = match kind {
            "ClusterRoleBinding" => Api::<ClusterRoleBinding>::all(client)
                .get_opt(name)
                .await
                .unwrap()
                .map(|o| o.metadata),
            "Role" => Api::<Role>::namespaced(client, "kube-public")
                .get_opt(name)
                .await
                .unwrap()
                .map(|o| o.metadata),
            "RoleBinding" => Api::<RoleBinding>::namespaced(client, "kube-public")
                .get_opt(name)
                .await
                .unwrap()
                .map(|o| o.metadata),
            _ => Api::<ConfigMap>::namespaced(client, "kube-public")
                .get_opt(name)
                .await
                .unwrap()
                .map(|o| o.metadata),
        };
        meta.map(|m| {
            let mut annotations = m.annotations.unwrap_or_default();
            let managers: Vec<String> = m
                .managed_fields
                .unwrap_or_default()
                .into_iter()
                .filter_map(|f| f.manager)
                .filter(|m| m.starts_with("gpufleet-node-join-"))
                .collect();
            if !managers.is_empty() {
                annotations.insert("managers".into(), managers.join(","));
            }
            annotations
        })
    })
}

/// A binding of the test's own, of a name the provider would use, removed
/// when dropped.
struct ForeignBinding;

impl ForeignBinding {
    fn new() -> Self {
        block_on(async {
            let binding: ClusterRoleBinding = serde_json::from_value(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": FOREIGN_BINDING},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}],
            }))
            .unwrap();
            Api::<ClusterRoleBinding>::all(kube_client().await)
                .patch(
                    FOREIGN_BINDING,
                    &PatchParams::apply("gpufleet-tests").force(),
                    &Patch::Apply(&binding),
                )
                .await
                .unwrap();
        });
        Self
    }
}

impl Drop for ForeignBinding {
    fn drop(&mut self) {
        let cleanup = || {
            block_on(async {
                let _ = Api::<ClusterRoleBinding>::all(kube_client().await)
                    .delete(FOREIGN_BINDING, &DeleteParams::default())
                    .await;
            })
        };
        let _ = std::thread::scope(|s| s.spawn(cleanup).join());
    }
}

/// The tests here share the test cluster's API server; the one that
/// restarts it with other flags has it to itself.
static SHARED: RwLock<()> = RwLock::new(());

/// kube-apiserver of the test cluster restarted with `flags` added
/// (testbed/cluster.sh restart), and restarted as it was when
/// dropped; `None` (a skip) when the cluster is not one cluster.sh runs.
struct RestartedApiServer {
    dir: PathBuf,
    previous: String,
}

impl RestartedApiServer {
    fn with(flags: &str) -> Option<Self> {
        let dir = Path::new(&kubeconfig()).parent().unwrap().to_path_buf();
        let Ok(env) = std::fs::read_to_string(dir.join("env")) else {
            common::skipped(
                "restarting kube-apiserver",
                "the test cluster is not one testbed/cluster.sh runs",
            );
            return None;
        };
        let previous = env
            .lines()
            .find_map(|l| l.strip_prefix("apiserver_flags='")?.strip_suffix('\''))
            .unwrap_or_default()
            .to_string();
        let server = Self { dir, previous };
        server.restart(&format!("{} {flags}", server.previous));
        Some(server)
    }

    fn restart(&self, flags: &str) {
        let out = Command::new("bash")
            .arg(common::repo_root().join("testbed/cluster.sh"))
            .args(["restart", "kube-apiserver"])
            .env("GPUFLEET_CLUSTER_DIR", &self.dir)
            .env("GPUFLEET_APISERVER_FLAGS", flags.trim())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cluster.sh restart kube-apiserver failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for RestartedApiServer {
    fn drop(&mut self) {
        self.restart(&self.previous);
    }
}

fn wait_for<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(start.elapsed() < limit, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn delete_node_and_csrs(node: &str, csrs: &[String]) {
    block_on(async {
        let client = kube_client().await;
        let _ = Api::<Node>::all(client.clone())
            .delete(node, &DeleteParams::default())
            .await;
        for csr in csrs {
            let _ = Api::<CertificateSigningRequest>::all(client.clone())
                .delete(csr, &DeleteParams::default())
                .await;
        }
    });
}

/// The TLS bootstrap, end to end; returns the Node as a watch started
/// before it showed it first.
fn join(material: &JoinMaterial, node: &str, csrs: &mut Vec<String>) -> Node {
    let server: Node = serde_json::from_value(json!({
        "metadata": {"name": node},
        "status": {
            "capacity": {"cpu": "8", "memory": "64Gi", "pods": "110"},
            "allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110"},
        },
    }))
    .unwrap();
    block_on(async {
        let admin = Api::<Node>::all(kube_client().await);
        let watch = WatchParams::default().fields(&format!("metadata.name={node}"));
        let mut events = admin.watch(&watch, "0").await.unwrap().boxed();
        csrs.push(tls_bootstrap::join(material, &server).await);
        loop {
            match events.try_next().await.unwrap() {
                Some(WatchEvent::Added(first)) => return first,
                Some(WatchEvent::Bookmark(_)) => continue,
                other => panic!("unexpected first event {other:?}"),
            }
        }
    })
}

/// A pod for the joined node's pool, tolerating its taints or not.
fn pod_for_pool(name: &str, tolerating: bool) -> Pod {
    let tolerations = if tolerating {
        json!([
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
            {"key": "workload", "operator": "Equal", "value": "training", "effect": "NoExecute"},
        ])
    } else {
        json!([])
    };
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeSelector": {"example.com/pool": "h100"},
            "tolerations": tolerations,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }))
    .unwrap()
}

/// The real scheduler keeps a pod without the tolerations off the joined
/// node (naming the taint) and places a training pod there.
fn scheduling_respects_the_taints(node: &str) {
    let (plain, training) = (unique_name("untolerating"), unique_name("training"));
    block_on(async {
        let pods = Api::<Pod>::namespaced(kube_client().await, "default");
        for (name, tolerating) in [(&plain, false), (&training, true)] {
            pods.create(&PostParams::default(), &pod_for_pool(name, tolerating))
                .await
                .unwrap();
        }
    });
    let get = |name: &str| {
        block_on(async {
            Api::<Pod>::namespaced(kube_client().await, "default")
                .get(name)
                .await
                .unwrap()
        })
    };
    let bound = wait_for(
        "the training pod scheduled",
        Duration::from_secs(60),
        || get(&training).spec.and_then(|s| s.node_name),
    );
    assert_eq!(bound, node);
    let refusal = wait_for("the scheduler's verdict", Duration::from_secs(60), || {
        let pod = get(&plain);
        assert_eq!(pod.spec.as_ref().and_then(|s| s.node_name.clone()), None);
        pod.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable"))?
            .message
    });
    assert!(refusal.contains("untolerated taint"), "{refusal}");
    block_on(async {
        let pods = Api::<Pod>::namespaced(kube_client().await, "default");
        for name in [&plain, &training] {
            let _ = pods.delete(name, &DeleteParams::default()).await;
        }
    });
}

fn taints_text(node: &Node) -> Vec<String> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .iter()
        .map(|t| {
            format!(
                "{}={}:{}",
                t.key,
                t.value.clone().unwrap_or_default(),
                t.effect
            )
        })
        .collect()
}

fn secret_of(id: &str) -> Option<Secret> {
    block_on(async {
        Api::<Secret>::namespaced(kube_client().await, "kube-system")
            .get_opt(&format!("bootstrap-token-{id}"))
            .await
            .unwrap()
    })
}

fn patch_secret(id: &str, data: serde_json::Value) {
    block_on(async {
        Api::<Secret>::namespaced(kube_client().await, "kube-system")
            .patch(
                &format!("bootstrap-token-{id}"),
                &PatchParams::default(),
                &Patch::Merge(&json!({"stringData": data})),
            )
            .await
            .unwrap()
    });
}

/// Whether the API server takes the token: a SelfSubjectReview as the
/// token's user, which any authenticated user may make (so the answer does
/// not depend on RBAC, which destroy removes too).
fn token_accepted(material: &JoinMaterial, ca: &[u8]) -> bool {
    let kubeconfig = tls_bootstrap::token_kubeconfig(material, ca);
    match block_on(async {
        Api::<SelfSubjectReview>::all(tls_bootstrap::client_from(&kubeconfig).await)
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
    }) {
        Ok(review) => {
            let user = review.status.and_then(|s| s.user_info?.username);
            let id = material.id_and_secret().0;
            assert_eq!(user, Some(format!("system:bootstrap:{id}")));
            true
        }
        Err(kube::Error::Api(status)) if status.code == 401 => false,
        Err(e) => panic!("neither accepted nor refused: {e}"),
    }
}

#[test]
fn a_server_joins_tainted_through_the_kubelet_tls_bootstrap() {
    let _cluster = SHARED.read().unwrap_or_else(|e| e.into_inner());
    // Nothing but the provider sets up node bootstrap (manage_bootstrap_rbac);
    // an object of one of its names made by someone else stays theirs.
    for (kind, name) in CREATED {
        assert_eq!(bootstrap_object(kind, name), None, "{kind} {name} exists");
    }
    let _foreign = ForeignBinding::new();
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(&body("  manage_bootstrap_rbac = true\n"));
        ws.apply();
        let state = ws.resource_values(RESOURCE);
        let id = state["token_id"].as_str().unwrap().to_string();
        let live = secret_of(&id).expect("the token Secret");
        assert_eq!(live.type_.as_deref(), Some("bootstrap.kubernetes.io/token"));
        for (kind, name) in CREATED {
            let annotations =
                bootstrap_object(kind, name).unwrap_or_else(|| panic!("{kind} {name} not created"));
            assert_eq!(
                annotations.get("gpufleet/created-by").map(String::as_str),
                Some("gpufleet_node_join"),
                "{kind} {name}"
            );
            assert!(
                annotations.contains_key(&format!("gpufleet/node-join.{id}")),
                "{kind} {name}: {annotations:?}"
            );
            assert_eq!(
                annotations.get("managers"),
                Some(&format!("gpufleet-node-join-{id}")),
                "{kind} {name}: applied by the token's own field manager"
            );
        }
        assert_eq!(
            bootstrap_object("ClusterRoleBinding", FOREIGN_BINDING),
            Some(BTreeMap::new()),
            "the test's own binding is left alone"
        );

        // Import by token id into an empty state: an empty plan, the same state.
        for by in [ImportBy::Command, ImportBy::Block] {
            ws.assert_import_verifies(&[(RESOURCE, &id)], by, &[]);
        }

        // A server joins with nothing but the outputs, tainted from its first
        // appearance.
        let material = material_of(&ws);
        let node = unique_name("joined");
        let mut csrs = Vec::new();
        let first = join(&material, &node, &mut csrs);
        assert_eq!(
            taints_text(&first),
            [
                "nvidia.com/gpu=training:NoSchedule",
                "workload=training:NoExecute"
            ]
        );
        let labels = first.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("example.com/pool").map(String::as_str),
            Some("h100")
        );
        assert_eq!(
            labels
                .get("nvidia.com/device-plugin.config")
                .map(String::as_str),
            Some("h100-mps")
        );
        scheduling_respects_the_taints(&node);
        // A bootstrap token has no use count: a second server joins with the
        // same material while it is valid, tainted alike.
        let second = unique_name("joined");
        assert_eq!(
            taints_text(&join(&material, &second, &mut csrs)),
            taints_text(&first),
            "{second}"
        );
        delete_node_and_csrs(&node, &csrs);
        delete_node_and_csrs(&second, &[]);

        // Drift: an edited Secret shows, and so does a deleted one.
        patch_secret(
            &id,
            json!({"auth-extra-groups": "system:bootstrappers:other"}),
        );
        ws.assert_plan_changes().assert_change(
            RESOURCE,
            "auth_extra_groups[0]",
            json!("system:bootstrappers:other"),
            json!(GROUP),
        );
        ws.apply();

        // An expired token is refused and the token cleaner removes it; the
        // next plan issues a new one.
        let ca = block_on(tls_bootstrap::discover(&material));
        assert!(token_accepted(&material, &ca));
        patch_secret(&id, json!({"expiration": "2020-01-01T00:00:00Z"}));
        // The authenticator reads Secrets from its informer: a moment later.
        wait_for("the expired token refused", Duration::from_secs(10), || {
            (!token_accepted(&material, &ca)).then_some(())
        });
        wait_for("the token cleaner", Duration::from_secs(60), || {
            secret_of(&id).is_none().then_some(())
        });
        ws.assert_plan_changes()
            .assert_actions(RESOURCE, &["create"]);
        ws.apply();

        // A token that expires within `rotate_when_expires_within` (1h) is
        // replaced by the next plan, and the one it replaces is revoked.
        let renewed = material_of(&ws);
        assert_ne!(renewed.token, material.token);
        let soon = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_mins(30))
            .unwrap()
            .round(jiff::Unit::Second)
            .unwrap();
        patch_secret(
            renewed.id_and_secret().0,
            json!({"expiration": soon.to_string()}),
        );
        ws.assert_plan_changes()
            .assert_replaced_for(RESOURCE, &["expiration"]);
        ws.apply();
        let rotated = material_of(&ws);
        assert_ne!(rotated.token, renewed.token);
        // The replaced token is gone (ids are random: 36^6 of them).
        assert!(secret_of(renewed.id_and_secret().0).is_none());

        // Destroy revokes the token: a second bootstrap fails. What the
        // provider created for node bootstrap goes with it (the expired
        // token's claims count for nothing); the test's own binding stays.
        let renewed = rotated;
        let ca = block_on(tls_bootstrap::discover(&renewed));
        ws.destroy();
        for (kind, name) in CREATED {
            assert_eq!(
                bootstrap_object(kind, name),
                None,
                "{kind} {name} left behind"
            );
        }
        assert!(bootstrap_object("ClusterRoleBinding", FOREIGN_BINDING).is_some());
        wait_for("the revoked token refused", Duration::from_secs(10), || {
            (!token_accepted(&renewed, &ca)).then_some(())
        });
        let refused = block_on(tls_bootstrap::request_certificate(
            &tls_bootstrap::token_kubeconfig(&renewed, &ca),
            &unique_name("late"),
        ));
        assert!(
            matches!(&refused, Err(kube::Error::Api(s)) if s.code == 401),
            "{refused:?}"
        );
    });
}

#[test]
fn the_token_secret_shows_only_as_a_sensitive_attribute() {
    let _cluster = SHARED.read().unwrap_or_else(|e| e.into_inner());
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.env("TF_LOG", "trace");
        // No signing: the bootstrapsigner would sign cluster-info for this
        // token too, which keeps it while the join test destroys its own.
        ws.config(&body("  usages = [\"authentication\"]\n"));
        let applied = ws.apply();
        let state = ws.resource_values(RESOURCE);
        let secret = state["token_secret"].as_str().unwrap().to_string();
        assert_eq!(secret.len(), 16);
        let plan = ws.plan();
        // Sensitive attributes for the three that carry it.
        let raw: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(ws.path().join("terraform.tfstate")).unwrap(),
        )
        .unwrap();
        let instance = &raw["resources"][0]["instances"][0];
        let mut values = instance["attributes"].clone();
        for sensitive in ["token_secret", "token", "kubeadm_join_command"] {
            assert!(
                instance["sensitive_attributes"]
                    .to_string()
                    .contains(sensitive),
                "{sensitive} is not sensitive: {}",
                instance["sensitive_attributes"]
            );
            values.as_object_mut().unwrap().remove(sensitive);
        }
        let outside = values.to_string() + &instance["private"].to_string();
        for (what, text) in [
            ("the apply's trace log", applied.stderr.as_str()),
            ("the apply's output", applied.stdout.as_str()),
            ("the plan", plan.text.as_str()),
            (
                "the state outside the sensitive attributes",
                outside.as_str(),
            ),
        ] {
            assert!(!text.contains(&secret), "the token secret is in {what}");
        }
        assert!(applied.stderr.contains("[TRACE]"), "no trace log captured");
        ws.destroy();
    });
}

/// An API server started without `--enable-bootstrap-token-auth`: the apply
/// that creates the token fails, naming the flag, and keeps the token in
/// state, tainted, so that destroy still revokes it.
#[test]
fn an_api_server_without_bootstrap_token_authentication_is_named() {
    let _cluster = SHARED.write().unwrap_or_else(|e| e.into_inner());
    let Some(_server) = RestartedApiServer::with("--enable-bootstrap-token-auth=false") else {
        return;
    };
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(&body(""));
        let failed = ws.apply_fails();
        assert!(
            failed.contains("Bootstrap token not accepted")
                && failed.contains("--enable-bootstrap-token-auth=true"),
            "{failed}"
        );
        assert_eq!(ws.resource(RESOURCE)["tainted"], json!(true));
        let state = ws.resource_values(RESOURCE);
        let id = state["token_id"].as_str().unwrap().to_string();
        assert!(secret_of(&id).is_some(), "the token is kept");
        ws.destroy();
        assert!(secret_of(&id).is_none(), "destroy revokes it");
    });
}

/// Two tokens of one group share what `manage_bootstrap_rbac` creates: each
/// claims it, the first destroyed gives up only its share (its claim and
/// field manager go, the objects stay), the last one deletes them.
#[test]
fn tokens_share_the_bootstrap_objects() {
    let _cluster = SHARED.write().unwrap_or_else(|e| e.into_inner());
    let token = |name: &str| {
        format!(
            "resource \"gpufleet_node_join\" \"{name}\" {{\n  ttl = \"1h\"\n  rotate_when_expires_within = \"10m\"\n  manage_bootstrap_rbac = true\n}}\n"
        )
    };
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(&(token("a") + &token("b")));
        ws.apply();
        let id = |name: &str| {
            ws.resource_values(&format!("gpufleet_node_join.{name}"))["token_id"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let (a, b) = (id("a"), id("b"));
        for (kind, name) in CREATED {
            let annotations = bootstrap_object(kind, name).unwrap();
            for id in [&a, &b] {
                assert!(
                    annotations.contains_key(&format!("gpufleet/node-join.{id}")),
                    "{kind} {name}: {annotations:?}"
                );
            }
        }
        ws.config(&token("b"));
        ws.apply();
        for (kind, name) in CREATED {
            let annotations = bootstrap_object(kind, name)
                .unwrap_or_else(|| panic!("{kind} {name} went with the first token"));
            assert!(
                !annotations.contains_key(&format!("gpufleet/node-join.{a}")),
                "{kind} {name}: {annotations:?}"
            );
            assert_eq!(
                annotations.get("managers"),
                Some(&format!("gpufleet-node-join-{b}")),
                "{kind} {name}"
            );
        }
        ws.assert_plan_empty();
        ws.destroy();
        for (kind, name) in CREATED {
            assert_eq!(
                bootstrap_object(kind, name),
                None,
                "{kind} {name} left behind"
            );
        }
    });
}

/// What `manage_bootstrap_rbac` created, changed or deleted by someone
/// else, shows in the next plan, and the apply puts it back.
#[test]
fn drift_of_the_bootstrap_objects_shows_and_is_put_back() {
    let _cluster = SHARED.write().unwrap_or_else(|e| e.into_inner());
    let (binding, role) = (CREATED[0].1, CREATED[2].1);
    let subjects = |name: &str| {
        block_on(async {
            Api::<ClusterRoleBinding>::all(kube_client().await)
                .get(name)
                .await
                .unwrap()
                .subjects
                .unwrap_or_default()
                .into_iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
        })
    };
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config(&body("  manage_bootstrap_rbac = true\n"));
        ws.apply();
        ws.assert_plan_empty();

        // Someone binds another group instead of the token's.
        block_on(async {
            let patch = json!({"subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:bootstrappers:someone-else"}]});
            Api::<ClusterRoleBinding>::all(kube_client().await)
                .patch(binding, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        });
        let plan = ws.assert_plan_changes();
        plan.assert_actions(RESOURCE, &["update"]);
        plan.assert_change(RESOURCE, "manage_bootstrap_rbac", json!(false), json!(true));
        ws.apply();
        assert_eq!(subjects(binding), [GROUP], "{}: not put back", cli.name);

        // Someone deletes the Role that lets anyone read cluster-info.
        block_on(async {
            Api::<Role>::namespaced(kube_client().await, "kube-public")
                .delete(role, &DeleteParams::default())
                .await
                .unwrap();
        });
        ws.assert_plan_changes()
            .assert_actions(RESOURCE, &["update"]);
        ws.apply();
        assert!(
            bootstrap_object("Role", role).is_some(),
            "{}: not put back",
            cli.name
        );
        ws.assert_plan_empty();
        ws.destroy();
        for (kind, name) in CREATED {
            assert_eq!(
                bootstrap_object(kind, name),
                None,
                "{kind} {name} left behind"
            );
        }
    });
}
