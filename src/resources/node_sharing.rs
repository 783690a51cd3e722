//! `gpufleet_node_sharing`: GPU sharing for existing nodes outside fleets
//! (self-managed servers), by node name or label selector.
//!
//! It writes its own key `node-NAME` of the device-plugin ConfigMap, then
//! labels the nodes with `nvidia.com/device-plugin.config=node-NAME` (and
//! `nvidia.com/mig.config=LAYOUT` for MIG). Labels are a map that
//! server-side apply owns key by key, so each write is an apply of only
//! these labels with this resource's own field manager, guarded by the
//! node's resourceVersion and retried on conflict: other labels and their
//! owners are untouched, a node is never re-created by a write that races
//! its deletion, and releasing removes only labels this resource still owns.
//!
//! When the configuration under the key changes, the device-plugin pods on
//! the labelled nodes restart so they read it (the GPU Operator does not
//! notice a changed ConfigMap); newly labelled nodes switch by themselves.
//!
//! A read reports `labels` as applied where every targeted node carries
//! them, and otherwise a marker such as `(missing on node gpu-7)`, which no
//! configuration holds, so the plan shows the labels being put back.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::sharing::writes::{ConfigKey, observed_config};
use super::sharing::{self, CONFIG_LABEL, MIG_CONFIG_LABEL, Settings, Strategy, field_manager};
use crate::cluster::Cluster;
use crate::cluster::Kubernetes;
use crate::cluster::client::get;
use crate::cluster::errors::status;
use crate::cluster::names::{check_dns1123_subdomain, dns1123_label, dns1123_subdomain, labels};
use crate::cluster::permissions::Permission;
use crate::cluster::retry::{Deadline, timeouts_attribute};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::timeouts::{Operation, Timeouts};
use crate::framework::validators::exactly_one_of;
use crate::framework::{Failed, Identity, IdentityAttr, Private, Resource, Stored, Warnings};
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

const KIND: &str = "v1 Node";

/// What it needs of the API besides its configuration key
/// ([`sharing::writes::PERMISSIONS`]): `get` a named node, `list` the nodes
/// a selector matches, `patch` (server-side apply) our labels on them.
pub const PERMISSIONS: &[Permission] =
    &[Permission::cluster("", "nodes", &["get", "list", "patch"])];

/// The `gpufleet_node_sharing` resource.
pub struct NodeSharing;

/// The resource's state.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    id: Option<String>,
    name: String,
    node_name: Option<String>,
    node_selector: Option<BTreeMap<String, String>>,
    #[serde(flatten)]
    settings: Settings,
    labels: Option<BTreeMap<String, String>>,
    nodes: Option<BTreeSet<String>>,
    device_plugin_config: Option<String>,
    timeouts: Option<Timeouts>,
}

impl Model {
    fn deadline(&self, operation: Operation) -> Deadline {
        Deadline::of(self.timeouts.as_ref(), operation)
    }

    fn key(&self) -> ConfigKey {
        ConfigKey {
            key: format!("node-{}", self.name),
            owner: format!("node-sharing-{}", self.name),
        }
    }

    fn manager(&self) -> String {
        field_manager(&self.key().owner)
    }

    fn wanted_labels(&self) -> BTreeMap<String, String> {
        self.settings.node_labels(&self.key().key)
    }

    fn config_text(&self) -> String {
        self.settings.device_plugin_config(None, &[]).to_yaml()
    }

