//! `gpufleet_gpu_sharing`: the cluster-wide GPU sharing default, one per
//! cluster: the device-plugin configuration every GPU node uses unless its
//! fleet (`gpu_sharing`) or a `gpufleet_node_sharing` gives it its own.
//!
//! It writes the key `default` of the device-plugin ConfigMap (in the GPU
//! Operator's namespace), taking it over from the placeholder that shares
//! nothing (see `sharing::writes`), and on destroy leaves that placeholder
//! in its place while a device plugin may still read the map. When the
//! operator's `nvidia.com/v1`
//! ClusterPolicy exists, points the operator at it: a server-side apply of
//! only `spec.devicePlugin.config.{name,default}` and `spec.mig.strategy`
//! with a field manager of its own, so everything else in the ClusterPolicy
//! keeps its value and its owner; on destroy each of those fields goes back
//! to the value and owner it had before (kept in private state). Another
//! writer's MIG strategy in the ClusterPolicy (a Helm upgrade) shows as
//! drift of `mig_strategy`, as the device plugin runs with it, and a device
//! plugin config pointed elsewhere as `manage_cluster_policy` read back
//! `false`, as import reads it. Without the operator
//! only the ConfigMap is written, and a warning says how to point a
//! standalone device plugin at it.
//!
//! The operator does not notice a changed ConfigMap (gpu-operator#1144), so
//! when the configuration under `default` changes, the device-plugin pods
//! on the nodes that use it are restarted (`restart_device_plugin`).

use super::sharing::caveats::{self, PolicyFacts, Subject};
use super::sharing::cluster_policy::{self, CLUSTER_POLICY, FoundOnce, TakenOver};
use super::sharing::device_plugin::{self, MigStrategy};
use super::sharing::writes::{ConfigKey, observed_config};
use super::sharing::{self, DEFAULT_KEY, DEFAULT_OWNER, Settings, Strategy, field_manager};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::timeouts::{Operation, Timeouts};
use crate::framework::validators::one_of;
use crate::framework::{
    Failed, Identity, IdentityAttr, PlanChange, Private, Resource, Stored, Warnings,
};
use crate::kit::Cluster;
use crate::kit::timeouts_attribute;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// The `gpufleet_gpu_sharing` resource.
pub struct GpuSharing;

/// The resource's state.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    id: Option<String>,
    #[serde(flatten)]
    settings: Settings,
    manage_cluster_policy: Option<bool>,
    restart_device_plugin: Option<bool>,
    device_plugin_config: Option<String>,
    cluster_policy: Option<String>,
    timeouts: Option<Timeouts>,
}

/// The resource's identity: the ConfigMap key it owns, always `default`.
#[derive(Default, Serialize, Deserialize)]
pub struct KeyIdentity {
    key: String,
}

impl Model {
    fn deadline(&self, operation: Operation) -> Deadline {
        Deadline::of(self.timeouts.as_ref(), operation)
    }

    fn config_text(&self) -> String {
        self.settings.device_plugin_config(&[]).to_yaml()
    }
}

fn key() -> ConfigKey {
    ConfigKey {
        key: DEFAULT_KEY.to_string(),
        owner: DEFAULT_OWNER.to_string(),
    }
}

/// Why only the ConfigMap was written.
fn no_operator(cluster: &Cluster) -> Diagnostic {
    let map = &cluster.device_plugin_config;
    Diagnostic::warning(
        "GPU Operator not found",
        format!(
            "There is no {CLUSTER_POLICY} on {}, so only the device-plugin configurations were written, to {map} under key `{DEFAULT_KEY}`. For the standalone NVIDIA device plugin Helm chart, install it in namespace {:?} with `config.name={}` and `config.default={DEFAULT_KEY}`. With the GPU Operator, apply again once it is installed.",
            cluster.kubernetes.describe(),
            map.namespace,
            map.name
        ),
    )
}

