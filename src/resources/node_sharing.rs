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

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::sharing::caveats::{self, Subject};
use super::sharing::cluster_policy::FoundOnce;
use super::sharing::writes::{ConfigKey, observed_config};
use super::sharing::{self, CONFIG_LABEL, MIG_CONFIG_LABEL, Settings, Strategy, field_manager};
use crate::cluster::api::{Change, Edit};
use crate::cluster::names::dns1123_label;
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::PlanChange;
use crate::framework::schema::{Attr, ObjectSchema};
use crate::kit::Cluster;
use crate::kit::node_scoped::{Companions, NodeScoped, OwnName, Scoped, TargetDescriptions};
use crate::kit::node_target::Seen;
use crate::kit::permissions::Permission;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// What it needs of the API besides its configuration key
/// ([`sharing::writes::PERMISSIONS`]): `get` a named node, `list` the nodes
/// a selector matches, `patch` (server-side apply) our labels on them.
pub const PERMISSIONS: &[Permission] =
    &[Permission::cluster("", "nodes", &["get", "list", "patch"])];

/// The `gpufleet_node_sharing` resource.
pub struct NodeSharing;

/// The resource's own state: its name, its sharing and what that writes.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeConfig {
    name: String,
    #[serde(flatten)]
    settings: Settings,
    labels: Option<BTreeMap<String, String>>,
    device_plugin_config: Option<String>,
    config_key: Option<String>,
}

/// The resource's state.
pub type Model = Scoped<NodeConfig>;

impl NodeConfig {
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
        self.settings.device_plugin_config(&[]).to_yaml()
    }
}

/// What the MIG-strategy checks are about; the nodes' GPU models are
/// unknown.
fn subject<'a>(name: &str, settings: &'a Settings) -> Subject<'a> {
    Subject {
        what: format!("gpufleet_node_sharing {name:?}"),
        path: AttributePath::root(),
        settings,
        models: &[],
    }
}

fn labels_of(node: &Node) -> BTreeMap<String, String> {
    node.metadata.labels.clone().unwrap_or_default()
}

/// This resource's labels on one node, by server-side apply as its own
/// field manager: `labels` applied, or (none) released.
pub struct SharingLabels {
    labels: Option<BTreeMap<String, String>>,
    key: String,
    manager: String,
}

impl Change<Node> for SharingLabels {
    fn describe(&self) -> String {
        format!("its labels, by server-side apply as {}", self.manager)
    }

    fn patch(&self, _live: &Node) -> Option<Edit> {
        // Applied even when the values are there already: the apply is
        // what makes them ours.
        let mut metadata = json!({});
        if let Some(labels) = &self.labels {
            metadata["labels"] = json!(labels);
        }
        Some(Edit::Apply {
            manager: self.manager.clone(),
            fields: json!({ "apiVersion": "v1", "kind": "Node", "metadata": metadata }),
        })
    }

    fn landed(&self, live: &Node) -> bool {
        let live = labels_of(live);
        match &self.labels {
            Some(wanted) => wanted.iter().all(|(k, v)| live.get(k) == Some(v)),
            None => live.get(CONFIG_LABEL) != Some(&self.key),
        }
    }
}

#[async_trait]
impl NodeScoped for NodeSharing {
    type Own = NodeConfig;
    type Change = SharingLabels;

    const NAME: &'static str = "node_sharing";
    const WRITTEN: &'static str = "labelled";
    const TARGET: TargetDescriptions = TargetDescriptions {
        node_name: "The node to configure.",
        node_selector: "Labels: every node carrying all of them at apply time is configured, and a node matching later shows up in the next plan.",
        nodes: "The nodes carrying this resource's labels.",
    };
    /// Its ConfigMap key is found by name, so a selector imports too.
    const NAMED: Option<OwnName<NodeConfig>> = Some(OwnName {
        of: |config| &config.name,
        named: |name| NodeConfig {
            name,
            ..Default::default()
        },
    });

