//! One key of a ConfigMap that several owners share, each owning its own
//! keys: written by server-side apply with a field manager per owner (so
//! owners never overwrite or delete each other's keys, whoever else edits
//! the map), read back, and released by removing exactly that key. The
//! ConfigMap is created by the first write. While something reads the map,
//! a [`Placeholder`] keeps one key in it whenever no owner holds that key,
//! and the map stays when the last owner's key goes; once nothing reads it,
//! it is deleted when the last gpufleet key goes (the placeholder aside)
//! and nobody else has anything in it. Every call runs under the retry
//! policy, within the caller's deadline.

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

impl ConfigMapRef {
    /// The keys of the map; `None` when it does not exist.
    pub async fn keys(
        &self,
        kubernetes: &Kubernetes,
        deadline: Deadline,
    ) -> Result<Option<Vec<String>>, GaveUp> {
        let maps = kubernetes
            .namespaced::<ConfigMap>(Kind::CONFIG_MAP, &self.namespace)
            .await?;
        let live = maps.named(&self.name).get(deadline).await?;
        Ok(live.map(|map| map.data.unwrap_or_default().into_keys().collect()))
    }
}

/// One owner's key of a shared ConfigMap.
pub struct OwnedKey<'a> {
    map: &'a ConfigMapRef,
    key: &'a str,
    manager: String,
}

/// What a key holds, as its own field manager, where no owner's value is:
/// the value readers of the map need under that key when nobody sets one.
pub struct Placeholder<'a> {
    /// The key.
    pub key: &'a str,
    /// Its value.
    pub value: &'a str,
    /// The field manager that holds it, one of gpufleet's.
    pub manager: String,
}

/// Whether field manager `manager` holds (alone or with others) key `key`
/// of `live`.
fn holds(live: &ConfigMap, key: &str, manager: &str) -> bool {
    live.metadata.managed_fields.iter().flatten().any(|m| {
        m.manager.as_deref() == Some(manager)
            && m.fields_v1
                .as_ref()
                .is_some_and(|f| !f.0["f:data"][format!("f:{key}")].is_null())
    })
}

impl Placeholder<'_> {
    /// Whether the placeholder's manager holds its key of `live`.
    fn holds(&self, live: &ConfigMap) -> bool {
        holds(live, self.key, &self.manager)
    }

    /// The apply that puts it in place, as its manager.
    fn edit(&self) -> Edit {
        Edit::Apply {
            manager: self.manager.clone(),
            fields: json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "data": { self.key: self.value },
            }),
        }
    }
}

/// The placeholder, where the map lacks its key.
struct FillIn<'a>(&'a Placeholder<'a>);

impl Change<ConfigMap> for FillIn<'_> {
    fn describe(&self) -> String {
        format!("data.{} unless it is set", self.0.key)
    }

    fn patch(&self, live: &ConfigMap) -> Option<Edit> {
        value_of(Some(live), self.0.key)
            .is_none()
            .then(|| self.0.edit())
    }
}

/// An owner's key handed to the placeholder: its value, held by its manager.
struct HandOver<'a>(&'a Placeholder<'a>);

impl Change<ConfigMap> for HandOver<'_> {
    fn describe(&self) -> String {
        format!("data.{}, handed to {}", self.0.key, self.0.manager)
    }

    fn patch(&self, live: &ConfigMap) -> Option<Edit> {
        let done =
            self.0.holds(live) && value_of(Some(live), self.0.key).as_deref() == Some(self.0.value);
        (!done).then(|| self.0.edit())
    }
}

/// A manager's apply of none of the map's keys: it stops holding the one
/// it held, which stays while another manager holds it too. (A forced
/// apply of the value another manager holds makes the two hold it
/// together.)
struct LetGo<'a> {
    key: &'a str,
    manager: &'a str,
}

