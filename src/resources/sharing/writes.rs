//! What the sharing resources do on the cluster beyond their own objects:
//! write their device-plugin configuration key, and restart the
//! device-plugin pods that read it when it changed. The GPU Operator does
//! not watch the ConfigMap's contents (the config-manager sidecar only
//! reacts to node labels), so a changed configuration reaches running
//! plugins only when their pods start again.
//!
//! A device plugin that reads the ConfigMap needs it to exist and to hold
//! its default key: its pod mounts the map (NVIDIA gpu-operator,
//! controllers/object_controls.go, createConfigMapVolume; the
//! k8s-device-plugin Helm chart's daemonset-device-plugin.yml, with
//! `config.name`), not optionally, so without the map the pod never starts;
//! and its config manager refuses an empty map ("no configuration files
//! available") and a missing default key ("specified config ... does not
//! exist"), NVIDIA k8s-device-plugin, cmd/config-manager/main.go,
//! updateConfigName. Either way the node advertises no GPU, whether its
//! fleet shares or not. So while a device plugin may read the map, it keeps
//! a `default` key: `gpufleet_gpu_sharing`'s, or else one that shares
//! nothing, held by field manager `gpufleet-unshared-default` (the
//! placeholder), written beside the first other key and left in place of
//! `gpufleet_gpu_sharing`'s when that is destroyed. Each takes the key
//! from the other by a forced apply and then an apply without it by the
//! one letting go (a forced apply of the value another manager holds only
//! shares the key), so one manager holds it: neither the read nor the
//! import of `gpufleet_gpu_sharing` counts the placeholder as its
//! configuration. The map is deleted only once nothing reads it.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::DynamicObject;

use super::cluster_policy::{self, FoundOnce};
use super::device_plugin::same_behaviour;
use super::{CONFIG_LABEL, DEFAULT_KEY, Settings, UNSHARED_OWNER, field_manager};
use crate::cluster::api::Kind;
use crate::cluster::retry::{Deadline, GaveUp};
use crate::kit::Cluster;
use crate::kit::config_map::{OwnedKey, Placeholder};
use crate::kit::permissions::{APPLIED_OBJECT_VERBS, Permission};

/// The GPU Operator's DaemonSets whose pods read the device-plugin
/// configuration: the plugin, its MPS control daemon, and GPU Feature
/// Discovery (which labels nodes with the sharing they get).
pub const DEVICE_PLUGIN_DAEMONSETS: &[&str] = &[
    "nvidia-device-plugin-daemonset",
    "nvidia-device-plugin-mps-control-daemon",
    "gpu-feature-discovery",
];

/// What a [`ConfigKey`] needs of the API: the ConfigMap in the operator's
/// namespace (read, applied, its key removed, deleted once nothing reads
/// it and it holds nothing but ours), and for
/// [`ConfigKey::restart_readers`] the device-plugin DaemonSets (read for
/// their pod selector), their pods (listed, deleted) and the nodes they
/// run on (read for their configuration label). Whether a device plugin
/// reads the ConfigMap comes from the ClusterPolicies
/// ([`cluster_policy::PERMISSIONS`], which every sharing resource has).
pub const PERMISSIONS: &[Permission] = &[
    Permission::in_operator_namespace("", "configmaps", APPLIED_OBJECT_VERBS),
    Permission::in_operator_namespace("apps", "daemonsets", &["get"]),
    Permission::in_operator_namespace("", "pods", &["list", "delete"]),
    Permission::cluster("", "nodes", &["get"]),
];

/// One owner's configuration key: `default`, `fleet-NAME` or `node-NAME`,
/// written as field manager `gpufleet-<owner>`.
pub struct ConfigKey {
    /// The key in the ConfigMap.
    pub key: String,
    /// Who owns it, for the field manager: `sharing-default`, `fleet-NAME`.
    pub owner: String,
}

/// The configuration that shares nothing: what `gpufleet_gpu_sharing {
/// strategy = "none" }` writes.
fn unshared() -> String {
    Settings {
        strategy: "none".into(),
        ..Default::default()
    }
    .device_plugin_config(&[])
    .to_yaml()
}

/// Whether a device plugin may read the ConfigMap, given the GPU
/// Operator's ClusterPolicy: it mounts the map, or there is no operator
/// and the standalone chart may be installed with `config.name` set to it
/// (as `gpufleet_gpu_sharing`'s warning says), which nothing on the
/// cluster tells before its pods run.
fn device_plugin_may_read(cluster: &Cluster, policy: Option<&DynamicObject>) -> bool {
    policy.is_none_or(|policy| cluster_policy::mounts_ours(cluster, policy))
}

/// [`device_plugin_may_read`] with the ClusterPolicy as it is now.
async fn device_plugin_reads_now(cluster: &Cluster, deadline: Deadline) -> Result<bool, GaveUp> {
    let policy = cluster_policy::find(cluster, deadline).await?;
    Ok(device_plugin_may_read(cluster, policy.as_ref()))
}

impl ConfigKey {
    fn owned<'a>(&'a self, cluster: &'a Cluster) -> OwnedKey<'a> {
        OwnedKey::new(
            &cluster.device_plugin_config,
            &self.key,
            field_manager(&self.owner),
        )
    }

    /// The key's configuration; `None` when it is not there or the
    /// placeholder holds it.
    pub async fn read(
        &self,
        cluster: &Cluster,
        deadline: Deadline,
    ) -> Result<Option<String>, GaveUp> {
        let unshared = unshared();
        self.owned(cluster)
            .get_owned(&cluster.kubernetes, &placeholder(&unshared), deadline)
            .await
    }