    fn schema(&self) -> ObjectSchema {
        let mut attrs = vec![
            Attr::string("name")
                .required()
                .requires_replace()
                .validate(dns1123_label())
                .describe("Names the configuration: key `node-NAME` of the device-plugin ConfigMap, which the nodes' `nvidia.com/device-plugin.config` label selects."),
        ];
        attrs.extend(sharing::attributes(Strategy::NODES, true));
        attrs.extend([
            Attr::string_map("labels")
                .derived_from(&["name", "strategy", "mig_layout"])
                .observed()
                .describe("The labels this resource puts on the nodes: `nvidia.com/device-plugin.config` and, for MIG, `nvidia.com/mig.config`."),
            Attr::string("device_plugin_config")
                .derived_from(&["strategy", "replicas", "mig_layout", "rename_by_default", "fail_requests_greater_than_one", "mig_strategy"])
                .observed()
                .describe("The device-plugin configuration (YAML) under key `node-NAME`."),
            // Known once written, not derived: a `gpufleet_node_join` whose
            // `sharing_config` references it is planned before the key exists.
            Attr::string("config_key")
                .computed()
                .use_state_for_unknown()
                .describe("The device-plugin configuration key it writes, `node-NAME`, known once applied. Set a `gpufleet_node_join`'s `sharing_config` to it: servers then join with this configuration, Terraform writes the key first, and that plan does not warn about a key the ConfigMap lacks."),
        ]);
        ObjectSchema::new(
            "GPU sharing for existing nodes outside fleets, such as self-managed servers: its own device-plugin configuration, selected by a node label that only this resource writes (other labels and their owners are left alone).",
            attrs,
        )
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        sharing::check(
            config,
            &AttributePath::root(),
            Strategy::NODES,
            sharing::Models::Unknown,
            diagnostics,
        );
        if let Some(name) = config.attr("name").as_str() {
            sharing::check_key_length(
                &format!("node-{name}"),
                AttributePath::attr("name"),
                diagnostics,
            );
        }
    }

    /// How the sharing goes with the GPU Operator's MIG strategy, read
    /// from the cluster (see [`sharing::caveats`]).
    async fn modify_plan(
        &self,
        cluster: &Cluster,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        let config = change.config;
        if !config.is_wholly_known() {
            return;
        }
        let Ok(settings) = crate::framework::model::decode::<Settings>(config) else {
            return;
        };
        let name = config.attr("name").as_str().unwrap_or_default();
        let subject = subject(name, &settings);
        let unset = config.attr("mig_strategy").is_null();
        let prior = change.prior.attr("mig_strategy").as_str();
        let key = format!("node-{name}");
        let changing = change.prior.is_null() || *change.planned != *change.prior;
        let planned = caveats::plan(cluster, &subject, &key, unset, prior, changing).await;
        diagnostics.extend(planned.diagnostics);
        if let Some(strategy) = planned.mig_strategy {
            crate::framework::plan::set(change.planned, "mig_strategy", strategy);
        }
    }

    fn derive(&self, state: &mut Model) {
        state.own.labels = Some(state.own.wanted_labels());
        state.own.device_plugin_config = Some(state.own.config_text());
    }

    /// Our labels on a targeted node, released elsewhere; `name` requires
    /// replacement, so `state` has the field manager `prior` wrote with.
    fn change(
        &self,
        _prior: Option<&Model>,
        state: &Model,
        _: &str,
        targeted: bool,
    ) -> SharingLabels {
        SharingLabels {
            labels: targeted.then(|| state.own.wanted_labels()),
            key: state.own.key().key,
            manager: state.own.manager(),
        }
    }

    fn carries(&self, state: &Model, node: &Node) -> bool {
        labels_of(node).get(CONFIG_LABEL) == Some(&state.own.key().key)
    }