impl Change<ConfigMap> for LetGo<'_> {
    fn describe(&self) -> String {
        format!("data.{}, let go of by {}", self.key, self.manager)
    }

    fn patch(&self, live: &ConfigMap) -> Option<Edit> {
        holds(live, self.key, self.manager).then(|| Edit::Apply {
            manager: self.manager.to_string(),
            fields: json!({"apiVersion": "v1", "kind": "ConfigMap"}),
        })
    }
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

    /// Writes `value` under the key, taking it over from `placeholder`
    /// when that held it; returns what was there before.
    pub async fn apply(
        &self,
        kubernetes: &Kubernetes,
        value: &str,
        placeholder: &Placeholder<'_>,
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
        if placeholder.key == self.key && before.as_ref().is_some_and(|b| placeholder.holds(b)) {
            let let_go = LetGo {
                key: self.key,
                manager: &placeholder.manager,
            };
            map.update(&let_go, deadline).await?;
        }
        Ok(value_of(before.as_ref(), self.key))
    }

    /// The key's value, `None` when the key or the ConfigMap is absent or
    /// `placeholder` holds the key and this key's manager does not: no
    /// owner's value is there.
    pub async fn get_owned(
        &self,
        kubernetes: &Kubernetes,
        placeholder: &Placeholder<'_>,
        deadline: Deadline,
    ) -> Result<Option<String>, GaveUp> {
        let maps = self.objects(kubernetes, "get").await?;
        let live = maps.named(&self.map.name).get(deadline).await?;
        let held = placeholder.key == self.key
            && live
                .as_ref()
                .is_some_and(|l| placeholder.holds(l) && !holds(l, self.key, &self.manager));
        Ok(value_of(live.as_ref(), self.key).filter(|_| !held))
    }

    /// Puts `placeholder` in the map where its key is missing, never over
    /// an owner's value (a write made meanwhile refuses it, by the map's
    /// resourceVersion). Nothing when the map does not exist. True when it
    /// wrote the placeholder.
    pub async fn fill_in(
        &self,
        kubernetes: &Kubernetes,
        placeholder: &Placeholder<'_>,
        deadline: Deadline,
    ) -> Result<bool, GaveUp> {
        let maps = self
            .objects(kubernetes, "keep a placeholder beside")
            .await?;
        let before = maps
            .named(&self.map.name)
            .update(&FillIn(placeholder), deadline)
            .await?;
        Ok(before.is_some_and(|b| value_of(Some(&b), placeholder.key).is_none()))
    }

    /// Hands the key, which must be `placeholder`'s, over to it: the
    /// placeholder's value, held by its manager, whoever held the key, and
    /// no longer by this key's manager. Nothing when the map does not
    /// exist. Returns what the key held.
    pub async fn hand_over(
        &self,
        kubernetes: &Kubernetes,
        placeholder: &Placeholder<'_>,
        deadline: Deadline,
    ) -> Result<Option<String>, GaveUp> {
        let maps = self.objects(kubernetes, "hand over").await?;
        let map = maps.named(&self.map.name);
        let before = map.update(&HandOver(placeholder), deadline).await?;
        let let_go = LetGo {
            key: self.key,
            manager: &self.manager,
        };
        map.update(&let_go, deadline).await?;
        Ok(value_of(before.as_ref(), self.key))
    }

    /// Removes the key, whoever edited it last, and nothing else; the map
    /// stays. Returns what the key held.
    pub async fn remove(
        &self,
        kubernetes: &Kubernetes,
        deadline: Deadline,
    ) -> Result<Option<String>, GaveUp> {
        let maps = self.objects(kubernetes, "remove").await?;
        let before = maps
            .named(&self.map.name)
            .update(&RemoveKey(self), deadline)
            .await?;
        Ok(value_of(before.as_ref(), self.key))
    }

    /// Removes the key, whoever edited it last, and nothing else; deletes
    /// the map when that leaves it empty but for `placeholder` and only
    /// gpufleet ever wrote to it. Returns what the key held.
    pub async fn release(
        &self,
        kubernetes: &Kubernetes,
        placeholder: &Placeholder<'_>,
        deadline: Deadline,
    ) -> Result<Option<String>, GaveUp> {
        let maps = self.objects(kubernetes, "release").await?;
        let unused = |live: &ConfigMap| unused(live, placeholder);
        let before = maps
            .named(&self.map.name)
            .release(&RemoveKey(self), unused, deadline)
            .await?;
        Ok(value_of(before.as_ref(), self.key))
    }
}

/// Empty but for the placeholder, and only ever written by gpufleet.
fn unused(live: &ConfigMap, placeholder: &Placeholder<'_>) -> bool {
    let held = placeholder.holds(live);
    let empty = live
        .data
        .as_ref()
        .is_none_or(|d| d.keys().all(|k| held && k == placeholder.key))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A map with `data`, each key written by its manager.
    fn map(data: &[(&str, &str, &str)]) -> ConfigMap {
        serde_json::from_value(json!({
            "metadata": {
                "name": "m",
                "managedFields": data.iter().map(|(key, _, manager)| json!({
                    "manager": manager, "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {format!("f:{key}"): {}}},
                })).collect::<Vec<_>>(),
            },
            "data": data.iter().map(|(k, v, _)| (k.to_string(), v.to_string())).collect::<std::collections::BTreeMap<_, _>>(),
        }))
        .unwrap()
    }

    fn placeholder() -> Placeholder<'static> {
        Placeholder {
            key: "default",
            value: "none",
            manager: "gpufleet-unshared".into(),
        }
    }

    #[test]
    fn the_placeholder_fills_in_only_a_missing_key() {
        let p = placeholder();
        let missing = map(&[("fleet-a", "x", "gpufleet-fleet-a")]);
        assert!(FillIn(&p).patch(&missing).is_some());
        let set = map(&[("default", "shared", "gpufleet-sharing-default")]);
        assert!(FillIn(&p).patch(&set).is_none());
        assert!(!p.holds(&set));
        // Handing a key over takes it even with the same value, so that
        // its owner's read no longer finds it; done once the placeholder's
        // manager holds it.
        let same = map(&[("default", "none", "gpufleet-sharing-default")]);
        assert!(HandOver(&p).patch(&same).is_some());
        let held = map(&[("default", "none", "gpufleet-unshared")]);
        assert!(p.holds(&held));
        assert!(HandOver(&p).patch(&held).is_none());
        // The owner then lets go, so the placeholder holds it alone.
        let let_go = LetGo {
            key: "default",
            manager: "gpufleet-sharing-default",
        };
        assert!(let_go.patch(&same).is_some());
        assert!(let_go.patch(&held).is_none());
    }

    #[test]
    fn a_map_with_only_the_placeholder_is_unused() {
        let p = placeholder();
        assert!(unused(&map(&[]), &p));
        assert!(unused(
            &map(&[("default", "none", "gpufleet-unshared")]),
            &p
        ));
        // An owner's `default`, another key, another writer: in use.
        assert!(!unused(
            &map(&[("default", "none", "gpufleet-sharing-default")]),
            &p
        ));
        assert!(!unused(
            &map(&[
                ("default", "none", "gpufleet-unshared"),
                ("fleet-a", "x", "gpufleet-fleet-a")
            ]),
            &p
        ));
        assert!(!unused(&map(&[("default", "none", "kubectl-edit")]), &p));
    }
}
