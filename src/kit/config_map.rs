//! One key of a ConfigMap that several owners share, each owning its own
//! keys: written by server-side apply with a field manager per owner (so
//! owners never overwrite or delete each other's keys, whoever else edits
//! the map), read back, and released by removing exactly that key. The
//! ConfigMap is created by the first write and deleted when the last
//! gpufleet key goes and nobody else has anything in it. Every call runs
//! under the retry policy, within the caller's deadline.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use crate::cluster::api::{Change, Edit, Kind, Objects};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::cluster::{FIELD_MANAGER, Kubernetes};

/// Where a ConfigMap is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMapRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for ConfigMapRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConfigMap {}/{}", self.namespace, self.name)
    }
}

/// One owner's key of a shared ConfigMap.
pub struct OwnedKey<'a> {
    map: &'a ConfigMapRef,
    key: &'a str,
    manager: String,
}

/// Removing the key, whoever wrote it last.
struct RemoveKey<'a>(&'a OwnedKey<'a>);

impl Change<ConfigMap> for RemoveKey<'_> {
    fn describe(&self) -> String {
        format!("data.{}", self.0.key)
    }

    fn patch(&self, live: &ConfigMap) -> Option<Edit> {
        value_of(Some(live), self.0.key)?;
        Some(Edit::Merge {
            manager: self.0.manager.clone(),
            patch: json!({ "data": { self.0.key: null } }),
        })
    }
}

impl<'a> OwnedKey<'a> {
    /// Key `key` of `map`, written as field manager `manager` (one per
    /// owner, e.g. `gpufleet-fleet-inference`).
    pub fn new(map: &'a ConfigMapRef, key: &'a str, manager: String) -> Self {
        Self { map, key, manager }
    }

    async fn objects<'k>(
        &self,
        kubernetes: &'k Kubernetes,
        doing: &str,
    ) -> Result<Objects<'k, ConfigMap>, GaveUp> {
        let purpose = format!("to {doing} key {:?}", self.key);
        Ok(kubernetes
            .namespaced(Kind::CONFIG_MAP, &self.map.namespace)
            .await?
            .because(purpose))
    }

    /// The key's value; `None` when the key or the ConfigMap is absent.
    pub async fn get(
        &self,
        kubernetes: &Kubernetes,
        deadline: Deadline,
    ) -> Result<Option<String>, GaveUp> {
        let maps = self.objects(kubernetes, "get").await?;
        let live = maps.named(&self.map.name).get(deadline).await?;
        Ok(value_of(live.as_ref(), self.key))
    }

    /// Every key of the map and its value (none when the map is absent).
    pub async fn get_all(
        &self,
        kubernetes: &Kubernetes,
        deadline: Deadline,
    ) -> Result<std::collections::BTreeMap<String, String>, GaveUp> {
        let maps = self.objects(kubernetes, "get the keys beside").await?;
        let live = maps.named(&self.map.name).get(deadline).await?;
        Ok(live.and_then(|m| m.data).unwrap_or_default())
    }

    /// Writes `value` under the key; returns what was there before.
    pub async fn apply(
        &self,
        kubernetes: &Kubernetes,
        value: &str,
        deadline: Deadline,
    ) -> Result<Option<String>, GaveUp> {
        let maps = self.objects(kubernetes, "apply").await?;
        let map = maps.named(&self.map.name);
        let before = map.get(deadline).await?;
        let object = ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.map.name.clone()),
                namespace: Some(self.map.namespace.clone()),
                ..Default::default()
            },
            data: Some([(self.key.to_string(), value.to_string())].into()),
            ..Default::default()
        };
        map.apply(&object, &self.manager, deadline)
            .await
            .map_err(|gave_up| with_namespace_hint(gave_up, &self.map.namespace))?;
        Ok(value_of(before.as_ref(), self.key))
    }

    /// Removes the key, whoever edited it last, and nothing else; deletes
    /// the ConfigMap when that leaves it empty and only gpufleet ever wrote
    /// to it. Returns what the key held.
    pub async fn release(
        &self,
        kubernetes: &Kubernetes,
        deadline: Deadline,
    ) -> Result<Option<String>, GaveUp> {
        let maps = self.objects(kubernetes, "release").await?;
        let map = maps.named(&self.map.name);
        let before = map.release(&RemoveKey(self), unused, deadline).await?;
        Ok(value_of(before.as_ref(), self.key))
    }
}

/// Empty, and only ever written by gpufleet.
fn unused(live: &ConfigMap) -> bool {
    let empty = live.data.as_ref().is_none_or(|d| d.is_empty())
        && live.binary_data.as_ref().is_none_or(|d| d.is_empty());
    let only_ours = live.metadata.managed_fields.iter().flatten().all(|m| {
        m.manager
            .as_deref()
            .is_some_and(|m| m.starts_with(FIELD_MANAGER))
    });
    empty && only_ours
}

fn value_of(map: Option<&ConfigMap>, key: &str) -> Option<String> {
    map?.data.as_ref()?.get(key).cloned()
}

fn with_namespace_hint(mut gave_up: GaveUp, namespace: &str) -> GaveUp {
    for d in &mut gave_up.diagnostics.0 {
        if d.detail.contains("namespaces") && d.detail.contains("not found") {
            d.detail.push_str(&format!(
                " Create namespace {namespace:?} (the GPU Operator's), or set the provider's `gpu_operator_namespace`."
            ));
        }
    }
    gave_up
}
