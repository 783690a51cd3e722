//! The GPU Operator's ClusterPolicy, as `gpufleet_gpu_sharing` points it at
//! the device-plugin configuration: a server-side apply of only our fields
//! (`spec.devicePlugin.config.{name,default}`, `spec.mig.strategy`) with a
//! field manager of our own. A forced apply takes a field away from the
//! writer that owned it (the operator's Helm chart sets all three), and
//! releasing it then deletes it; so before taking a field we record its
//! value and owner, and when we release it we give it back as that owner.

use kube::ResourceExt;
use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::cluster::api::{Change, Edit, Kind};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::kit::Cluster;

/// The GPU Operator's ClusterPolicies.
pub const CLUSTER_POLICY: Kind = Kind::new("nvidia.com/v1", "ClusterPolicy", "clusterpolicies");

/// A field of ours, as its path under `spec`.
pub type Field = &'static [&'static str];

/// The device plugin's ConfigMap (GPU Operator, api/nvidia/v1 `DevicePluginConfig`).
pub const CONFIG_NAME: Field = &["devicePlugin", "config", "name"];
/// The ConfigMap key for nodes without the config label.
pub const CONFIG_DEFAULT: Field = &["devicePlugin", "config", "default"];
/// What the operator passes to the device plugin as `MIG_STRATEGY`.
pub const MIG_STRATEGY: Field = &["mig", "strategy"];

/// A field another writer owned before we took it over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TakenOver {
    /// The ClusterPolicy.
    policy: String,
    /// The field's path under `spec`.
    field: Vec<String>,
    /// Its value then.
    value: Json,
    /// The field manager that owned it.
    manager: String,
}

/// The ClusterPolicies; `None` when the GPU Operator is not installed.
pub async fn list(
    cluster: &Cluster,
    deadline: Deadline,
) -> Result<Option<Vec<DynamicObject>>, GaveUp> {
    let policies = cluster.kubernetes.custom(CLUSTER_POLICY).await?;
    policies.list_if_installed(None, deadline).await
}

/// The ClusterPolicy the GPU Operator runs from: the first by name (the
/// operator uses one); `None` when the operator is not installed.
pub async fn find(cluster: &Cluster, deadline: Deadline) -> Result<Option<DynamicObject>, GaveUp> {
    let policies = list(cluster, deadline).await?;
    Ok(policies.into_iter().flatten().min_by_key(|p| p.name_any()))
}

fn value_at<'v>(spec: &'v Json, field: &[impl AsRef<str>]) -> &'v Json {
    field.iter().fold(spec, |v, segment| &v[segment.as_ref()])
}

/// A writer other than `ours` that owns `field` of `policy`, from its
/// managedFields.
fn other_owner(policy: &DynamicObject, field: Field, ours: &str) -> Option<String> {
    policy
        .managed_fields()
        .iter()
        .filter(|entry| entry.manager.as_deref() != Some(ours))
        .find(|entry| {
            let owned = entry
                .fields_v1
                .as_ref()
                .and_then(|f| serde_json::to_value(f).ok())
                .unwrap_or_default();
            let path: Vec<String> = std::iter::once("spec")
                .chain(field.iter().copied())
                .map(|s| format!("f:{s}"))
                .collect();
            !value_at(&owned, &path).is_null()
        })
        .and_then(|entry| entry.manager.clone())
}

/// Points `policy` at the configuration: exactly `fields`, as `manager`.
/// Each field another writer owns is recorded in `taken` before it is
/// taken over; fields recorded for this policy that are no longer among
/// `fields` are given back.
pub async fn point(
    cluster: &Cluster,
    policy: &DynamicObject,
    fields: &[(Field, Json)],
    manager: &str,
    taken: &mut Vec<TakenOver>,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let name = policy.name_any();
    for (field, _) in fields {
        let recorded = taken.iter().any(|t| t.policy == name && t.field == *field);
        let value = value_at(&policy.data["spec"], field);
        if recorded || value.is_null() {
            continue;
        }
        if let Some(owner) = other_owner(policy, field, manager) {
            taken.push(TakenOver {
                policy: name.clone(),
                field: field.iter().map(|s| s.to_string()).collect(),
                value: value.clone(),
                manager: owner,
            });
        }
    }
    apply(cluster, &name, fields, manager, deadline).await?;
    let kept: Vec<&[&str]> = fields.iter().map(|(f, _)| *f).collect();
    give_back(cluster, &name, &kept, taken, deadline).await
}

/// Releases our fields of ClusterPolicy `name` and gives back what we took.
pub async fn release(
    cluster: &Cluster,
    name: &str,
    manager: &str,
    taken: &mut Vec<TakenOver>,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    apply(cluster, name, &[], manager, deadline).await?;
    give_back(cluster, name, &[], taken, deadline).await
}

