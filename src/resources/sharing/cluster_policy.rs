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
use tokio::sync::OnceCell;

use crate::cluster::api::{Change, Edit, Kind};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::kit::Cluster;
use crate::kit::permissions::Permission;

/// The GPU Operator's ClusterPolicies.
pub const CLUSTER_POLICY: Kind = Kind::new("nvidia.com/v1", "ClusterPolicy", "clusterpolicies");

/// What the resources that read or set the ClusterPolicy need of it:
/// `list` the ClusterPolicies to find the GPU Operator's, `patch`
/// (server-side apply) gpufleet's fields of it, and `get` then `patch` to
/// give back the fields it took over. gpufleet_gpu_sharing points it at
/// the device-plugin ConfigMap; a fleet or node sharing reads its MIG
/// strategy and whether its device plugin reads that ConfigMap.
pub const PERMISSIONS: &[Permission] = &[Permission::cluster(
    "nvidia.com",
    "clusterpolicies",
    &["get", "list", "patch"],
)];

/// A field of ours, as its path under `spec`.
pub type Field = &'static [&'static str];

/// The device plugin's ConfigMap (NVIDIA gpu-operator,
/// api/nvidia/v1/clusterpolicy_types.go, `DevicePluginConfig.Name`).
pub const CONFIG_NAME: Field = &["devicePlugin", "config", "name"];
/// The ConfigMap key for nodes without the config label (the same file,
/// `DevicePluginConfig.Default`).
pub const CONFIG_DEFAULT: Field = &["devicePlugin", "config", "default"];
/// What the operator passes to the device plugin as `MIG_STRATEGY` (the same
/// file, `MIGSpec.Strategy`; controllers/object_controls.go sets the variable).
pub const MIG_STRATEGY: Field = &["mig", "strategy"];

/// Whose fields of which ClusterPolicy a give-back is about.
struct Scope<'a> {
    policy: &'a str,
    kept: &'a [Field],
    ours: &'a str,
}

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

/// ClusterPolicy `name`; `None` when it or the GPU Operator is gone.
pub async fn get(
    cluster: &Cluster,
    name: &str,
    deadline: Deadline,
) -> Result<Option<DynamicObject>, GaveUp> {
    let policies = cluster.kubernetes.custom(CLUSTER_POLICY).await?;
    Ok(policies
        .named(name)
        .get_if_installed(deadline)
        .await?
        .flatten())
}

/// Whether `policy`'s device plugin reads the configuration: its
/// `spec.devicePlugin.config` names the provider's ConfigMap and key
/// `default`, as [`default_fields`] writes them.
pub fn points_at_ours(cluster: &Cluster, policy: &DynamicObject) -> bool {
    let spec = &policy.data["spec"];
    value_at(spec, CONFIG_NAME) == &json!(cluster.device_plugin_config.name)
        && value_at(spec, CONFIG_DEFAULT) == &json!(super::DEFAULT_KEY)
}

/// Whether `policy`'s device plugin mounts the provider's ConfigMap,
/// whichever key it defaults to: the operator mounts
/// `spec.devicePlugin.config.name` into the plugin's pods (NVIDIA
/// gpu-operator, controllers/object_controls.go, handleDevicePluginConfig).
pub fn mounts_ours(cluster: &Cluster, policy: &DynamicObject) -> bool {
    value_at(&policy.data["spec"], CONFIG_NAME) == &json!(cluster.device_plugin_config.name)
}

/// The ClusterPolicy the GPU Operator runs from; `None` when the operator
/// is not installed.
pub async fn find(cluster: &Cluster, deadline: Deadline) -> Result<Option<DynamicObject>, GaveUp> {
    let policies = list(cluster, deadline).await?;
    Ok(running(policies.into_iter().flatten()))
}

/// [`find`] at most once for one apply: a fleet's or node sharing's checks
/// before it writes and its configuration key's write read the same
/// ClusterPolicy.
#[derive(Default)]
pub struct FoundOnce(OnceCell<Option<DynamicObject>>);

impl FoundOnce {
    /// The ClusterPolicy, listed on the first call.
    pub async fn get(
        &self,
        cluster: &Cluster,
        deadline: Deadline,
    ) -> Result<Option<&DynamicObject>, GaveUp> {
        let found = self.0.get_or_try_init(|| find(cluster, deadline)).await?;
        Ok(found.as_ref())
    }
}

/// The operator runs from the first ClusterPolicy it reconciles and marks
/// every other one `status.state: ignored` (NVIDIA gpu-operator,
/// controllers/clusterpolicy_controller.go, Reconcile): one with another
/// state, else one it has not seen yet, else an ignored one; the first by
/// name among equals.
fn running(policies: impl IntoIterator<Item = DynamicObject>) -> Option<DynamicObject> {
    let rank = |p: &DynamicObject| match p.data["status"]["state"].as_str() {
        Some("ignored") => 2,
        None => 1,
        Some(_) => 0,
    };
    policies.into_iter().min_by_key(|p| (rank(p), p.name_any()))
}