    async fn observed(
        &self,
        cluster: &Cluster,
        current: Model,
        seen: &Seen,
        importing: bool,
        deadline: Deadline,
    ) -> Result<Option<Model>, Diagnostics> {
        let live = current.own.key().read(cluster, deadline).await?;
        let mut state = current;
        if importing {
            let Some(text) = &live else { return Ok(None) };
            let parsed = sharing::device_plugin::parse(text).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    "Unreadable device-plugin configuration",
                    format!(
                        "Key `node-{}` of {} is not a configuration the device plugin accepts: {e}",
                        state.own.name, cluster.device_plugin_config
                    ),
                ))
            })?;
            let layout = seen
                .targets
                .iter()
                .find_map(|n| labels_of(n).get(MIG_CONFIG_LABEL).cloned());
            state.own.settings = sharing::settings_from(&parsed, layout);
        }
        if subject(&state.own.name, &state.own.settings).depends_on_mig_strategy() {
            // The strategy the nodes run with now: a change made outside
            // Terraform shows in the next plan.
            let seen = caveats::look(cluster, deadline).await;
            let key_strategy = state.own.settings.key_mig_strategy();
            if let Some(strategy) = caveats::effective(&seen, key_strategy) {
                state.own.settings.mig_strategy = Some(strategy.as_str().to_string());
            }
        }
        let wanted = state.own.wanted_labels();
        state.own.labels = Some(
            wanted
                .iter()
                .map(|(label, value)| {
                    let held = |n: &Node| labels_of(n).get(label).cloned();
                    let reported = seen.report(value, held, |n| held(n).as_ref() == Some(value));
                    (label.clone(), reported)
                })
                .collect(),
        );
        state.own.device_plugin_config = observed_config(live, Some(&state.own.config_text()));
        state.own.config_key = Some(state.own.key().key);
        Ok(Some(state))
    }

    /// The configuration key, before the labels that select it, once the
    /// ClusterPolicy's MIG strategy is checked (and set, when
    /// `gpufleet_gpu_sharing` manages it) as at plan.
    async fn write_companions(
        &self,
        cluster: &Cluster,
        state: &mut Model,
        deadline: Deadline,
    ) -> Result<Companions, GaveUp> {
        let subject = subject(&state.own.name, &state.own.settings);
        let key = state.own.key().key;
        let policy = FoundOnce::default();
        state.own.settings.mig_strategy =
            caveats::check_before_write(cluster, &policy, &subject, &key, deadline).await?;
        let text = state.own.config_text();
        let changed = state
            .own
            .key()
            .write(cluster, &policy, &text, deadline)
            .await?;
        state.own.device_plugin_config = Some(text);
        state.own.labels = Some(state.own.wanted_labels());
        state.own.config_key = Some(key);
        Ok(Companions::Written { changed })
    }

    /// The GPU Operator does not notice a changed ConfigMap: the device
    /// plugin restarts on the labelled nodes (newly labelled ones switch
    /// by themselves).
    async fn companions_changed(
        &self,
        cluster: &Cluster,
        state: &Model,
        deadline: Deadline,
    ) -> Result<(), GaveUp> {
        state.own.key().restart_readers(cluster, deadline).await?;
        Ok(())
    }

    async fn delete_companions(
        &self,
        cluster: &Cluster,
        prior: &Model,
        deadline: Deadline,
    ) -> Result<(), GaveUp> {
        prior.own.key().release(cluster, deadline).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::LabelScheme;
    use crate::framework::Resource;
    use crate::framework::testkit::{Harness, errors};
    use crate::kit::node_scoped::NodeResource;
    use serde_json::json;

    #[test]
    fn plans_labels_and_configuration() {
        let h = Harness::new(NodeResource(NodeSharing));
        let config = h.value(json!({"name": "dgx", "node_name": "dgx-1", "strategy": "mig", "mig_layout": "all-1g.10gb", "replicas": 2, "mig_strategy": "mixed"}));
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
        // Unset, the strategy the cluster runs is decided at apply, and so
        // is the configuration that names it.
        let unset = h.value(json!({"name": "dgx", "node_name": "dgx-1", "strategy": "mig", "mig_layout": "all-1g.10gb"}));
        let plan = h.plan(&Cluster::offline(LabelScheme::Cfke), &Value::Null, &unset);
        assert!(plan.planned_state.attr("device_plugin_config").is_unknown());
    }

    #[test]
    fn import_ids_name_the_target() {
        let by_node = NodeResource(NodeSharing).import("dgx:dgx-1").unwrap();
        assert_eq!(
            (
                by_node.own.name.as_str(),
                by_node.target.node_name.as_deref()
            ),
            ("dgx", Some("dgx-1"))
        );
        let by_selector = NodeResource(NodeSharing)
            .import("lab:pool=gpu,team=ml")
            .unwrap();
        assert_eq!(by_selector.target.node_selector.unwrap().len(), 2);
        assert!(NodeResource(NodeSharing).import("dgx").is_err());
        assert!(NodeResource(NodeSharing).import("dgx:pool").is_ok());
        assert!(NodeResource(NodeSharing).import("dgx:Bad_Node").is_err());
    }

    /// An identity stands for the import ID its state was imported by.
    #[test]
    fn identities_give_back_their_import_ids() {
        let resource = NodeResource(NodeSharing);
        for id in ["dgx:dgx-1", "lab:pool=gpu,team=ml"] {
            let imported = resource.import(id).unwrap();
            let identity = resource.identity_of(&imported);
            assert_eq!(resource.import_id(identity).unwrap(), id);
        }
    }
}