/// The ClusterPolicy whose device plugin already reads our ConfigMap, for
/// an import.
async fn wired_cluster_policy(
    cluster: &Cluster,
    deadline: Deadline,
) -> Result<Option<String>, GaveUp> {
    let policies = cluster_policy::list(cluster, deadline).await?;
    Ok(policies
        .into_iter()
        .flatten()
        .find(|p| cluster_policy::points_at_ours(cluster, p))
        .and_then(|p| p.metadata.name))
}

impl GpuSharing {
    /// Writes the configuration and points the ClusterPolicy at it; `taken`
    /// is what earlier writes took over from other writers (private state).
    async fn write(
        &self,
        cluster: &Cluster,
        prior: Option<&Model>,
        mut taken: Vec<TakenOver>,
        mut planned: Model,
        operation: Operation,
    ) -> Result<Stored<Model>, Failed<Model>> {
        let deadline = planned.deadline(operation);
        let text = planned.config_text();
        // Writing the default key needs no ClusterPolicy; pointing one at
        // it lists them, once.
        let policy = FoundOnce::default();
        let changed = key().write(cluster, &policy, &text, deadline).await?;
        planned.device_plugin_config = Some(text);
        let mut warnings = Warnings::default();
        let manager = field_manager(DEFAULT_OWNER);
        let wired_before = prior.and_then(|p| p.cluster_policy.clone());
        let result: Result<(), Diagnostics> = async {
            planned.cluster_policy = None;
            if planned.manage_cluster_policy != Some(false) {
                match policy.get(cluster, deadline).await? {
                    Some(policy) => {
                        let fields = cluster_policy::default_fields(
                            cluster,
                            planned.settings.mig_strategy.as_deref(),
                        );
                        cluster_policy::point(
                            cluster, policy, &fields, &manager, &mut taken, deadline,
                        )
                        .await?;
                        planned.cluster_policy = policy.metadata.name.clone();
                    }
                    None => warnings.push(no_operator(cluster)),
                }
            }
            if let Some(before) =
                wired_before.filter(|b| planned.cluster_policy.as_ref() != Some(b))
            {
                cluster_policy::release(cluster, &before, &manager, &mut taken, deadline).await?;
            }
            if changed && planned.restart_device_plugin != Some(false) {
                key().restart_readers(cluster, deadline).await?;
            }
            Ok(())
        }
        .await;
        let stored = Stored {
            state: planned,
            private: Private::keeping(&taken),
            warnings,
        };
        match result {
            Ok(()) => Ok(stored),
            Err(diagnostics) => Err(Failed {
                diagnostics,
                written: Some(stored),
            }),
        }
    }
}

#[async_trait]
impl Resource<Cluster> for GpuSharing {
    type Model = Model;
    type IdentityModel = KeyIdentity;