    /// Writes `config`, and the placeholder `default` beside it where that
    /// is missing and a device plugin may read the map (by `policy`, read
    /// once for the apply's checks and this write); true when that changes
    /// what the device plugin does on the nodes using the key.
    pub async fn write(
        &self,
        cluster: &Cluster,
        policy: &FoundOnce,
        config: &str,
        deadline: Deadline,
    ) -> Result<bool, GaveUp> {
        let unshared = unshared();
        let placeholder = placeholder(&unshared);
        let owned = self.owned(cluster);
        let kubernetes = &cluster.kubernetes;
        let previous = owned
            .apply(kubernetes, config, &placeholder, deadline)
            .await?;
        if self.key != DEFAULT_KEY
            && device_plugin_may_read(cluster, policy.get(cluster, deadline).await?)
        {
            owned.fill_in(kubernetes, &placeholder, deadline).await?;
        }
        Ok(previous.is_none_or(|p| !same_behaviour(&p, config)))
    }

    /// Removes the key. While a device plugin may read the map, it stays,
    /// with the placeholder under `default` (in place of this key when it
    /// is `default`); otherwise it is deleted once it holds nothing else of
    /// anyone's. True when that changed what the device plugin does on the
    /// nodes that used the key.
    pub async fn release(&self, cluster: &Cluster, deadline: Deadline) -> Result<bool, GaveUp> {
        let unshared = unshared();
        let placeholder = placeholder(&unshared);
        let owned = self.owned(cluster);
        let kubernetes = &cluster.kubernetes;
        if !device_plugin_reads_now(cluster, deadline).await? {
            let before = owned.release(kubernetes, &placeholder, deadline).await?;
            return Ok(before.is_some());
        }
        if self.key == DEFAULT_KEY {
            let before = owned.hand_over(kubernetes, &placeholder, deadline).await?;
            return Ok(before.is_some_and(|b| !same_behaviour(&b, &unshared)));
        }
        let before = owned.remove(kubernetes, deadline).await?;
        // The placeholder written just as `gpufleet_gpu_sharing`'s destroy
        // turned the ClusterPolicy away would outlive every reader: once
        // nothing reads the map, this release is its last.
        if owned.fill_in(kubernetes, &placeholder, deadline).await?
            && !device_plugin_reads_now(cluster, deadline).await?
        {
            owned.release(kubernetes, &placeholder, deadline).await?;
        }
        Ok(before.is_some())
    }

    /// Restarts the device-plugin pods on the nodes that use this key (for
    /// `default`, the nodes that name no key), so they read it again.
    /// Returns the pods deleted; their DaemonSets start new ones.
    pub async fn restart_readers(
        &self,
        cluster: &Cluster,
        deadline: Deadline,
    ) -> Result<Vec<String>, GaveUp> {
        let kubernetes = &cluster.kubernetes;
        let namespace = &cluster.device_plugin_config.namespace;
        let purpose = "to restart the device plugin after its configuration changed";
        let daemon_sets = kubernetes
            .namespaced::<DaemonSet>(Kind::DAEMON_SET, namespace)
            .await?
            .because(purpose);
        let pods = kubernetes
            .namespaced::<Pod>(Kind::POD, namespace)
            .await?
            .because(purpose);
        let nodes = kubernetes
            .objects::<Node>(Kind::NODE)
            .await?
            .because(purpose);
        let mut node_keys: BTreeMap<String, Option<String>> = BTreeMap::new();
        let mut restarted = Vec::new();
        for name in DEVICE_PLUGIN_DAEMONSETS {
            let daemon_set = daemon_sets.named(name).get(deadline).await?;
            let Some(selector) = daemon_set.as_ref().and_then(match_labels) else {
                continue;
            };
            for pod in pods.list(Some(&selector), deadline).await? {
                let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
                    continue;
                };
                if !node_keys.contains_key(&node) {
                    let key = nodes
                        .named(&node)
                        .get(deadline)
                        .await?
                        .and_then(|n| n.metadata.labels)
                        .and_then(|l| l.get(CONFIG_LABEL).cloned());
                    node_keys.insert(node.clone(), key);
                }
                let uses = match &node_keys[&node] {
                    Some(key) => *key == self.key,
                    None => self.key == DEFAULT_KEY,
                };
                let Some(pod_name) = pod.metadata.name.clone().filter(|_| uses) else {
                    continue;
                };
                if pods.named(&pod_name).delete(deadline).await? {
                    restarted.push(pod_name);
                }
            }
        }
        Ok(restarted)
    }
}

/// The placeholder `default` key, holding `unshared`.
fn placeholder(unshared: &str) -> Placeholder<'_> {
    Placeholder {
        key: DEFAULT_KEY,
        value: unshared,
        manager: field_manager(UNSHARED_OWNER),
    }
}

/// A DaemonSet's `matchLabels` as a label selector; `None` without any.
fn match_labels(daemon_set: &DaemonSet) -> Option<String> {
    let labels = daemon_set
        .spec
        .selector
        .match_labels
        .as_ref()
        .filter(|l| !l.is_empty())?;
    Some(
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// What state shows of a key's live configuration: `expected` when the
/// plugin would behave the same (so formatting never shows as drift), else
/// the live text.
pub fn observed_config(live: Option<String>, expected: Option<&str>) -> Option<String> {
    match (live, expected) {
        (Some(live), Some(expected)) if same_behaviour(&live, expected) => {
            Some(expected.to_string())
        }
        (live, _) => live,
    }
}