    fn selector(&self) -> Option<String> {
        self.node_selector.as_ref().map(|s| {
            s.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
    }
}

fn name_of(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

fn labels_of(node: &Node) -> BTreeMap<String, String> {
    node.metadata.labels.clone().unwrap_or_default()
}

/// The nodes the model targets that exist now.
async fn targeted(
    kubernetes: &Kubernetes,
    api: &Api<Node>,
    model: &Model,
    action: &str,
    deadline: Deadline,
) -> Result<Vec<Node>, Diagnostics> {
    match (&model.node_name, model.selector()) {
        (Some(name), _) => Ok(get_node(kubernetes, api, name, action, deadline)
            .await?
            .into_iter()
            .collect()),
        (None, Some(selector)) => {
            let params = ListParams::default().labels(&selector);
            kubernetes
                .retried(
                    deadline,
                    action,
                    &format!("LIST {KIND} with labels {selector}"),
                    KIND,
                    || async { Ok(api.list(&params).await?.items) },
                )
                .await
        }
        (None, None) => Ok(Vec::new()),
    }
}

async fn get_node(
    kubernetes: &Kubernetes,
    api: &Api<Node>,
    name: &str,
    action: &str,
    deadline: Deadline,
) -> Result<Option<Node>, Diagnostics> {
    let request = format!("GET {KIND} {name:?}");
    kubernetes
        .retried(deadline, action, &request, KIND, || get(api, name))
        .await
}

/// Applies exactly `labels` as `manager` on node `name` (none: releases
/// ours), under the retry policy (a conflict reads the node again); false
/// when the node does not exist.
async fn apply_labels(
    kubernetes: &Kubernetes,
    api: &Api<Node>,
    name: &str,
    labels: Option<&BTreeMap<String, String>>,
    manager: &str,
    deadline: Deadline,
) -> Result<bool, Diagnostics> {
    let action = match labels {
        Some(_) => format!("label Node {name:?}"),
        None => format!("remove the sharing labels of Node {name:?}"),
    };
    let request = format!(
        "GET, then PATCH {KIND} {name:?} (server-side apply of its labels as {manager}, with the node's resourceVersion)"
    );
    let attempt = || async move {
        let Some(node) = get(api, name).await? else {
            return Ok(false);
        };
        let mut metadata =
            json!({ "name": name, "resourceVersion": node.metadata.resource_version });
        if let Some(labels) = labels {
            metadata["labels"] = json!(labels);
        }
        let patch = json!({ "apiVersion": "v1", "kind": "Node", "metadata": metadata });
        match api
            .patch(
                name,
                &PatchParams::apply(manager).force(),
                &Patch::Apply(&patch),
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if status(&e) == Some(404) => Ok(false),
            Err(e) => Err(e),
        }
    };
    kubernetes
        .retried(deadline, &action, &request, KIND, attempt)
        .await
}

/// What a read reports for our labels: as wanted where every targeted node
/// has them, else a marker naming a node that does not, or a node no longer
/// targeted that still does.
fn observed_labels(
    wanted: &BTreeMap<String, String>,
    targets: &[Node],
    stale: &[Node],
) -> BTreeMap<String, String> {
    wanted
        .iter()
        .map(|(key, value)| {
            let off = targets
                .iter()
                .find(|n| labels_of(n).get(key) != Some(value))
                .map(|n| match labels_of(n).get(key) {
                    None => format!("(missing on node {})", name_of(n)),
                    Some(other) => format!("({other} on node {})", name_of(n)),
                })
                .or_else(|| {
                    stale
                        .iter()
                        .find(|n| labels_of(n).get(key) == Some(value))
                        .map(|n| {
                            format!(
                                "(still on node {}, which is no longer targeted)",
                                name_of(n)
                            )
                        })
                });
            (key.clone(), off.unwrap_or_else(|| value.clone()))
        })
        .collect()
}

impl NodeSharing {
    /// Writes the key, then labels the targeted nodes and releases our
    /// labels on nodes no longer targeted.
    async fn write(
        &self,
        cluster: &Cluster,
        prior: Option<&Model>,
        mut planned: Model,
        operation: Operation,
    ) -> Result<Stored<Model>, Failed<Model>> {
        let kubernetes = &cluster.kubernetes;
        let deadline = planned.deadline(operation);
        let key = planned.key();
        let text = planned.config_text();
        let changed = key.write(cluster, &text, deadline).await?;
        planned.device_plugin_config = Some(text);
        let manager = planned.manager();
        let wanted = planned.wanted_labels();
        let mut written = BTreeSet::new();
        let result: Result<(), Diagnostics> = async {
            let api: Api<Node> = kubernetes.api().await?;
            let targets = targeted(
                kubernetes,
                &api,
                &planned,
                "list the Nodes to label",
                deadline,
            )
            .await?;
            if targets.is_empty()
                && let Some(name) = &planned.node_name
            {
                return Err(Diagnostic::error(
                    "Node not found",
                    format!(
                        "Node {name:?} does not exist on {}, so it cannot be labelled.",
                        kubernetes.describe()
                    ),
                )
                .at(AttributePath::attr("node_name"))
                .into());
            }
            for node in &targets {
                let name = name_of(node);
                match apply_labels(kubernetes, &api, name, Some(&wanted), &manager, deadline).await
                {
                    Ok(true) => {
                        written.insert(name.to_string());
                    }
                    Ok(false) => {}
                    Err(d) => {
                        // The write may have landed before the policy gave up.
                        written.insert(name.to_string());
                        return Err(d);
                    }
                }
            }
            let before = prior.and_then(|p| p.nodes.clone()).unwrap_or_default();
            for name in before.difference(&written) {
                apply_labels(kubernetes, &api, name, None, &manager, deadline).await?;
            }
            if changed {
                key.restart_readers(cluster, deadline).await?;
            }
            Ok(())
        }
        .await;
        planned.labels = Some(wanted);
        match result {
            Ok(()) => {
                planned.nodes = Some(written);
                Ok(planned.into())
            }
            Err(d) => {
                // Everything that may carry our labels stays in state.
                written.extend(prior.and_then(|p| p.nodes.clone()).into_iter().flatten());
                planned.nodes = Some(written);
                Err(Failed::after_write(planned, d))
            }
        }
    }
}

/// The resource's identity: its name and its target, the node or the selector.
#[derive(Default, Serialize, Deserialize)]
pub struct NameTargetIdentity {
    name: String,
    node_name: Option<String>,
    node_selector: Option<String>,
}

#[async_trait]
impl Resource<Cluster> for NodeSharing {
    type Model = Model;
    type IdentityModel = NameTargetIdentity;

    fn name(&self) -> &'static str {
        "node_sharing"
    }

    /// Mutable: the target changes in place (the labels move to the new nodes).
    fn identity(&self) -> Identity {
        Identity::new(
            &["name", "node_name", "node_selector"],
            vec![
                IdentityAttr::string("name")
                    .required_for_import()
                    .describe("The name."),
                IdentityAttr::string("node_name")
                    .describe("The configured node; null when a selector picks the nodes."),
                IdentityAttr::string("node_selector")
                    .describe("The selector as `key=value,...`; null for a named node."),
            ],
        )
        .mutable()
    }

    fn identity_of(&self, state: &Model) -> NameTargetIdentity {
        NameTargetIdentity {
            name: state.name.clone(),
            node_name: state.node_name.clone(),
            node_selector: state.selector(),
        }
    }

    /// The `NAME:NODE` or `NAME:key=value,...` an import by ID takes.
    fn import_id(&self, identity: NameTargetIdentity) -> Result<String, Diagnostics> {
        let target = identity
            .node_name
            .or(identity.node_selector)
            .ok_or_else(|| {
                Diagnostics::from(Diagnostic::error(
                    "Missing identity attribute",
                    "An import by identity needs `node_name` or `node_selector`.",
                ))
            })?;
        Ok(format!("{}:{target}", identity.name))
    }

    fn schema(&self) -> ObjectSchema {
        let mut attrs = vec![
            Attr::string("id").derived_from(&["name"]).describe("The name."),
            Attr::string("name")
                .required()
                .requires_replace()
                .validate(dns1123_label())
                .describe("Names the configuration: key `node-NAME` of the device-plugin ConfigMap, which the nodes' `nvidia.com/device-plugin.config` label selects."),
            Attr::string("node_name")
                .optional()
                .validate(dns1123_subdomain())
                .describe("The node to configure."),
            Attr::string_map("node_selector")
                .optional()
                .validate(labels())
                .describe("Labels: every node carrying all of them at apply time is configured, and a node matching later shows up in the next plan."),
        ];
        attrs.extend(sharing::attributes(Strategy::NODES, true));
        attrs.extend([
            Attr::string_map("labels")
                .derived_from(&["name", "strategy", "mig_layout"])
                .observed()
                .describe("The labels this resource puts on the nodes: `nvidia.com/device-plugin.config` and, for MIG, `nvidia.com/mig.config`."),
            Attr::string_set("nodes")
                .derived_from(&["node_name"])
                .describe("The nodes carrying this resource's labels."),
            Attr::string("device_plugin_config")
                .derived_from(&["strategy", "replicas", "mig_layout", "rename_by_default", "fail_requests_greater_than_one"])
                .observed()
                .describe("The device-plugin configuration (YAML) under key `node-NAME`."),
            timeouts_attribute(),
        ]);
        ObjectSchema::new(
            "GPU sharing for existing nodes outside fleets, such as self-managed servers: its own device-plugin configuration, selected by a node label that only this resource writes (other labels and their owners are left alone).",
            attrs,
        )
        .validate(exactly_one_of(&["node_name", "node_selector"]))
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        if config
            .attr("node_selector")
            .entries()
            .is_some_and(BTreeMap::is_empty)
        {
            diagnostics.error_at(
                AttributePath::attr("node_selector"),
                "Empty node selector",
                "An empty selector matches every node, control plane included: list at least one label.",
            );
        }
        sharing::check(
            config,
            &AttributePath::root(),
            Strategy::NODES,
            sharing::Models::Unknown,
            diagnostics,
        );
    }

    fn derive(&self, model: &mut Model) {
        model.id = Some(model.name.clone());
        model.labels = Some(model.wanted_labels());
        model.device_plugin_config = Some(model.config_text());
        if let Some(name) = &model.node_name {
            model.nodes = Some(BTreeSet::from([name.clone()]));
        }
    }

    async fn create(
        &self,
        cluster: &Cluster,
        planned: Model,
    ) -> Result<Stored<Model>, Failed<Model>> {
        self.write(cluster, None, planned, Operation::Create).await
    }

    async fn read(
        &self,
        cluster: &Cluster,
        current: Model,
        private: &Private,
    ) -> Result<Option<Stored<Model>>, Diagnostics> {
        let kubernetes = &cluster.kubernetes;
        let api: Api<Node> = kubernetes.api().await?;
        let deadline = current.deadline(Operation::Read);
        let action = "read the labelled Nodes";
        let targets = targeted(kubernetes, &api, &current, action, deadline).await?;
        if targets.is_empty() && current.node_name.is_some() {
            return Ok(None);
        }
        let live = current.key().read(cluster, deadline).await?;
        let mut state = current;
        if private.importing {
            let Some(text) = &live else { return Ok(None) };
            let parsed = sharing::device_plugin::parse(text).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    "Unreadable device-plugin configuration",
                    format!(
                        "Key `node-{}` of {} is not a configuration the device plugin accepts: {e}",
                        state.name, cluster.device_plugin_config
                    ),
                ))
            })?;
            let layout = targets
                .iter()
                .find_map(|n| labels_of(n).get(MIG_CONFIG_LABEL).cloned());
            state.settings = sharing::settings_from(&parsed, layout);
        }
        let names: BTreeSet<&str> = targets.iter().map(name_of).collect();
        let mut stale = Vec::new();
        for name in state.nodes.iter().flatten() {
            if !names.contains(name.as_str())
                && let Some(node) = get_node(kubernetes, &api, name, action, deadline).await?
            {
                stale.push(node);
            }
        }
        let wanted = state.wanted_labels();
        let key = state.key().key;
        state.nodes = Some(
            targets
                .iter()
                .chain(&stale)
                .filter(|n| labels_of(n).get(CONFIG_LABEL) == Some(&key))
                .map(|n| name_of(n).to_string())
                .collect(),
        );
        state.labels = Some(observed_labels(&wanted, &targets, &stale));
        state.device_plugin_config = observed_config(live, Some(&state.config_text()));
        Ok(Some(state.into()))
    }

    async fn update(
        &self,
        cluster: &Cluster,
        prior: Model,
        planned: Model,
        _private: &Private,
    ) -> Result<Stored<Model>, Failed<Model>> {
        self.write(cluster, Some(&prior), planned, Operation::Update)
            .await
    }

    async fn delete(
        &self,
        cluster: &Cluster,
        prior: Model,
        _private: &Private,
    ) -> Result<Warnings, Diagnostics> {
        let kubernetes = &cluster.kubernetes;
        let api: Api<Node> = kubernetes.api().await?;
        let deadline = prior.deadline(Operation::Delete);
        let manager = prior.manager();
        for name in prior.nodes.iter().flatten() {
            apply_labels(kubernetes, &api, name, None, &manager, deadline).await?;
        }
        prior.key().release(cluster, deadline).await?;
        Ok(Warnings::default())
    }

    fn import(&self, id: &str) -> Result<Model, Diagnostics> {
        let invalid = |why: String| -> Diagnostics {
            Diagnostic::error(
                "Invalid import ID",
                format!("Import by `NAME:NODE` or `NAME:key=value,...` (the resource's name, then its node or selector): {why}"),
            )
            .into()
        };
        let (name, target) = id
            .split_once(':')
            .ok_or_else(|| invalid(format!("{id:?} has no `:`")))?;
        check_dns1123_subdomain(name).map_err(invalid)?;
        let mut model = Model {
            name: name.to_string(),
            ..Default::default()
        };
        if target.contains('=') {
            let selector = target
                .split(',')
                .map(|pair| {
                    pair.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .ok_or_else(|| invalid(format!("{pair:?} is not key=value")))
                })
                .collect::<Result<BTreeMap<_, _>, _>>()?;
            model.node_selector = Some(selector);
        } else {
            check_dns1123_subdomain(target).map_err(invalid)?;
            model.node_name = Some(target.to_string());
        }
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::LabelScheme;
    use crate::framework::testkit::{Harness, errors};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn plans_labels_and_configuration() {
        let h = Harness::new(NodeSharing);
        let config = h.value(json!({"name": "dgx", "node_name": "dgx-1", "strategy": "mig", "mig_layout": "all-1g.10gb", "replicas": 2}));
        let plan = h.plan(&Cluster::offline(LabelScheme::Cfke), &Value::Null, &config);
        assert!(
            errors(&plan.diagnostics).is_empty(),
            "{:?}",
            plan.diagnostics
        );
        assert_eq!(
            plan.planned_state.attr("labels").to_json(),
            json!({CONFIG_LABEL: "node-dgx", MIG_CONFIG_LABEL: "all-1g.10gb"})
        );
        let text = plan
            .planned_state
            .attr("device_plugin_config")
            .as_str()
            .unwrap()
            .to_string();
        let parsed: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(parsed["flags"]["migStrategy"], "mixed");
        assert_eq!(
            parsed["sharing"]["timeSlicing"]["resources"],
            json!([{"name": "nvidia.com/mig-1g.10gb", "replicas": 2}])
        );
    }

    #[test]
    fn read_marks_nodes_without_our_labels() {
        let wanted = BTreeMap::from([(CONFIG_LABEL.to_string(), "node-x".to_string())]);
        let ok = node("a", &[(CONFIG_LABEL, "node-x"), ("team", "ml")]);
        assert_eq!(
            observed_labels(&wanted, std::slice::from_ref(&ok), &[]),
            wanted
        );
        let bare = node("b", &[]);
        assert_eq!(
            observed_labels(&wanted, &[ok.clone(), bare], &[])[CONFIG_LABEL],
            "(missing on node b)"
        );
        let other = node("c", &[(CONFIG_LABEL, "fleet-y")]);
        assert_eq!(
            observed_labels(&wanted, &[other], &[])[CONFIG_LABEL],
            "(fleet-y on node c)"
        );
        assert_eq!(
            observed_labels(&wanted, &[], &[ok])[CONFIG_LABEL],
            "(still on node a, which is no longer targeted)"
        );
    }

    #[test]
    fn import_ids_name_the_target() {
        let by_node = NodeSharing.import("dgx:dgx-1").unwrap();
        assert_eq!(
            (by_node.name.as_str(), by_node.node_name.as_deref()),
            ("dgx", Some("dgx-1"))
        );
        let by_selector = NodeSharing.import("lab:pool=gpu,team=ml").unwrap();
        assert_eq!(by_selector.node_selector.unwrap().len(), 2);
        assert!(NodeSharing.import("dgx").is_err());
        assert!(NodeSharing.import("dgx:pool").is_ok());
        assert!(NodeSharing.import("dgx:Bad_Node").is_err());
    }
}