    fn name(&self) -> &'static str {
        "gpu_sharing"
    }

    /// One per cluster, so made of no attribute: it never changes.
    fn identity(&self) -> Identity {
        Identity::new(
            &[],
            vec![IdentityAttr::string("key").required_for_import().describe(
                "The key of the device-plugin ConfigMap this resource owns: always `default`.",
            )],
        )
    }

    fn identity_of(&self, _: &Model) -> KeyIdentity {
        KeyIdentity {
            key: DEFAULT_KEY.to_string(),
        }
    }

    fn import_id(&self, identity: KeyIdentity) -> Result<String, Diagnostics> {
        Ok(identity.key)
    }

    /// A plan that creates or changes it warns when nothing on the
    /// cluster would read it: no ClusterPolicy to point, and no ConfigMap
    /// for a standalone device plugin (the apply then warns that only the
    /// ConfigMap was written).
    async fn modify_plan(
        &self,
        cluster: &Cluster,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        let changing = change.prior.is_null() || *change.planned != *change.prior;
        if !changing || !change.config.is_wholly_known() {
            return;
        }
        let Ok(settings) = crate::framework::model::decode::<Settings>(change.config) else {
            return;
        };
        let subject = Subject {
            what: "gpufleet_gpu_sharing (the cluster-wide default)".into(),
            path: AttributePath::root(),
            settings: &settings,
            models: &[],
        };
        diagnostics.extend(caveats::plan_reader(cluster, &subject, DEFAULT_KEY).await);
    }

    fn schema(&self) -> ObjectSchema {
        let mut attrs = vec![
            Attr::string("id")
                .derived_from(&["strategy"])
                .describe("Always `default`: the ConfigMap key this resource owns."),
        ];
        attrs.extend(sharing::attributes(Strategy::CLUSTER, false));
        attrs.extend([
            Attr::string("mig_strategy")
                .optional()
                .validate(one_of(MigStrategy::NAMES))
                .describe("How MIG devices are advertised on every node: `none`, `single` (all alike, as `nvidia.com/gpu`; a node's MIG devices must then be of one type) or `mixed` (each profile its own resource, `nvidia.com/mig-1g.10gb`; NVIDIA's device plugin refuses MPS under it). Written to the configuration's `flags.migStrategy` and the ClusterPolicy's `spec.mig.strategy`; unset, the ClusterPolicy's stays as it is (the GPU Operator's Helm chart sets `single`). Fleets and node sharings that depend on it set their own `mig_strategy` to this attribute: their plan then uses the strategy this apply sets, and Terraform applies this first."),
            Attr::bool("manage_cluster_policy")
                .default(Value::Bool(true))
                .describe("Point the GPU Operator's ClusterPolicy at the configuration: `spec.devicePlugin.config.{name,default}` and (with `mig_strategy`) `spec.mig.strategy`, nothing else. On destroy each goes back to the value and owner it had before. Reads back `false` when another writer pointed the device plugin elsewhere, so the next plan points it back."),
            Attr::bool("restart_device_plugin")
                .default(Value::Bool(true))
                .describe("When the configuration changes, restart the device-plugin pods of the nodes using it (the GPU Operator does not notice a changed ConfigMap)."),
            Attr::string("device_plugin_config")
                .derived_from(&["strategy", "replicas", "rename_by_default", "fail_requests_greater_than_one", "mig_strategy"])
                .observed()
                .describe("The device-plugin configuration (YAML) under key `default` of the provider's `device_plugin_config_map`."),
            Attr::string("cluster_policy")
                .computed()
                .describe("The GPU Operator ClusterPolicy pointed at the configuration; null without the operator or with `manage_cluster_policy = false`."),
            timeouts_attribute(),
        ]);
        ObjectSchema::new(
            "The cluster-wide GPU sharing default: time slicing or MPS for every GPU node that its fleet (`gpu_sharing`) or a `gpufleet_node_sharing` does not configure otherwise. One per cluster. Training fleets should set `gpu_sharing = { strategy = \"none\" }` to keep dedicated GPUs.",
            attrs,
        )
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        sharing::check(
            config,
            &AttributePath::root(),
            Strategy::CLUSTER,
            sharing::Models::Unknown,
            diagnostics,
        );
        // The MIG strategy is that of every node reading `default` (and,
        // through the ClusterPolicy, of every node).
        if let (Some(mig), Some(strategy)) = (
            config.attr("mig_strategy").as_str(),
            config.attr("strategy").as_str(),
        ) && let Some(parsed) = MigStrategy::parse(mig)
        {
            let settings = Settings {
                strategy: strategy.to_string(),
                ..Settings::default()
            };
            if let Some(refusal) = sharing::refused_under(parsed, &settings, &[]) {
                diagnostics.error_at(
                    AttributePath::attr("mig_strategy"),
                    refusal.summary,
                    format!("`mig_strategy = \"{mig}\"` with `strategy = \"{strategy}\"`: {}. Use `mig_strategy = \"single\"` or `\"none\"`, or time slicing.", refusal.reason),
                );
            }
        }
    }

    fn derive(&self, model: &mut Model) {
        model.id = Some(DEFAULT_KEY.to_string());
        model.device_plugin_config = Some(model.config_text());
    }

    async fn create(
        &self,
        cluster: &Cluster,
        planned: Model,
    ) -> Result<Stored<Model>, Failed<Model>> {
        self.write(cluster, None, Vec::new(), planned, Operation::Create)
            .await
    }

    async fn read(
        &self,
        cluster: &Cluster,
        current: Model,
        private: &Private,
    ) -> Result<Option<Stored<Model>>, Diagnostics> {
        let deadline = current.deadline(Operation::Read);
        let Some(live) = key().read(cluster, deadline).await? else {
            return Ok(None);
        };
        let mut state = current;
        if private.importing {
            let parsed = device_plugin::parse(&live).map_err(|e| {
                Diagnostics::from(Diagnostic::error(
                    "Unreadable device-plugin configuration",
                    format!("Key `{DEFAULT_KEY}` of {} is not a configuration the device plugin accepts: {e}", cluster.device_plugin_config),
                ))
            })?;
            state.settings = sharing::settings_from(&parsed, None);
            state.settings.mig_strategy = parsed["flags"]["migStrategy"]
                .as_str()
                .filter(|s| *s != "none")
                .map(str::to_string);
            state.cluster_policy = wired_cluster_policy(cluster, deadline).await?;
            state.manage_cluster_policy = Some(state.cluster_policy.is_some());
            state.restart_device_plugin = Some(true);
        } else if let Some(name) = state.cluster_policy.clone() {
            // Another writer (a Helm upgrade) may have set our fields.
            match cluster_policy::get(cluster, &name, deadline).await? {
                // The operator is gone with it: nothing is pointed.
                None => state.cluster_policy = None,
                Some(policy) => {
                    // Read back as import reads it: managed is pointed at
                    // the configuration, so re-pointing is a planned change.
                    if !cluster_policy::points_at_ours(cluster, &policy) {
                        state.manage_cluster_policy = Some(false);
                    }
                    // The device plugin runs with the ClusterPolicy's MIG
                    // strategy, so a different one is drift.
                    if state.settings.mig_strategy.is_some() {
                        state.settings.mig_strategy =
                            PolicyFacts::of(cluster, &policy).mig_strategy;
                    }
                }
            }
        }
        let expected = state.config_text();
        state.device_plugin_config = observed_config(Some(live), Some(&expected));
        Ok(Some(Stored {
            state,
            private: private.carried(),
            warnings: Warnings::default(),
        }))
    }

    async fn update(
        &self,
        cluster: &Cluster,
        prior: Model,
        planned: Model,
        private: &Private,
    ) -> Result<Stored<Model>, Failed<Model>> {
        let taken = private.kept();
        self.write(cluster, Some(&prior), taken, planned, Operation::Update)
            .await
    }

    async fn delete(
        &self,
        cluster: &Cluster,
        prior: Model,
        private: &Private,
    ) -> Result<Warnings, Diagnostics> {
        let deadline = prior.deadline(Operation::Delete);
        if let Some(name) = &prior.cluster_policy {
            let mut taken = private.kept();
            cluster_policy::release(
                cluster,
                name,
                &field_manager(DEFAULT_OWNER),
                &mut taken,
                deadline,
            )
            .await?;
        }
        let changed = key().release(cluster, deadline).await?;
        if changed && prior.restart_device_plugin != Some(false) {
            key().restart_readers(cluster, deadline).await?;
        }
        Ok(Warnings::default())
    }

    fn import(&self, id: &str) -> Result<Model, Diagnostics> {
        if id != DEFAULT_KEY {
            return Err(Diagnostic::error(
                "Invalid import ID",
                format!(
                    "Import the cluster-wide GPU sharing by its key, `{DEFAULT_KEY}` (got {id:?})."
                ),
            )
            .into());
        }
        Ok(Model::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::LabelScheme;
    use crate::framework::testkit::{Harness, errors};
    use serde_json::json;

    fn harness() -> Harness<Cluster> {
        Harness::new(GpuSharing)
    }

    fn errors_of(config: serde_json::Value) -> Vec<(String, String)> {
        let h = harness();
        h.errors(&Cluster::offline(LabelScheme::Cfke), &h.value(config))
    }

    #[test]
    fn plans_the_configuration_it_writes() {
        let h = harness();
        let config =
            h.value(json!({"strategy": "time_slicing", "replicas": 4, "mig_strategy": "mixed"}));
        let plan = h.plan(&Cluster::offline(LabelScheme::Cfke), &Value::Null, &config);
        assert!(
            errors(&plan.diagnostics).is_empty(),
            "{:?}",
            plan.diagnostics
        );
        let planned = &plan.planned_state;
        assert_eq!(planned.attr("id"), &Value::string("default"));
        let text = planned.attr("device_plugin_config").as_str().unwrap();
        let parsed: serde_json::Value = serde_saphyr::from_str(text).unwrap();
        assert_eq!(
            parsed,
            json!({"version": "v1", "flags": {"migStrategy": "mixed"}, "sharing": {"timeSlicing": {
                "renameByDefault": false, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}})
        );
        assert!(planned.attr("cluster_policy").is_unknown());
        // No sharing: a configuration without `sharing`, not `replicas: 1`.
        let none = h.plan(
            &Cluster::offline(LabelScheme::Cfke),
            &Value::Null,
            &h.value(json!({"strategy": "none"})),
        );
        let text = none
            .planned_state
            .attr("device_plugin_config")
            .as_str()
            .unwrap()
            .to_string();
        let parsed: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(
            parsed,
            json!({"version": "v1", "flags": {"migStrategy": "none"}})
        );
    }

    #[test]
    fn bad_settings_are_reported_at_their_attribute() {
        let at = |config| {
            errors_of(config)
                .into_iter()
                .map(|(p, _)| p)
                .collect::<Vec<_>>()
        };
        assert_eq!(at(json!({"strategy": "mps"})), ["replicas"]);
        assert_eq!(
            at(json!({"strategy": "time_slicing", "replicas": 1})),
            ["replicas"]
        );
        assert_eq!(at(json!({"strategy": "mps", "replicas": 49})), ["replicas"]);
        // Time slicing has no upper bound in the device plugin.
        assert!(at(json!({"strategy": "time_slicing", "replicas": 100})).is_empty());
        assert_eq!(
            at(json!({"strategy": "mps", "replicas": 4, "mig_strategy": "mixed"})),
            ["mig_strategy"]
        );
        assert_eq!(at(json!({"strategy": "mig"})), ["strategy"]);
        assert_eq!(at(json!({"strategy": "none", "replicas": 4})), ["replicas"]);
        assert_eq!(
            at(json!({"strategy": "none", "rename_by_default": true})),
            ["rename_by_default"]
        );
        assert_eq!(
            at(json!({"strategy": "mps", "replicas": 4, "mig_strategy": "some"})),
            ["mig_strategy"]
        );
        let found = errors_of(json!({"strategy": "mps", "replicas": 49}));
        assert!(
            found[0]
                .1
                .contains("49 is more MPS clients than NVIDIA's MPS control daemon serves"),
            "{found:?}"
        );
        let found = errors_of(json!({"strategy": "mps", "replicas": 4, "mig_strategy": "mixed"}));
        assert!(
            found[0]
                .1
                .contains("using --mig-strategy=mixed is not supported with MPS"),
            "{found:?}"
        );
    }

    #[test]
    fn import_takes_only_the_default_key() {
        assert!(GpuSharing.import("default").is_ok());
        assert!(GpuSharing.import("fleet-x").is_err());
    }
}
