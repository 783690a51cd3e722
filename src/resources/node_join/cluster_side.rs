//! What the cluster must do for a bootstrap token to work, checked or set
//! up after the token Secret is written: the API server must authenticate
//! bootstrap tokens, and, with `manage_bootstrap_rbac`, the RBAC and the
//! `cluster-info` ConfigMap `kubeadm init` creates for node bootstrap
//! (kubernetes cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go
//! and clusterinfo/clusterinfo.go), under gpufleet's own names.
//!
//! Several tokens may rely on one such object (every token of a group
//! needs the group's bindings), so each token claims it with an annotation
//! of its own, applied by a field manager of its own together with the
//! object's content: the object stays while any claim does, and is deleted
//! with the last one, but only if gpufleet created it (an annotation says
//! so). An object of that name someone else made is left alone.

use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::Resource as _;
use serde_json::json;

use super::Model;
use crate::cluster::api::Kind;
use crate::cluster::retry::Deadline;
use crate::kit::Cluster;
use crate::kit::permissions::Permission;
use crate::protocol::{Diagnostic, Diagnostics};

mod claims;

use claims::Share;

/// The API server's bootstrap token authenticator reads token Secrets from
/// its informer cache (kubernetes plugin/pkg/auth/authenticator/token/bootstrap),
/// a moment behind the write: how long a new token may take to be accepted.
const ACCEPTANCE_WAIT: Duration = Duration::from_secs(10);

/// kubeadm's ClusterRoles for node bootstrap (kubernetes
/// cmd/kubeadm/app/constants): post CSRs, have node client CSRs approved,
/// and have nodes' renewals approved.
const NODE_BOOTSTRAPPER: &str = "system:node-bootstrapper";
const NODE_CLIENT: &str = "system:certificates.k8s.io:certificatesigningrequests:nodeclient";
const SELF_NODE_CLIENT: &str =
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient";
const NODES_GROUP: &str = "system:nodes";
/// kubeadm's `kubeadm:node-autoapprove-certificate-rotation`, under our name.
const ROTATION_BINDING: &str = "gpufleet:node-autoapprove-certificate-rotation";
/// kubeadm's `kubeadm:bootstrap-signer-clusterinfo` Role and RoleBinding:
/// anyone may read `cluster-info`, which discovery does before it trusts
/// the server.
const CLUSTER_INFO_READER: &str = "gpufleet:bootstrap-signer-clusterinfo";
/// k8s.io/cluster-bootstrap token/api `ConfigMapClusterInfo`, in `kube-public`.
const PUBLIC: &str = "kube-public";
const CLUSTER_INFO: &str = "cluster-info";

/// What `manage_bootstrap_rbac` needs of the API. Binding names follow the
/// groups, so ClusterRoleBindings cannot be named; the API server only
/// lets a binding grant a role its writer may `bind` (or holds every
/// permission of), so `bind` is limited to kubeadm's three roles. Creating
/// an object cannot be limited by name (RBAC's rule), the rest can.
pub const PERMISSIONS: &[Permission] = &[
    Permission::cluster(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        &["get", "create", "patch", "delete"],
    ),
    Permission::cluster("rbac.authorization.k8s.io", "clusterroles", &["bind"]).named(&[
        NODE_BOOTSTRAPPER,
        NODE_CLIENT,
        SELF_NODE_CLIENT,
    ]),
    Permission::in_namespace(PUBLIC, "rbac.authorization.k8s.io", "roles", &["create"]),
    Permission::in_namespace(
        PUBLIC,
        "rbac.authorization.k8s.io",
        "roles",
        &["get", "patch", "delete"],
    )
    .named(&[CLUSTER_INFO_READER]),
    Permission::in_namespace(
        PUBLIC,
        "rbac.authorization.k8s.io",
        "rolebindings",
        &["create"],
    ),
    Permission::in_namespace(
        PUBLIC,
        "rbac.authorization.k8s.io",
        "rolebindings",
        &["get", "patch", "delete"],
    )
    .named(&[CLUSTER_INFO_READER]),
    Permission::in_namespace(PUBLIC, "", "configmaps", &["create"]),
    Permission::in_namespace(PUBLIC, "", "configmaps", &["get", "patch", "delete"])
        .named(&[CLUSTER_INFO]),
];

