//! `gpufleet_node_join`: what a server needs to join the cluster as a node
//! of one kind of work, as Kubernetes' node bootstrap defines it. The
//! object is a bootstrap token (a `kube-system` Secret of type
//! `bootstrap.kubernetes.io/token`, rules from k8s.io/cluster-bootstrap
//! token/api and token/util); next to it, computed from the provider's
//! connection and the configuration, the join material: the API server, its
//! CA and the CA's public-key pin as kubeadm computes it, a `kubeadm join`
//! line, and a kubelet configuration fragment that registers the node with
//! its taints and labels, so it is never schedulable without them.
//!
//! What the Secret cannot say (ttl, rotation window, taints, labels) is
//! kept in one annotation on it, so an import by token id knows the whole
//! configuration and an edit of it shows as drift.

use std::collections::BTreeMap;

use async_trait::async_trait;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::taint::{check_unique, taint_attributes};
use crate::cluster::api::{Kind, Objects};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::timeouts::Timeouts;
use crate::framework::validators::{Validator, each, no_null_elements, not_empty, one_of};
use crate::framework::{PlanChange, Warnings};
use crate::kit::Cluster;
use crate::kit::object::AppliedObject;
use crate::kit::permissions::{APPLIED_OBJECT_VERBS, Permission};
use crate::protocol::schema::Nesting;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
use join_material::{kubelet_config, node_labels};
use token::{
    ID_LENGTH, SECRET_LENGTH, check_group, kubelet_labels, parse_duration, random_token_part,
    token_part, ttl_validator, window_validator,
};

mod cluster_side;
mod join_material;
mod token;

pub use cluster_side::PERMISSIONS as BOOTSTRAP_RBAC_PERMISSIONS;
pub use join_material::ca_cert_hash;

/// Where bootstrap tokens live (k8s.io/cluster-bootstrap token/api).
pub const NAMESPACE: &str = "kube-system";
const SECRET_PREFIX: &str = "bootstrap-token-";
const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// k8s.io/cluster-bootstrap token/api `KnownTokenUsages`.
const USAGES: &[&str] = &["authentication", "signing"];
const DEFAULT_GROUP: &str = "system:bootstrappers:gpufleet";
/// The annotation holding what the Secret's own keys cannot say.
const SETTINGS_ANNOTATION: &str = "gpufleet/node-join";

/// Its bootstrap token Secret, as an applied object.
pub struct BootstrapToken;

/// What it needs of the API: bootstrap token Secrets, in `kube-system`
/// only, as any applied object.
pub const PERMISSIONS: &[Permission] = &[Permission::in_namespace(
    NAMESPACE,
    "",
    "secrets",
    APPLIED_OBJECT_VERBS,
)];

/// A taint as configured, in `gpufleet_node_taint`'s shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct TaintSpec {
    key: String,
    value: Option<String>,
    effect: String,
}

/// The resource's state.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Model {
    id: Option<String>,
    token_id: Option<String>,
    token_secret: Option<String>,
    token: Option<String>,
    secret_name: Option<String>,
    ttl: Option<String>,
    rotate_when_expires_within: Option<String>,
    expiration: Option<String>,
    usages: Option<Vec<String>>,
    auth_extra_groups: Option<Vec<String>>,
    taints: Option<Vec<TaintSpec>>,
    labels: Option<BTreeMap<String, String>>,
    sharing_config: Option<String>,
    manage_bootstrap_rbac: Option<bool>,
    node_labels: Option<BTreeMap<String, String>>,
    kubelet_config: Option<String>,
    kubelet_node_labels_flag: Option<String>,
    api_server_endpoint: Option<String>,
    cluster_ca_certificate: Option<String>,
    ca_cert_hash: Option<String>,
    kubeadm_join_command: Option<String>,
    timeouts: Option<Timeouts>,
}

/// The annotation's content: the configuration the Secret's keys do not
/// carry.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Settings {
    ttl: Option<String>,
    rotate_when_expires_within: Option<String>,
    taints: Option<Vec<TaintSpec>>,
    labels: Option<BTreeMap<String, String>>,
    sharing_config: Option<String>,
    manage_bootstrap_rbac: Option<bool>,
}

impl Model {
    fn settings(&self) -> Settings {
        Settings {
            ttl: self.ttl.clone(),
            rotate_when_expires_within: self.rotate_when_expires_within.clone(),
            taints: self.taints.clone(),
            labels: self.labels.clone(),
            sharing_config: self.sharing_config.clone(),
            manage_bootstrap_rbac: self.manage_bootstrap_rbac,
        }
    }
}

