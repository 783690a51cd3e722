//! One key of a ConfigMap that several owners share, each owning its own
//! keys: written by server-side apply with a field manager per owner (so
//! owners never overwrite or delete each other's keys, whoever else edits
//! the map), read back, and released by removing exactly that key. The
//! ConfigMap is created by the first write and deleted when the last
//! gpufleet key goes and nobody else has anything in it. Every call runs
//! under the retry policy, within the caller's deadline.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::json;

use super::client::get;
use super::errors::status;
use super::retry::Deadline;
use super::{FIELD_MANAGER, Kubernetes};
use crate::protocol::Diagnostics;

const KIND: &str = "v1 ConfigMap";

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

impl<'a> OwnedKey<'a> {
    /// Key `key` of `map`, written as field manager `manager` (one per
    /// owner, e.g. `gpufleet-fleet-inference`).
    pub fn new(map: &'a ConfigMapRef, key: &'a str, manager: String) -> Self {
        Self { map, key, manager }
    }

    async fn api(&self, kubernetes: &Kubernetes) -> Result<Api<ConfigMap>, Diagnostics> {
        kubernetes.namespaced_api(&self.map.namespace).await
    }

    fn action(&self, doing: &str) -> String {
        format!("{doing} key {:?} of {}", self.key, self.map)
    }

    fn request(&self, method: &str) -> String {
        format!(
            "{method} {KIND} {:?} in namespace {:?}",
            self.map.name, self.map.namespace
        )
    }

    /// The ConfigMap as it is now; `None` when it is absent.
    async fn live(
        &self,
        kubernetes: &Kubernetes,
        api: &Api<ConfigMap>,
        deadline: Deadline,
    ) -> Result<Option<ConfigMap>, Diagnostics> {
        kubernetes
            .retried(
                deadline,
                &self.action("read"),
                &self.request("GET"),
                KIND,
                || get(api, &self.map.name),
            )
            .await
    }

    /// The key's value; `None` when the key or the ConfigMap is absent.
    pub async fn read(
        &self,
        kubernetes: &Kubernetes,
        deadline: Deadline,
    ) -> Result<Option<String>, Diagnostics> {
        let api = self.api(kubernetes).await?;
        let live = self.live(kubernetes, &api, deadline).await?;
        Ok(value_of(live.as_ref(), self.key))
    }

    /// Writes `value` under the key; returns what was there before.
    pub async fn apply(
        &self,
        kubernetes: &Kubernetes,
        value: &str,
        deadline: Deadline,
    ) -> Result<Option<String>, Diagnostics> {
        let api = self.api(kubernetes).await?;
        let before = self.live(kubernetes, &api, deadline).await?;
        let object = ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.map.name.clone()),
                namespace: Some(self.map.namespace.clone()),
                ..Default::default()
            },
            data: Some([(self.key.to_string(), value.to_string())].into()),
            ..Default::default()
        };
        kubernetes
            .apply_as(
                &api,
                &self.map.name,
                &object,
                &self.manager,
                &self.action("write"),
                KIND,
                deadline,
            )
            .await
            .map_err(|gave_up| with_namespace_hint(gave_up.diagnostics, &self.map.namespace))?;
        Ok(value_of(before.as_ref(), self.key))
    }

    /// Removes the key, whoever edited it last, and nothing else; deletes
    /// the ConfigMap when that leaves it empty and only gpufleet ever wrote
    /// to it. Returns what the key held.
    pub async fn release(
        &self,
        kubernetes: &Kubernetes,
        deadline: Deadline,
    ) -> Result<Option<String>, Diagnostics> {
        let api = self.api(kubernetes).await?;
        let name = &self.map.name;
        let request = format!(
            "{} (data.{}, with its resourceVersion)",
            self.request("GET, then PATCH"),
            self.key
        );
        let remove = || async {
            let Some(live) = get(&api, name).await? else {
                return Ok(None);
            };
            let Some(previous) = value_of(Some(&live), self.key) else {
                return Ok(None);
            };
            // The resourceVersion makes this a compare-and-swap: a
            // concurrent writer's change is never lost.
            let patch = json!({
                "metadata": { "resourceVersion": live.metadata.resource_version },
                "data": { self.key: null },
            });
            let params = PatchParams {
                field_manager: Some(self.manager.clone()),
                ..Default::default()
            };
            match api.patch(name, &params, &Patch::Merge(&patch)).await {
                Ok(_) => Ok(Some(previous)),
                Err(e) if status(&e) == Some(404) => Ok(None),
                Err(e) => Err(e),
            }
        };
        let removed = kubernetes
            .retried(deadline, &self.action("remove"), &request, KIND, remove)
            .await?;
        let request = format!("{} when empty", self.request("GET, then DELETE"));
        kubernetes
            .retried(
                deadline,
                &self.action("clean up after removing"),
                &request,
                KIND,
                || self.delete_if_unused(&api),
            )
            .await?;
        Ok(removed)
    }

    async fn delete_if_unused(&self, api: &Api<ConfigMap>) -> Result<(), kube::Error> {
        let Some(live) = get(api, &self.map.name).await? else {
            return Ok(());
        };
        let empty = live.data.as_ref().is_none_or(|d| d.is_empty())
            && live.binary_data.as_ref().is_none_or(|d| d.is_empty());
        let only_ours = live.metadata.managed_fields.iter().flatten().all(|m| {
            m.manager
                .as_deref()
                .is_some_and(|m| m.starts_with(FIELD_MANAGER))
        });
        if !(empty && only_ours) {
            return Ok(());
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: live.metadata.resource_version.clone(),
                uid: live.metadata.uid.clone(),
            }),
            ..Default::default()
        };
        match api.delete(&self.map.name, &params).await {
            // Gone already, or someone wrote to it meanwhile: theirs now.
            Err(e) if matches!(status(&e), Some(404 | 409)) => Ok(()),
            other => other.map(drop),
        }
    }
}

fn value_of(map: Option<&ConfigMap>, key: &str) -> Option<String> {
    map?.data.as_ref()?.get(key).cloned()
}

fn with_namespace_hint(mut diagnostics: Diagnostics, namespace: &str) -> Diagnostics {
    for d in &mut diagnostics.0 {
        if d.detail.contains("namespaces") && d.detail.contains("not found") {
            d.detail.push_str(&format!(
                " Create namespace {namespace:?} (the GPU Operator's), or set the provider's `gpu_operator_namespace`."
            ));
        }
    }
    diagnostics
}