/// After the token is written: the API server must take it. Asked only
/// when the token is new for authentication (create, or `usages` gaining
/// it); a refusal for [`ACCEPTANCE_WAIT`] means bootstrap token
/// authentication is off.
pub(super) async fn check_authentication(
    cluster: &Cluster,
    prior: Option<&Model>,
    state: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let authenticates = |m: &Model| m.usages.iter().flatten().any(|u| u == "authentication");
    if !authenticates(state) || prior.is_some_and(authenticates) {
        return Ok(());
    }
    let (Some(id), Some(secret)) = (&state.token_id, &state.token_secret) else {
        return Ok(());
    };
    let expected = format!("system:bootstrap:{id}");
    let token = format!("{id}.{secret}");
    let reviews = cluster
        .kubernetes
        .objects_as_token::<SelfSubjectReview>(Kind::SELF_SUBJECT_REVIEW, &token, "the token")
        .await?
        .because("to find out whom the API server authenticates the bootstrap token as");
    let started = Instant::now();
    loop {
        // A review the server refuses (401) names nobody.
        let user = reviews
            .create(&SelfSubjectReview::default(), deadline)
            .await?
            .map(|review| {
                review
                    .status
                    .and_then(|s| s.user_info)
                    .and_then(|u| u.username)
                    .unwrap_or_default()
            });
        let detail = match user {
            Some(user) if user == expected => return Ok(()),
            Some(user) => format!(
                "The API server at {} authenticates the new bootstrap token {id} as {user:?}, not as {expected:?}: another authenticator takes tokens of this shape before the bootstrap token authenticator.",
                cluster.kubernetes.describe()
            ),
            None if started.elapsed() < ACCEPTANCE_WAIT => {
                tokio::select! {
                    biased;
                    () = crate::protocol::stop::requested() => "Stopped before the API server accepted the new bootstrap token.".to_string(),
                    () = tokio::time::sleep(Duration::from_millis(250)) => continue,
                }
            }
            None => format!(
                "The API server at {} refused the new bootstrap token {id} (401 Unauthorized) for {}s after it was written: it does not authenticate bootstrap tokens, so no server can join with it. Start kube-apiserver with `--enable-bootstrap-token-auth=true` (kubeadm does; a managed cluster must offer it). The token is kept in state, tainted, so the next apply replaces it.",
                cluster.kubernetes.describe(),
                ACCEPTANCE_WAIT.as_secs()
            ),
        };
        return Err(Diagnostic::error("Bootstrap token not accepted", detail).into());
    }
}

/// One object a token may claim.
enum Piece {
    Binding(ClusterRoleBinding),
    Role(Role),
    RoleBinding(RoleBinding),
    ClusterInfo(ConfigMap),
}

impl Piece {
    fn name(&self) -> &str {
        let meta = match self {
            Piece::Binding(o) => o.meta(),
            Piece::Role(o) => o.meta(),
            Piece::RoleBinding(o) => o.meta(),
            Piece::ClusterInfo(o) => o.meta(),
        };
        meta.name.as_deref().unwrap_or_default()
    }

    fn key(&self) -> (u8, String) {
        let rank = match self {
            Piece::Binding(_) => 0,
            Piece::Role(_) => 1,
            Piece::RoleBinding(_) => 2,
            Piece::ClusterInfo(_) => 3,
        };
        (rank, self.name().to_string())
    }
}

/// A binding of role `role` (a `ClusterRole` or `Role`) to one subject.
fn binding(name: &str, role: (&str, &str), subject: (&str, &str)) -> serde_json::Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role.0, "name": role.1},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject.0, "name": subject.1}],
    })
}

fn typed<K: serde::de::DeserializeOwned>(kind: &str, mut value: serde_json::Value) -> K {
    value["kind"] = json!(kind);
    serde_json::from_value(value).expect("a node bootstrap object is well-formed")
}