/// Reading the device-plugin ConfigMap, to check `sharing_config`.
pub const SHARING_CONFIG_PERMISSIONS: &[Permission] = &[Permission::in_operator_namespace(
    "",
    "configmaps",
    &["get"],
)];

/// A warning when `key`, known at plan, is not a key of the device-plugin
/// ConfigMap: a node labelled with it gets no configuration (NVIDIA
/// k8s-device-plugin, cmd/config-manager/main.go, updateConfigName:
/// "specified config ... does not exist"). A key another resource of the
/// run writes is referenced (`gpufleet_node_sharing.NAME.config_key`),
/// unknown until that is applied, and not checked; nor is anything when
/// the map cannot be read at plan.
async fn unknown_sharing_config(cluster: &Cluster, key: &str) -> Diagnostics {
    let map = &cluster.device_plugin_config;
    let Ok(keys) = map.keys(&cluster.kubernetes, Deadline::at_plan()).await else {
        return Diagnostics::default();
    };
    if keys.as_ref().is_some_and(|k| k.iter().any(|k| k == key)) {
        return Diagnostics::default();
    }
    let found = match keys {
        None => "which does not exist".to_string(),
        Some(keys) if keys.is_empty() => "which has no keys".to_string(),
        Some(keys) => format!(
            "whose keys are {}",
            keys.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Diagnostic::warning(
        "Unknown sharing configuration",
        format!(
            "Key `{key}` is not in {map} ({found}), so a node joining with the label `{}={key}` gets no device-plugin configuration: NVIDIA's config manager refuses a label naming a missing key. gpufleet_node_sharing writes key `node-NAME`: set `sharing_config = gpufleet_node_sharing.NAME.config_key`, which also applies it first; a fleet's key is `fleet-NAME`, gpufleet_gpu_sharing's `{}`.",
            crate::resources::sharing::CONFIG_LABEL,
            crate::resources::sharing::DEFAULT_KEY,
        ),
    )
    .at(AttributePath::attr("sharing_config"))
    .into()
}

fn bytes(text: &str) -> ByteString {
    ByteString(text.as_bytes().to_vec())
}

#[async_trait]
impl AppliedObject for BootstrapToken {
    type Model = Model;
    type Object = Secret;
    type Resolved = ();
    const NAME: &'static str = "node_join";
    const KIND: Kind = Kind::new("v1", "Secret", "secrets");
    const IMPORT_ID: &'static str = "token id";
    const IDENTITY: &'static str = "token_id";

    fn identity_description(&self) -> String {
        "The token id, the part of the token before the dot.".into()
    }

    fn check_import_id(&self, id: &str) -> Result<(), Diagnostics> {
        token_part(ID_LENGTH)(id).map_err(|e| {
            Diagnostics::from(Diagnostic::error(
                "Invalid import ID",
                format!("{id:?} {e}: import a bootstrap token by its id, the part of the token before the dot."),
            ))
        })
    }

    /// Generates what the configuration leaves to the provider, and checks
    /// the connection can give the join material, before the Secret is
    /// written.
    async fn prepare_create(
        &self,
        cluster: &Cluster,
        planned: &mut Model,
    ) -> Result<(), Diagnostics> {
        if planned.token_id.is_none() {
            planned.token_id = Some(random_token_part(ID_LENGTH)?);
        }
        if planned.token_secret.is_none() {
            planned.token_secret = Some(random_token_part(SECRET_LENGTH)?);
        }
        let ttl = parse_duration(planned.ttl.as_deref().unwrap_or("24h")).map_err(|e| {
            Diagnostic::error("Invalid attribute value", e).at(AttributePath::attr("ttl"))
        })?;
        let expiration = Timestamp::now()
            .checked_add(ttl)
            .and_then(|t| t.round(jiff::Unit::Second))
            .map_err(|e| {
                Diagnostic::error("Invalid attribute value", e.to_string())
                    .at(AttributePath::attr("ttl"))
            })?;
        planned.expiration = Some(expiration.to_string());
        self.derive(planned);
        planned.join_material(cluster).await
    }

    /// The join material, which comes from the connection.
    async fn complete(&self, cluster: &Cluster, state: &mut Model) -> Result<(), Diagnostics> {
        state.join_material(cluster).await
    }

    fn schema(&self) -> ObjectSchema {
        let computed = |name| Attr::string(name).computed().use_state_for_unknown();
        ObjectSchema::new(
            "Everything a server needs to join the cluster as a node of one kind of work: a short-lived bootstrap token (a `kube-system` Secret of type `bootstrap.kubernetes.io/token`; destroying the resource revokes it), the API server and its CA pin, a `kubeadm join` line, and a kubelet configuration fragment that registers the node with its taints and labels, so it is never schedulable without them.",
            vec![
                Attr::string("id").derived_from(&["token_id"]).describe("The token id."),
                Attr::string("token_id")
                    .optional()
                    .computed()
                    .use_state_for_unknown()
                    .requires_replace()
                    .validate(Validator::string_with("Six lower-case letters or digits.", token_part(ID_LENGTH)))
                    .describe("The token's public id; generated when unset."),
                Attr::string("token_secret")
                    .optional()
                    .computed()
                    .sensitive()
                    .use_state_for_unknown()
                    .requires_replace()
                    .validate(Validator::string_with("Sixteen lower-case letters or digits.", token_part(SECRET_LENGTH)))
                    .describe("The token's secret; generated from the operating system's CSPRNG when unset."),
                Attr::string("token")
                    .derived_from(&["token_id", "token_secret"])
                    .sensitive()
                    .describe("The bootstrap token, `<token_id>.<token_secret>`."),
                Attr::string("secret_name")
                    .derived_from(&["token_id"])
                    .describe("The Secret in `kube-system` holding the token, `bootstrap-token-<token_id>`."),
                Attr::string("ttl")
                    .default(Value::string("24h"))
                    .requires_replace()
                    .validate(ttl_validator())
                    .describe("How long the token is valid after it is created; the API server refuses it afterwards and the token cleaner deletes it. A change issues a new token."),
                Attr::string("rotate_when_expires_within")
                    .default(Value::string("1h"))
                    .validate(window_validator())
                    .describe("A plan made when the token expires within this duration (or has expired) replaces it with a new one. Must be shorter than `ttl`."),
                computed("expiration").describe("When the token expires (RFC 3339, UTC)."),
                Attr::string_set("usages")
                    .default(Value::Set(USAGES.iter().map(|u| Value::string(*u)).collect()))
                    .validate(not_empty())
                    .validate(no_null_elements())
                    .validate(each(one_of(USAGES)))
                    .describe("What the token may be used for: `authentication` (a kubelet's TLS bootstrap) and `signing` (the `cluster-info` ConfigMap's signature that `kubeadm join` verifies); both when unset."),
                Attr::string_list("auth_extra_groups")
                    .default(Value::List(vec![Value::string(DEFAULT_GROUP)]))
                    .validate(not_empty())
                    .validate(no_null_elements())
                    .validate(Validator::new("Each a bootstrap group, `system:bootstrappers:...`.", |v| {
                        v.elements()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .try_for_each(check_group)
                    }))
                    .describe("Groups the token authenticates as, besides `system:bootstrappers`. RBAC bindings for node bootstrap name them. `[\"system:bootstrappers:gpufleet\"]` when unset."),
                Attr::nested("taints", Nesting::List, taint_attributes())
                    .optional()
                    .describe("Taints the node registers with (`gpufleet_node_taint`'s shape). Each (key, effect) pair at most once."),
                Attr::string_map("labels")
                    .optional()
                    .validate(kubelet_labels())
                    .describe("Labels the node registers with."),
                Attr::string("sharing_config")
                    .optional()
                    .validate(crate::cluster::names::label_value())
                    .describe("A device-plugin configuration key: the node registers with the label `nvidia.com/device-plugin.config` set to it. Reference a `gpufleet_node_sharing`'s `config_key` (`node-NAME`), which is then written first; a plan that creates or changes the token warns when a key known at plan is not in the device-plugin ConfigMap."),
                Attr::bool("manage_bootstrap_rbac")
                    .default(Value::Bool(false))
                    .describe("Also set up what `kubeadm init` does for node bootstrap, under gpufleet's names: ClusterRoleBindings letting each of `auth_extra_groups` post node CSRs (`system:node-bootstrapper`) and have node client certificates approved (`...:nodeclient`), one letting nodes have their renewals approved (`...:selfnodeclient`, group `system:nodes`), read access for anyone to `kube-public/cluster-info`, and that ConfigMap (the API server and CA) if absent. Objects of those names gpufleet did not create are left alone; those it created are shared by the tokens that ask for them and deleted with the last. A read reports `false` while one it created has changed or is gone, so the next apply puts it back. Needs the `bind` and `kube-public` rules of docs/rbac.yaml."),
                Attr::string_map("node_labels")
                    .derived_from(&["labels", "sharing_config"])
                    .exact()
                    .describe("The labels the node registers with: `labels`, and the sharing label."),
                Attr::string("kubelet_config")
                    .derived_from(&["taints"])
                    .describe("A KubeletConfiguration fragment (YAML) with `registerWithTaints`, to merge into the kubelet's configuration file."),
                Attr::string("kubelet_node_labels_flag")
                    .derived_from(&["labels", "sharing_config"])
                    .exact()
                    .describe("The kubelet flag `--node-labels=...` for `node_labels`; null when there are none."),
                computed("api_server_endpoint").describe("The API server's URL, as the provider reaches it."),
                computed("cluster_ca_certificate").describe("The API server's CA certificate (PEM), as the provider's connection trusts it."),
                computed("ca_cert_hash").describe("The CA's public-key pin, `sha256:<hex>` of its SubjectPublicKeyInfo, as `kubeadm join --discovery-token-ca-cert-hash` takes it."),
                computed("kubeadm_join_command")
                    .sensitive()
                    .describe("`kubeadm join <endpoint> --token <token> --discovery-token-ca-cert-hash <pin>`."),
            ],
        )
    }

    fn timeouts(model: &Model) -> Option<&Timeouts> {
        model.timeouts.as_ref()
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        check_unique(config, &["taints"], diagnostics);
        let duration = |name| {
            config
                .attr(name)
                .as_str()
                .and_then(|t| parse_duration(t).ok())
        };
        let ttl = duration("ttl").or_else(|| {
            config
                .attr("ttl")
                .is_null()
                .then(|| SignedDuration::from_hours(24))
        });
        if let (Some(ttl), Some(window)) = (ttl, duration("rotate_when_expires_within"))
            && window >= ttl
        {
            diagnostics.error_at(
                AttributePath::attr("rotate_when_expires_within"),
                "Rotation window too long",
                format!(
                    "{window:#} is not shorter than the token's ttl ({ttl:#}): every plan would replace the token."
                ),
            );
        }
    }

    fn derive(&self, model: &mut Model) {
        model.id = model.token_id.clone();
        model.secret_name = model
            .token_id
            .as_ref()
            .map(|id| format!("{SECRET_PREFIX}{id}"));
        model.token = match (&model.token_id, &model.token_secret) {
            (Some(id), Some(secret)) => Some(format!("{id}.{secret}")),
            _ => None,
        };
        let labels = node_labels(model);
        model.kubelet_node_labels_flag = (!labels.is_empty()).then(|| {
            let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("--node-labels={}", pairs.join(","))
        });
        model.node_labels = Some(labels).filter(|l| !l.is_empty());
        model.kubelet_config = Some(kubelet_config(model.taints.as_deref().unwrap_or_default()));
    }

    /// A token that expires within the rotation window is replaced. A plan
    /// that creates or changes it checks `sharing_config` against the
    /// device-plugin ConfigMap.
    async fn modify_plan(
        &self,
        cluster: &Cluster,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        if (change.prior.is_null() || *change.planned != *change.prior)
            && let Some(key) = change.config.attr("sharing_config").as_str()
        {
            diagnostics.extend(unknown_sharing_config(cluster, key).await);
        }
        let (Some(expiration), Some(window)) = (
            change.prior.attr("expiration").as_str(),
            change.planned.attr("rotate_when_expires_within").as_str(),
        ) else {
            return;
        };
        let (Ok(expiration), Ok(window)) =
            (expiration.parse::<Timestamp>(), parse_duration(window))
        else {
            return;
        };
        if expiration.duration_since(Timestamp::now()) > window {
            return;
        }
        for name in ["expiration", "token", "kubeadm_join_command"] {
            crate::framework::plan::set(change.planned, name, Value::UNKNOWN);
        }
        for name in ["token_id", "token_secret", "id", "secret_name"] {
            if change.config.attr(name).is_null() {
                crate::framework::plan::set(change.planned, name, Value::UNKNOWN);
            }
        }
        change
            .requires_replace
            .push(AttributePath::attr("expiration"));
    }

    /// After the token is written: the API server must take it, and the
    /// cluster side it asks for is set up.
    async fn write_companions(
        &self,
        cluster: &Cluster,
        _: &(),
        prior: Option<&Model>,
        state: &mut Model,
        deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        cluster_side::check_authentication(cluster, prior, state, deadline).await?;
        cluster_side::write(cluster, prior, state, deadline).await?;
        Ok(Warnings::default())
    }

    /// Drift of the bootstrap RBAC objects (one changed, or gone) shows
    /// as `manage_bootstrap_rbac = false`, which the apply puts back.
    async fn read_companions(
        &self,
        cluster: &Cluster,
        state: &mut Model,
        _prior: &Model,
        _importing: bool,
        deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        if !cluster_side::in_place(cluster, state, deadline).await? {
            state.manage_bootstrap_rbac = Some(false);
        }
        Ok(())
    }

    async fn delete_companions(
        &self,
        cluster: &Cluster,
        prior: &Model,
        deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        cluster_side::delete(cluster, prior, deadline).await?;
        Ok(Warnings::default())
    }

    async fn objects<'c>(&self, cluster: &'c Cluster) -> Result<Objects<'c, Secret>, GaveUp> {
        cluster.kubernetes.namespaced(Self::KIND, NAMESPACE).await
    }

    fn object_name(model: &Model) -> &str {
        model.secret_name.as_deref().unwrap_or_default()
    }

    fn import_id_of(model: &Model) -> &str {
        model.token_id.as_deref().unwrap_or_default()
    }

    fn resolve(&self, _: &Cluster, _: &Model) {}

    fn to_object(&self, _: &(), model: &Model) -> Result<Secret, Diagnostics> {
        let missing = |what: &str| -> Diagnostics {
            Diagnostic::error(
                "Incomplete bootstrap token",
                format!(
                    "The token has no {what}. This is a bug in the provider; please report it."
                ),
            )
            .into()
        };
        let id = model.token_id.as_deref().ok_or_else(|| missing("id"))?;
        let secret = model
            .token_secret
            .as_deref()
            .ok_or_else(|| missing("secret"))?;
        let expiration = model
            .expiration
            .as_deref()
            .ok_or_else(|| missing("expiration"))?;
        let mut data = BTreeMap::from([
            ("token-id".to_string(), bytes(id)),
            ("token-secret".to_string(), bytes(secret)),
            ("expiration".to_string(), bytes(expiration)),
        ]);
        for usage in model.usages.iter().flatten() {
            data.insert(format!("usage-bootstrap-{usage}"), bytes("true"));
        }
        if let Some(groups) = &model.auth_extra_groups {
            data.insert("auth-extra-groups".to_string(), bytes(&groups.join(",")));
        }
        let settings =
            serde_json::to_string(&model.settings()).expect("node join settings serialize");
        Ok(Secret {
            metadata: ObjectMeta {
                name: model.secret_name.clone(),
                namespace: Some(NAMESPACE.to_string()),
                annotations: Some(BTreeMap::from([(
                    SETTINGS_ANNOTATION.to_string(),
                    settings,
                )])),
                ..Default::default()
            },
            type_: Some(SECRET_TYPE.to_string()),
            data: Some(data),
            ..Default::default()
        })
    }

    fn state_from(
        &self,
        _: &Cluster,
        live: Secret,
        prior: &Model,
        _importing: bool,
    ) -> Result<Model, Diagnostics> {
        let data = live.data.unwrap_or_default();
        let text = |key: &str| {
            data.get(key)
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        };
        let usages: Vec<String> = USAGES
            .iter()
            .filter(|u| text(&format!("usage-bootstrap-{u}")).as_deref() == Some("true"))
            .map(|u| u.to_string())
            .collect();
        let settings: Settings = live
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SETTINGS_ANNOTATION))
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        // Derived values too, so that every state a write or read leaves,
        // a failed one's included, shows them.
        let mut state = Model {
            token_id: text("token-id"),
            token_secret: text("token-secret"),
            expiration: text("expiration"),
            usages: Some(usages),
            auth_extra_groups: text("auth-extra-groups")
                .map(|g| g.split(',').map(str::to_string).collect()),
            ttl: settings.ttl,
            rotate_when_expires_within: settings.rotate_when_expires_within,
            taints: settings.taints,
            labels: settings.labels,
            sharing_config: settings.sharing_config,
            manage_bootstrap_rbac: settings.manage_bootstrap_rbac,
            api_server_endpoint: prior.api_server_endpoint.clone(),
            cluster_ca_certificate: prior.cluster_ca_certificate.clone(),
            ca_cert_hash: prior.ca_cert_hash.clone(),
            timeouts: prior.timeouts.clone(),
            ..Default::default()
        };
        self.derive(&mut state);
        Ok(state)
    }

    fn imported(&self, id: &str) -> Model {
        Model {
            token_id: Some(id.to_string()),
            secret_name: Some(format!("{SECRET_PREFIX}{id}")),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests;