fn value_at<'v>(spec: &'v Json, field: &[impl AsRef<str>]) -> &'v Json {
    field.iter().fold(spec, |v, segment| &v[segment.as_ref()])
}

/// The managers that own `field` of `policy`, from its managedFields.
fn owners<'p>(policy: &'p DynamicObject, field: &[&str]) -> impl Iterator<Item = &'p str> {
    let path: Vec<String> = std::iter::once("spec")
        .chain(field.iter().copied())
        .map(|s| format!("f:{s}"))
        .collect();
    policy.managed_fields().iter().filter_map(move |entry| {
        let owned = entry
            .fields_v1
            .as_ref()
            .and_then(|f| serde_json::to_value(f).ok())
            .unwrap_or_default();
        (!value_at(&owned, &path).is_null())
            .then_some(entry.manager.as_deref())
            .flatten()
    })
}

/// A writer other than `ours` that owns `field` of `policy`.
fn other_owner(policy: &DynamicObject, field: Field, ours: &str) -> Option<String> {
    owners(policy, field)
        .find(|manager| *manager != ours)
        .map(str::to_string)
}

/// Whether `manager` owns `field` of `policy`.
pub fn owned_by(policy: &DynamicObject, field: &[&str], manager: &str) -> bool {
    owners(policy, field).any(|m| m == manager)
}

/// Points `policy` at the configuration: exactly `fields`, as `manager`.
/// Each field another writer owns is recorded in `taken` before it is
/// taken over; fields recorded for this policy that are not among `fields`
/// are given back.
pub async fn point(
    cluster: &Cluster,
    policy: &DynamicObject,
    fields: &[(Field, Json)],
    manager: &str,
    taken: &mut Vec<TakenOver>,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let name = policy.name_any();
    let recordable: Vec<Field> = fields.iter().map(|(f, _)| *f).collect();
    record(policy, &recordable, manager, taken);
    let kept: Vec<Field> = fields.iter().map(|(f, _)| *f).collect();
    let apply = apply(cluster, &name, fields, manager, deadline);
    let scope = Scope {
        policy: &name,
        kept: &kept,
        ours: manager,
    };
    give_back_around(cluster, scope, taken, apply, deadline).await
}

/// Records in `taken` the value and owner of each of `fields` of `policy`
/// that a writer other than `manager` holds, replacing what was recorded of
/// it: what that writer set last (a `helm upgrade` with a new MIG strategy
/// while we held it) is what goes back to it.
fn record(policy: &DynamicObject, fields: &[Field], manager: &str, taken: &mut Vec<TakenOver>) {
    let name = policy.name_any();
    for field in fields {
        let value = value_at(&policy.data["spec"], field);
        if value.is_null() {
            continue;
        }
        if let Some(owner) = other_owner(policy, field, manager) {
            taken.retain(|t| !(t.policy == name && t.field == *field));
            taken.push(TakenOver {
                policy: name.clone(),
                field: field.iter().map(|s| s.to_string()).collect(),
                value: value.clone(),
                manager: owner,
            });
        }
    }
}

/// The fields `gpufleet_gpu_sharing` sets: the ConfigMap, its default key
/// and, when given, the MIG strategy.
pub fn default_fields(cluster: &Cluster, mig_strategy: Option<&str>) -> Vec<(Field, Json)> {
    let mut fields = vec![
        (CONFIG_NAME, json!(cluster.device_plugin_config.name)),
        (CONFIG_DEFAULT, json!(super::DEFAULT_KEY)),
    ];
    if let Some(mig) = mig_strategy {
        fields.push((MIG_STRATEGY, json!(mig)));
    }
    fields
}