/// The objects `model` claims; none unless it manages bootstrap RBAC.
fn pieces(model: &Model) -> Vec<Piece> {
    if model.manage_bootstrap_rbac != Some(true) {
        return Vec::new();
    }
    // cluster-info first: the Role granting its reading may only be
    // written by someone who may read it (RBAC's escalation check).
    let mut pieces = Vec::new();
    if let (Some(server), Some(ca)) = (&model.api_server_endpoint, &model.cluster_ca_certificate) {
        pieces.push(Piece::ClusterInfo(typed(
            "ConfigMap",
            json!({
                "apiVersion": "v1",
                "metadata": {"name": CLUSTER_INFO, "namespace": PUBLIC},
                "data": {"kubeconfig": cluster_info_kubeconfig(server, ca)},
            }),
        )));
    }
    for group in model.auth_extra_groups.iter().flatten() {
        for (what, role) in [
            ("kubelet-bootstrap", NODE_BOOTSTRAPPER),
            ("node-autoapprove-bootstrap", NODE_CLIENT),
        ] {
            let name = format!("gpufleet:{what}:{group}");
            pieces.push(Piece::Binding(typed(
                "ClusterRoleBinding",
                binding(&name, ("ClusterRole", role), ("Group", group)),
            )));
        }
    }
    pieces.push(Piece::Binding(typed(
        "ClusterRoleBinding",
        binding(
            ROTATION_BINDING,
            ("ClusterRole", SELF_NODE_CLIENT),
            ("Group", NODES_GROUP),
        ),
    )));
    pieces.push(Piece::Role(typed(
        "Role",
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": CLUSTER_INFO_READER, "namespace": PUBLIC},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [CLUSTER_INFO], "verbs": ["get"]}],
        }),
    )));
    let mut reader = binding(
        CLUSTER_INFO_READER,
        ("Role", CLUSTER_INFO_READER),
        ("User", "system:anonymous"),
    );
    reader["metadata"]["namespace"] = json!(PUBLIC);
    pieces.push(Piece::RoleBinding(typed("RoleBinding", reader)));
    pieces
}

/// The kubeconfig `cluster-info` carries: only the cluster, its server and
/// CA, as kubeadm writes it from admin.conf.
fn cluster_info_kubeconfig(server: &str, ca_pem: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    serde_saphyr::to_string(&json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "contexts": [],
        "users": [],
        "current-context": "",
    }))
    .expect("a kubeconfig serializes")
}

/// Claims what `state` needs and releases what only `prior` needed.
pub(super) async fn write(
    cluster: &Cluster,
    prior: Option<&Model>,
    state: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let wanted = pieces(state);
    let keys: Vec<_> = wanted.iter().map(Piece::key).collect();
    if let Some(prior) = prior {
        let unwanted = pieces(prior)
            .into_iter()
            .filter(|p| !keys.contains(&p.key()));
        release(cluster, prior, unwanted, deadline).await?;
    }
    let share = Share::of(state);
    for piece in wanted {
        match piece {
            Piece::Binding(o) => share.ensure(cluster, o, deadline).await?,
            Piece::Role(o) => share.ensure(cluster, o, deadline).await?,
            Piece::RoleBinding(o) => share.ensure(cluster, o, deadline).await?,
            Piece::ClusterInfo(o) => share.ensure(cluster, o, deadline).await?,
        }
    }
    Ok(())
}