/// A server-side apply of exactly `fields`; none releases them all.
async fn apply(
    cluster: &Cluster,
    name: &str,
    fields: &[(Field, Json)],
    manager: &str,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let policies = cluster.kubernetes.custom(CLUSTER_POLICY).await?;
    let mut object = policies.dynamic(name);
    object.data = json!({});
    for (field, value) in fields {
        let mut at = &mut object.data["spec"];
        for segment in *field {
            at = &mut at[*segment];
        }
        *at = value.clone();
    }
    let action = if fields.is_empty() {
        "release"
    } else {
        "point"
    };
    policies
        .named(name)
        .doing(format!(
            "{action} the device-plugin configuration of ClusterPolicy {name:?}"
        ))
        .apply(&object, manager, deadline)
        .await?;
    Ok(())
}

/// Gives back, each as the writer that owned it, the fields recorded for
/// `policy` that are not among `kept`, and forgets them. A field that is
/// there after our release (another writer set it meanwhile) keeps its
/// newer value.
async fn give_back(
    cluster: &Cluster,
    policy: &str,
    kept: &[Field],
    taken: &mut Vec<TakenOver>,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let returned = |t: &TakenOver| t.policy == policy && !kept.iter().any(|f| t.field == *f);
    let mut managers: Vec<String> = taken
        .iter()
        .filter(|t| returned(t))
        .map(|t| t.manager.clone())
        .collect();
    managers.sort();
    managers.dedup();
    let policies = cluster.kubernetes.custom(CLUSTER_POLICY).await?;
    for manager in managers {
        let fields: Vec<TakenOver> = taken
            .iter()
            .filter(|t| returned(t) && t.manager == manager)
            .cloned()
            .collect();
        policies
            .named(policy)
            .update(&GiveBack { manager, fields }, deadline)
            .await?;
    }
    taken.retain(|t| !returned(t));
    Ok(())
}

/// Taken-over fields of one owner, set again where they are missing.
struct GiveBack {
    manager: String,
    fields: Vec<TakenOver>,
}

impl Change<DynamicObject> for GiveBack {
    fn describe(&self) -> String {
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|t| format!("spec.{}", t.field.join(".")))
            .collect();
        format!("give {} back to {}", fields.join(", "), self.manager)
    }

    fn patch(&self, live: &DynamicObject) -> Option<Edit> {
        let mut patch = json!({});
        let mut missing = false;
        for taken in &self.fields {
            if !value_at(&live.data["spec"], &taken.field).is_null() {
                continue;
            }
            missing = true;
            let mut at = &mut patch["spec"];
            for segment in &taken.field {
                at = &mut at[segment.as_str()];
            }
            *at = taken.value.clone();
        }
        missing.then(|| Edit::Merge {
            manager: self.manager.clone(),
            patch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(spec: Json, managed: Json) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy", "managedFields": managed},
            "spec": spec,
        }))
        .unwrap()
    }

    fn entry(manager: &str, fields: Json) -> Json {
        json!({"manager": manager, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    #[test]
    fn the_owner_is_another_writer_that_owns_the_field() {
        let live = policy(
            json!({"mig": {"strategy": "single"}, "devicePlugin": {"config": {"name": "x"}}}),
            json!([
                entry("gpufleet", json!({"f:spec": {"f:mig": {"f:strategy": {}}}})),
                entry(
                    "helm",
                    json!({"f:spec": {"f:mig": {"f:strategy": {}}, "f:devicePlugin": {"f:enabled": {}}}})
                ),
            ]),
        );
        assert_eq!(
            other_owner(&live, MIG_STRATEGY, "gpufleet").as_deref(),
            Some("helm")
        );
        assert_eq!(
            other_owner(&live, MIG_STRATEGY, "helm").as_deref(),
            Some("gpufleet")
        );
        assert_eq!(other_owner(&live, CONFIG_NAME, "gpufleet"), None);
    }

    #[test]
    fn giving_back_sets_only_what_is_missing() {
        let taken = |field: Field, value: Json| TakenOver {
            policy: "cluster-policy".into(),
            field: field.iter().map(|s| s.to_string()).collect(),
            value,
            manager: "helm".into(),
        };
        let change = GiveBack {
            manager: "helm".into(),
            fields: vec![
                taken(MIG_STRATEGY, json!("single")),
                taken(CONFIG_NAME, json!("")),
            ],
        };
        // Someone set the config name after our release: theirs stays.
        let live = policy(
            json!({"devicePlugin": {"config": {"name": "theirs"}}}),
            json!([]),
        );
        let Some(Edit::Merge { manager, patch }) = change.patch(&live) else {
            panic!("nothing to give back");
        };
        assert_eq!(manager, "helm");
        assert_eq!(patch, json!({"spec": {"mig": {"strategy": "single"}}}));
        let given = policy(
            json!({"mig": {"strategy": "single"}, "devicePlugin": {"config": {"name": ""}}}),
            json!([]),
        );
        assert!(change.patch(&given).is_none());
        assert!(change.landed(&given));
    }
}