/// Releases our fields of ClusterPolicy `name` and gives back what we took.
pub async fn release(
    cluster: &Cluster,
    name: &str,
    manager: &str,
    taken: &mut Vec<TakenOver>,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let apply = apply(cluster, name, &[], manager, deadline);
    let scope = Scope {
        policy: name,
        kept: &[],
        ours: manager,
    };
    give_back_around(cluster, scope, taken, apply, deadline).await
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

/// Runs `apply`, giving back around it, each as the writer that owned it,
/// the fields recorded for `policy` that are not among `kept`, then forgets
/// them. Before the apply: those we set to another value,
/// so that their owner holds them again and our apply leaves them alone
/// (releasing every field of a map would leave it null, which the CRD
/// refuses). After it: those our release deleted. A field another writer
/// set meanwhile keeps its newer value.
async fn give_back_around(
    cluster: &Cluster,
    scope: Scope<'_>,
    taken: &mut Vec<TakenOver>,
    apply: impl std::future::Future<Output = Result<(), GaveUp>>,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let Scope { policy, kept, ours } = scope;
    let among = |fields: &[Field], t: &TakenOver| fields.iter().any(|f| t.field == *f);
    let given: Vec<TakenOver> = taken
        .iter()
        .filter(|t| t.policy == policy && !among(kept, t))
        .cloned()
        .collect();
    give_back(cluster, policy, &given, ours, deadline).await?;
    apply.await?;
    give_back(cluster, policy, &given, ours, deadline).await?;
    taken.retain(|t| t.policy != policy || among(kept, t));
    Ok(())
}

/// One pass of [`give_back_around`]: a merge patch per owner.
async fn give_back(
    cluster: &Cluster,
    policy: &str,
    given: &[TakenOver],
    ours: &str,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let mut managers: Vec<&str> = given.iter().map(|t| t.manager.as_str()).collect();
    managers.sort();
    managers.dedup();
    let policies = cluster.kubernetes.custom(CLUSTER_POLICY).await?;
    for manager in managers {
        let change = GiveBack {
            manager: manager.to_string(),
            ours: ours.to_string(),
            fields: given
                .iter()
                .filter(|t| t.manager == manager)
                .cloned()
                .collect(),
        };
        policies.named(policy).update(&change, deadline).await?;
    }
    Ok(())
}

/// Taken-over fields of one owner, set again to their value then where
/// they are missing or we hold them with another value.
struct GiveBack {
    manager: String,
    ours: String,
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
            let value = value_at(&live.data["spec"], &taken.field);
            let field: Vec<&str> = taken.field.iter().map(String::as_str).collect();
            let held_by_us = owned_by(live, &field, &self.ours) && *value != taken.value;
            if !value.is_null() && !held_by_us {
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
    fn the_policy_the_operator_ignores_is_never_the_one_found() {
        let named = |name: &str, state: Option<&str>| {
            let mut p = policy(json!({}), json!([]));
            p.metadata.name = Some(name.into());
            if let Some(state) = state {
                p.data["status"] = json!({ "state": state });
            }
            p
        };
        let found = |policies: Vec<DynamicObject>| running(policies).map(|p| p.name_any());
        let first = || named("a-policy", Some("ignored"));
        let second = || named("z-policy", Some("ready"));
        assert_eq!(found(vec![first(), second()]).as_deref(), Some("z-policy"));
        let unseen = || named("b-policy", None);
        assert_eq!(found(vec![unseen(), second()]).as_deref(), Some("z-policy"));
        assert_eq!(found(vec![first(), unseen()]).as_deref(), Some("b-policy"));
        assert_eq!(found(vec![first()]).as_deref(), Some("a-policy"));
        assert_eq!(found(vec![]), None);
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
    fn what_another_writer_set_last_is_recorded() {
        let helm_holds = |strategy: &str| {
            policy(
                json!({"mig": {"strategy": strategy}, "devicePlugin": {"config": {"name": "ours"}}}),
                json!([
                    entry("helm", json!({"f:spec": {"f:mig": {"f:strategy": {}}}})),
                    entry(
                        "gpufleet",
                        json!({"f:spec": {"f:devicePlugin": {"f:config": {"f:name": {}}}}})
                    ),
                ]),
            )
        };
        let mut taken = Vec::new();
        record(
            &helm_holds("single"),
            &[MIG_STRATEGY, CONFIG_NAME],
            "gpufleet",
            &mut taken,
        );
        // A Helm upgrade set another strategy since we took it.
        record(
            &helm_holds("none"),
            &[MIG_STRATEGY, CONFIG_NAME],
            "gpufleet",
            &mut taken,
        );
        assert_eq!(
            taken,
            [TakenOver {
                policy: "cluster-policy".into(),
                field: vec!["mig".into(), "strategy".into()],
                value: json!("none"),
                manager: "helm".into(),
            }]
        );
        // Ours alone: the record stays.
        let ours = policy(
            json!({"mig": {"strategy": "mixed"}}),
            json!([entry(
                "gpufleet",
                json!({"f:spec": {"f:mig": {"f:strategy": {}}}})
            )]),
        );
        record(&ours, &[MIG_STRATEGY], "gpufleet", &mut taken);
        assert_eq!(taken[0].value, json!("none"));
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
            ours: "gpufleet".into(),
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
        // Ours, with another value: given back before we let go of it.
        let held = policy(
            json!({"mig": {"strategy": "mixed"}, "devicePlugin": {"config": {"name": ""}}}),
            json!([entry(
                "gpufleet",
                json!({"f:spec": {"f:mig": {"f:strategy": {}}}})
            )]),
        );
        let Some(Edit::Merge { patch, .. }) = change.patch(&held) else {
            panic!("ours not given back");
        };
        assert_eq!(patch, json!({"spec": {"mig": {"strategy": "single"}}}));
    }
}