/// Whether everything `state` claims is as it wants it: there, and when
/// gpufleet created it, with its content and this token's claim (an object
/// of that name someone else made is theirs, as [`Share::ensure`] leaves
/// it). A read reports drift otherwise, so the next apply puts it back.
pub(super) async fn in_place(
    cluster: &Cluster,
    state: &Model,
    deadline: Deadline,
) -> Result<bool, Diagnostics> {
    let share = Share::of(state);
    for piece in pieces(state) {
        let in_place = match piece {
            Piece::Binding(o) => share.in_place(cluster, o, deadline).await?,
            Piece::Role(o) => share.in_place(cluster, o, deadline).await?,
            Piece::RoleBinding(o) => share.in_place(cluster, o, deadline).await?,
            Piece::ClusterInfo(o) => share.in_place(cluster, o, deadline).await?,
        };
        if !in_place {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Releases everything `prior` claimed (on destroy, after the token is
/// deleted).
pub(super) async fn delete(
    cluster: &Cluster,
    prior: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    release(cluster, prior, pieces(prior).into_iter(), deadline).await
}

async fn release(
    cluster: &Cluster,
    prior: &Model,
    pieces: impl Iterator<Item = Piece>,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let share = Share::of(prior);
    for piece in pieces {
        let name = piece.name().to_string();
        match piece {
            Piece::Binding(_) => {
                share
                    .release::<ClusterRoleBinding>(cluster, &name, deadline)
                    .await?
            }
            Piece::Role(_) => share.release::<Role>(cluster, &name, deadline).await?,
            Piece::RoleBinding(_) => {
                share
                    .release::<RoleBinding>(cluster, &name, deadline)
                    .await?
            }
            Piece::ClusterInfo(_) => share.release::<ConfigMap>(cluster, &name, deadline).await?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::claims::Shared;
    use super::*;

    #[test]
    fn kubeadms_bindings_per_group_and_cluster_info_only_when_asked() {
        let mut model = Model {
            token_id: Some("abcdef".into()),
            auth_extra_groups: Some(vec!["system:bootstrappers:a".into()]),
            api_server_endpoint: Some("https://10.0.0.1:6443".into()),
            cluster_ca_certificate: Some("pem".into()),
            ..Default::default()
        };
        assert!(pieces(&model).is_empty());
        model.manage_bootstrap_rbac = Some(true);
        let found: Vec<(String, String)> = pieces(&model)
            .iter()
            .map(|p| match p {
                Piece::Binding(b) => (p.name().to_string(), b.role_ref.name.clone()),
                Piece::Role(_) => (p.name().to_string(), "Role".into()),
                Piece::RoleBinding(b) => (p.name().to_string(), b.role_ref.name.clone()),
                Piece::ClusterInfo(c) => (
                    p.name().to_string(),
                    c.data.as_ref().unwrap()["kubeconfig"].clone(),
                ),
            })
            .collect();
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "cluster-info",
                "gpufleet:kubelet-bootstrap:system:bootstrappers:a",
                "gpufleet:node-autoapprove-bootstrap:system:bootstrappers:a",
                "gpufleet:node-autoapprove-certificate-rotation",
                "gpufleet:bootstrap-signer-clusterinfo",
                "gpufleet:bootstrap-signer-clusterinfo",
            ]
        );
        assert_eq!(found[1].1, NODE_BOOTSTRAPPER);
        assert_eq!(found[2].1, NODE_CLIENT);
        assert_eq!(found[3].1, SELF_NODE_CLIENT);
        assert_eq!(found[5].1, CLUSTER_INFO_READER);
        let kubeconfig: serde_json::Value = serde_saphyr::from_str(&found[0].1).unwrap();
        assert_eq!(
            kubeconfig["clusters"][0]["cluster"]["server"],
            "https://10.0.0.1:6443"
        );
    }

    /// What a read compares: the fields gpufleet writes, not the
    /// bootstrapsigner's signatures beside them.
    #[test]
    fn drift_is_judged_on_what_gpufleet_writes() {
        let model = Model {
            token_id: Some("abcdef".into()),
            auth_extra_groups: Some(vec!["system:bootstrappers:a".into()]),
            api_server_endpoint: Some("https://10.0.0.1:6443".into()),
            cluster_ca_certificate: Some("pem".into()),
            manage_bootstrap_rbac: Some(true),
            ..Default::default()
        };
        for piece in pieces(&model) {
            match piece {
                Piece::Binding(wanted) => {
                    let mut live = wanted.clone();
                    live.metadata.annotations = Some(BTreeMap::from([("x".into(), "y".into())]));
                    assert!(live.has_content_of(&wanted));
                    live.subjects.as_mut().unwrap()[0].name = "system:bootstrappers:b".into();
                    assert!(!live.has_content_of(&wanted));
                }
                Piece::Role(wanted) => {
                    let mut live = wanted.clone();
                    assert!(live.has_content_of(&wanted));
                    live.rules.as_mut().unwrap()[0].verbs.push("list".into());
                    assert!(!live.has_content_of(&wanted));
                }
                Piece::RoleBinding(wanted) => {
                    let mut live = wanted.clone();
                    assert!(live.has_content_of(&wanted));
                    live.subjects = None;
                    assert!(!live.has_content_of(&wanted));
                }
                Piece::ClusterInfo(wanted) => {
                    let mut live = wanted.clone();
                    let data = live.data.as_mut().unwrap();
                    data.insert("jws-kubeconfig-abcdef".into(), "signature".into());
                    assert!(live.has_content_of(&wanted));
                    live.data
                        .as_mut()
                        .unwrap()
                        .insert("kubeconfig".into(), "edited".into());
                    assert!(!live.has_content_of(&wanted));
                }
            }
        }
    }
}
