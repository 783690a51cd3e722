//! Typed calls. A handle per API ([`Objects`]) and per object ([`Named`])
//! makes every call: its description (what gpufleet was doing, the request,
//! the API) follows from the API, the verb and the object's name, it runs
//! under the one retry policy, and it fails with the one error type,
//! [`GaveUp`]. [`Named::update`] is the one read-modify-write, for fields
//! several writers share.

use std::fmt::{self, Debug, Display};
use std::sync::Mutex;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::client::{FIELD_MANAGER, Kubernetes};
use super::errors::{api_missing, object_missing, status};
use super::retry::{Call, Deadline, GaveUp};
use crate::protocol::{AttributePath, Diagnostic};

/// A Kubernetes API: its group/version, kind and resource (plural).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    /// `v1`, `scheduling.k8s.io/v1`.
    pub api_version: &'static str,
    /// `Node`, `PriorityClass`.
    pub kind: &'static str,
    /// `nodes`, `priorityclasses`.
    pub plural: &'static str,
}

impl Kind {
    /// Nodes.
    pub const NODE: Kind = Kind::new("v1", "Node", "nodes");
    /// ConfigMaps.
    pub const CONFIG_MAP: Kind = Kind::new("v1", "ConfigMap", "configmaps");
    /// Pods.
    pub const POD: Kind = Kind::new("v1", "Pod", "pods");
    /// DaemonSets.
    pub const DAEMON_SET: Kind = Kind::new("apps/v1", "DaemonSet", "daemonsets");
    /// SelfSubjectReviews: whom the API server authenticates the caller as.
    pub const SELF_SUBJECT_REVIEW: Kind = Kind::new(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
    );

    /// The API `api_version` `kind`, served as `plural`.
    pub const fn new(api_version: &'static str, kind: &'static str, plural: &'static str) -> Self {
        Self {
            api_version,
            kind,
            plural,
        }
    }

    /// The kind in the plural, as messages name it: the API's plural with the
    /// kind's capitals (`ClusterPolicies`, `PriorityClasses`).
    pub fn plural_kind(&self) -> String {
        let shared: usize = self
            .kind
            .chars()
            .zip(self.plural.chars())
            .take_while(|(k, p)| k.to_ascii_lowercase() == *p)
            .map(|(k, _)| k.len_utf8())
            .sum();
        format!("{}{}", &self.kind[..shared], &self.plural[shared..])
    }

    /// The API for untyped objects (custom resources).
    pub fn api_resource(&self) -> ApiResource {
        let (group, version) = self
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", self.api_version));
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, self.kind),
            self.plural,
        )
    }
}

/// The API as messages name it: `scheduling.k8s.io/v1 PriorityClass`.
impl Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version, self.kind)
    }
}

/// What typed calls need of an object.
pub trait Object: Clone + DeserializeOwned + Serialize + Debug + Send + Sync + Resource {}
impl<K: Clone + DeserializeOwned + Serialize + Debug + Send + Sync + Resource> Object for K {}

/// The objects of one API (in one namespace, for namespaced kinds).
pub struct Objects<'a, K> {
    kubernetes: &'a Kubernetes,
    api: Api<K>,
    kind: Kind,
    namespace: Option<String>,
    /// Why gpufleet makes these calls, appended to each one's action.
    purpose: Option<String>,
    /// Whose credentials the calls carry when not the provider's own
    /// (`the token`), for the request.
    credentials: Option<&'static str>,
}

impl Kubernetes {
    /// The objects of a cluster-scoped built-in kind.
    pub async fn objects<K>(&self, kind: Kind) -> Result<Objects<'_, K>, GaveUp>
    where
        K: Resource<Scope = k8s_openapi::ClusterResourceScope>,
        K::DynamicType: Default,
    {
        Ok(self.handle(Api::all(self.client().await?), kind, None))
    }

    /// The objects of a namespaced built-in kind in `namespace`.
    pub async fn namespaced<K>(&self, kind: Kind, namespace: &str) -> Result<Objects<'_, K>, GaveUp>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        let api = Api::namespaced(self.client().await?, namespace);
        Ok(self.handle(api, kind, Some(namespace.to_string())))
    }

    /// The objects of a cluster-scoped custom resource.
    pub async fn custom(&self, kind: Kind) -> Result<Objects<'_, DynamicObject>, GaveUp> {
        let api = Api::all_with(self.client().await?, &kind.api_resource());
        Ok(self.handle(api, kind, None))
    }

    /// The objects of a namespaced custom resource in `namespace`.
    pub async fn custom_namespaced(
        &self,
        kind: Kind,
        namespace: &str,
    ) -> Result<Objects<'_, DynamicObject>, GaveUp> {
        let api = Api::namespaced_with(self.client().await?, namespace, &kind.api_resource());
        Ok(self.handle(api, kind, Some(namespace.to_string())))
    }

    /// The objects of a cluster-scoped built-in kind, called with nothing
    /// but bearer token `token` (named `whose` in requests) on this
    /// connection's server and CA.
    pub async fn objects_as_token<K>(
        &self,
        kind: Kind,
        token: &str,
        whose: &'static str,
    ) -> Result<Objects<'_, K>, GaveUp>
    where
        K: Resource<Scope = k8s_openapi::ClusterResourceScope>,
        K::DynamicType: Default,
    {
        let mut objects = self.handle(Api::all(self.token_client(token).await?), kind, None);
        objects.credentials = Some(whose);
        Ok(objects)
    }

    fn handle<K>(&self, api: Api<K>, kind: Kind, namespace: Option<String>) -> Objects<'_, K> {
        Objects {
            kubernetes: self,
            api,
            kind,
            namespace,
            purpose: None,
            credentials: None,
        }
    }
}

impl<'a, K: Object> Objects<'a, K> {
    /// The same objects, with every call's action saying why it is made
    /// (`to restart the device plugin`).
    pub fn because(mut self, purpose: impl Into<String>) -> Self {
        self.purpose = Some(purpose.into());
        self
    }

    /// An untyped object of this API named `name`, to apply.
    pub fn dynamic(&self, name: &str) -> DynamicObject {
        DynamicObject::new(name, &self.kind.api_resource())
    }

    /// Object `name`.
    pub fn named<'n>(&'n self, name: &'n str) -> Named<'n, K> {
        Named {
            objects: self,
            name,
            action: None,
        }
    }

    fn in_namespace(&self) -> String {
        let namespace = match &self.namespace {
            Some(namespace) => format!(" in namespace {namespace:?}"),
            None => String::new(),
        };
        match self.credentials {
            Some(whose) => format!("{namespace} (as {whose})"),
            None => namespace,
        }
    }

    /// Creates `object`, which the API server names (a review); `None` when
    /// the server does not accept the calls' credentials (401), an answer
    /// in itself for [`Kubernetes::objects_as_token`].
    pub async fn create(&self, object: &K, deadline: Deadline) -> Result<Option<K>, GaveUp> {
        let call = self.call(
            format!("create a {}", self.kind.kind),
            format!("POST {}{}", self.kind, self.in_namespace()),
        );
        self.kubernetes
            .call(deadline, &call, || async {
                match self.api.create(&Default::default(), object).await {
                    Ok(created) => Ok(Some(created)),
                    Err(e) if status(&e) == Some(401) => Ok(None),
                    Err(e) => Err(e),
                }
            })
            .await
    }

    fn call(&self, action: String, request: String) -> Call {
        let action = match &self.purpose {
            Some(purpose) => format!("{action} {purpose}"),
            None => action,
        };
        Call {
            action,
            request,
            api: self.kind,
        }
    }

    /// The objects carrying every label of `selector` (`key=value,...`),
    /// or all of them.
    pub async fn list(&self, selector: Option<&str>, deadline: Deadline) -> Result<Vec<K>, GaveUp> {
        Ok(self
            .list_if_installed(selector, deadline)
            .await?
            .unwrap_or_default())
    }

    /// [`Self::list`], `None` when the API is not installed.
    pub async fn list_if_installed(
        &self,
        selector: Option<&str>,
        deadline: Deadline,
    ) -> Result<Option<Vec<K>>, GaveUp> {
        let labels = selector
            .map(|s| format!(" with labels {s}"))
            .unwrap_or_default();
        let call = self.call(
            format!("list the {}{labels}", self.kind.plural_kind()),
            format!("LIST {}{}{labels}", self.kind, self.in_namespace()),
        );
        let params = selector.map_or_else(ListParams::default, |s| ListParams::default().labels(s));
        self.kubernetes
            .call(deadline, &call, || async {
                match self.api.list(&params).await {
                    Ok(list) => Ok(Some(list.items)),
                    Err(e) if api_missing(&e) => Ok(None),
                    Err(e) => Err(e),
                }
            })
            .await
    }
}

/// One object of an API, by name: the calls gpufleet makes on it.
pub struct Named<'a, K> {
    objects: &'a Objects<'a, K>,
    name: &'a str,
    action: Option<String>,
}

/// One change to fields that other writers share, made by
/// [`Named::update`].
pub trait Change<K>: Sync {
    /// What it changes, for messages: `spec.taints`.
    fn describe(&self) -> String;
    /// The patch that makes `live` what this change wants (its
    /// resourceVersion is added by [`Named::update`]); `None` when `live` is
    /// that already.
    fn patch(&self, live: &K) -> Option<Edit>;
    /// Whether `live` shows this change made: asked when the answer to a
    /// write was lost.
    fn landed(&self, live: &K) -> bool {
        self.patch(live).is_none()
    }
}

/// A patch of a [`Change`].
pub enum Edit {
    /// A JSON merge patch as field manager `manager`.
    Merge {
        /// The field manager.
        manager: String,
        /// The patch.
        patch: serde_json::Value,
    },
    /// A server-side apply of exactly these fields (apiVersion, kind and
    /// metadata.name included) as field manager `manager`.
    Apply {
        /// The field manager.
        manager: String,
        /// The fields.
        fields: serde_json::Value,
    },
}

impl<K: Object> Named<'_, K> {
    /// The same object, with every call's action saying what gpufleet does
    /// (`update the taints of Node "gpu-1"`) instead of the plain verb.
    pub fn doing(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    /// `Node "gpu-1"`, `ConfigMap gpu-operator/config`.
    pub fn describe(&self) -> String {
        describe(
            self.objects.kind,
            self.objects.namespace.as_deref(),
            self.name,
        )
    }

    /// The call `method` makes (`GET`), for doing `verb` (`read`) unless
    /// [`Self::doing`] said what.
    fn call(&self, verb: &str, method: &str, how: Option<String>) -> Call {
        let action = self
            .action
            .clone()
            .unwrap_or_else(|| format!("{verb} {}", self.describe()));
        self.request(action, method, how)
    }

    /// The look at the object after an unknown outcome.
    fn checking(&self, outcome: &str) -> Call {
        let action = format!("find out whether {} {outcome}", self.describe());
        self.request(action, "GET", None)
    }

    fn request(&self, action: String, method: &str, how: Option<String>) -> Call {
        let how = how.map(|h| format!(" ({h})")).unwrap_or_default();
        let request = format!(
            "{method} {} {:?}{}{how}",
            self.objects.kind,
            self.name,
            self.objects.in_namespace()
        );
        self.objects.call(action, request)
    }

    async fn get_once(&self) -> Result<Option<K>, kube::Error> {
        match self.objects.api.get(self.name).await {
            Ok(object) => Ok(Some(object)),
            Err(e) if object_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The object; `None` when it does not exist. An API that is not
    /// installed is an error.
    pub async fn get(&self, deadline: Deadline) -> Result<Option<K>, GaveUp> {
        let call = self.call("read", "GET", None);
        self.objects
            .kubernetes
            .call(deadline, &call, || self.get_once())
            .await
    }

    /// [`Self::get`], with `None` when the API is not installed.
    pub async fn get_if_installed(&self, deadline: Deadline) -> Result<Option<Option<K>>, GaveUp> {
        let call = self.call("read", "GET", None);
        self.objects
            .kubernetes
            .call(deadline, &call, || async {
                match self.get_once().await {
                    Err(e) if api_missing(&e) => Ok(None),
                    other => other.map(Some),
                }
            })
            .await
    }

    /// Creates or updates the object by server-side apply as field manager
    /// `manager`: it owns exactly the fields `value` carries, next to other
    /// managers' fields, takes them over from others, and stops owning (so
    /// the API server removes) fields it sent before and leaves out now.
    /// When the policy gives up without knowing whether the write landed,
    /// [`GaveUp::maybe_applied`] says so and [`Self::find_applied`] tells.
    pub async fn apply(&self, value: &K, manager: &str, deadline: Deadline) -> Result<K, GaveUp> {
        let call = self.call(
            "write",
            "PATCH",
            Some(format!("server-side apply as {manager}")),
        );
        let params = PatchParams::apply(manager).force();
        let patch = Patch::Apply(value);
        self.objects
            .kubernetes
            .call(deadline, &call, || {
                self.objects.api.patch(self.name, &params, &patch)
            })
            .await
    }

    /// Creates the object as field manager `manager` unless one of its name
    /// exists, whoever made it: a create, which takes nothing over, where
    /// an apply would. True when this call created it; a create whose
    /// answer was lost and whose retry found the object reads as not, so a
    /// caller that must know whose it is reads it.
    pub async fn create_if_absent(
        &self,
        value: &K,
        manager: &str,
        deadline: Deadline,
    ) -> Result<bool, GaveUp> {
        let call = self.call("create", "POST", Some("unless it exists".to_string()));
        let params = PostParams {
            field_manager: Some(manager.to_string()),
            ..Default::default()
        };
        let attempt = || async {
            match self.objects.api.create(&params, value).await {
                Ok(_) => Ok(true),
                Err(e) if status(&e) == Some(409) => Ok(false),
                Err(e) => Err(e),
            }
        };
        self.objects.kubernetes.call(deadline, &call, attempt).await
    }

    /// Deletes the object; true when it was there. One already gone counts
    /// as deleted, and so does one found gone after the answer to its delete
    /// was lost.
    pub async fn delete(&self, deadline: Deadline) -> Result<bool, GaveUp> {
        self.delete_with(&DeleteParams::default(), None, deadline)
            .await
    }

    /// Deletes the object only if it is still exactly `live` (its uid and
    /// resourceVersion): one changed or gone meanwhile is left alone.
    pub async fn delete_if_unchanged(&self, live: &K, deadline: Deadline) -> Result<bool, GaveUp> {
        let params = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                resource_version: live.meta().resource_version.clone(),
                uid: live.meta().uid.clone(),
            }),
            ..Default::default()
        };
        self.delete_with(
            &params,
            Some("if unchanged, by its uid and resourceVersion"),
            deadline,
        )
        .await
    }

    async fn delete_with(
        &self,
        params: &DeleteParams,
        how: Option<&str>,
        deadline: Deadline,
    ) -> Result<bool, GaveUp> {
        let call = self.call("delete", "DELETE", how.map(str::to_string));
        let preconditioned = params.preconditions.is_some();
        let attempt = || async {
            match self.objects.api.delete(self.name, params).await {
                Ok(_) => Ok(true),
                Err(e) if status(&e) == Some(404) => Ok(false),
                Err(e) if preconditioned && status(&e) == Some(409) => Ok(false),
                Err(e) => Err(e),
            }
        };
        let kubernetes = self.objects.kubernetes;
        let gave_up = match kubernetes.call(deadline, &call, attempt).await {
            Err(gave_up) if gave_up.maybe_applied => gave_up,
            done => return done,
        };
        let check = self.checking("was deleted");
        match kubernetes.check(&check, || self.get_once()).await {
            Ok(None) => Ok(true),
            _ => Err(gave_up),
        }
    }

    /// The one read-modify-write: reads the object, and when `change` has
    /// something to do, patches it with the object's resourceVersion as a
    /// precondition, so that no other writer's change made meanwhile is
    /// lost (a conflict reads it again). Returns the object as it was
    /// before the change, `None` when it does not exist. When the policy
    /// gives up on a write whose answer was lost, the object itself says
    /// whether the change landed.
    pub async fn update(
        &self,
        change: &impl Change<K>,
        deadline: Deadline,
    ) -> Result<Option<K>, GaveUp> {
        let how = format!("{}, with its resourceVersion", change.describe());
        let call = self.call("update", "GET, then PATCH", Some(how));
        self.read_modify_write(None, change, &call, deadline).await
    }

    /// [`Self::update`] from `listed`, the object as a LIST just returned
    /// it: the first write carries that resourceVersion and needs no GET.
    /// Only an attempt after a failed one (a conflict: someone wrote
    /// meanwhile; or an answer lost) reads the object again.
    pub async fn update_listed(
        &self,
        listed: K,
        change: &impl Change<K>,
        deadline: Deadline,
    ) -> Result<Option<K>, GaveUp> {
        let how = format!(
            "{}, with the resourceVersion it was listed at; read again after a conflict",
            change.describe()
        );
        let call = self.call("update", "PATCH", Some(how));
        self.read_modify_write(Some(listed), change, &call, deadline)
            .await
    }

    /// The attempts of [`Self::update`]: the first from `known` if given,
    /// every other from a fresh GET.
    async fn read_modify_write(
        &self,
        known: Option<K>,
        change: &impl Change<K>,
        call: &Call,
        deadline: Deadline,
    ) -> Result<Option<K>, GaveUp> {
        let known: Mutex<Option<K>> = Mutex::new(known);
        let last_read: Mutex<Option<K>> = Mutex::new(None);
        let attempt = || async {
            let known = known.lock().expect("never poisoned").take();
            let live = match known {
                Some(live) => live,
                None => match self.get_once().await? {
                    Some(live) => live,
                    None => return Ok(None),
                },
            };
            let Some(edit) = change.patch(&live) else {
                return Ok(Some(live));
            };
            let version = live.resource_version();
            *last_read.lock().expect("never poisoned") = Some(live.clone());
            let written = match edit {
                Edit::Merge { manager, mut patch } => {
                    patch["metadata"]["resourceVersion"] = json!(version);
                    let params = PatchParams {
                        field_manager: Some(manager),
                        ..Default::default()
                    };
                    self.objects
                        .api
                        .patch(self.name, &params, &Patch::Merge(&patch))
                        .await
                }
                Edit::Apply {
                    manager,
                    mut fields,
                } => {
                    fields["metadata"]["name"] = json!(self.name);
                    fields["metadata"]["resourceVersion"] = json!(version);
                    let params = PatchParams::apply(&manager).force();
                    self.objects
                        .api
                        .patch(self.name, &params, &Patch::Apply(&fields))
                        .await
                }
            };
            match written {
                Ok(_) => Ok(Some(live)),
                Err(e) if status(&e) == Some(404) => Ok(None),
                Err(e) => Err(e),
            }
        };
        let kubernetes = self.objects.kubernetes;
        let gave_up = match kubernetes.call(deadline, call, attempt).await {
            Err(gave_up) if gave_up.maybe_applied => gave_up,
            done => return done,
        };
        let check = self.checking("was updated");
        match kubernetes.check(&check, || self.get_once()).await {
            Ok(Some(live)) if change.landed(&live) => Ok(last_read
                .into_inner()
                .expect("never poisoned")
                .or(Some(live))),
            _ => Err(gave_up),
        }
    }

    /// Makes `change`, which drops one writer's share of the object, then
    /// deletes the object when `unused` says nobody has anything left in
    /// it. The delete holds only while the object is as last read; a write
    /// made meanwhile refuses it, and another round (change, read, delete)
    /// settles whether the object is still unused. Returns the object as it
    /// was before the change, `None` when it did not exist.
    pub async fn release(
        &self,
        change: &impl Change<K>,
        unused: impl Fn(&K) -> bool,
        deadline: Deadline,
    ) -> Result<Option<K>, GaveUp> {
        const ROUNDS: usize = 5;
        let before = self.update(change, deadline).await?;
        for round in 1..=ROUNDS {
            if round > 1 {
                self.update(change, deadline).await?;
            }
            let Some(live) = self.get(deadline).await? else {
                break;
            };
            if !unused(&live) || self.delete_if_unchanged(&live, deadline).await? {
                break;
            }
        }
        Ok(before)
    }

    /// Create refuses to adopt an object someone else made: the user
    /// imports it instead.
    pub async fn ensure_absent(&self, deadline: Deadline) -> Result<(), GaveUp> {
        let call = self.call("create", "GET", None);
        let kubernetes = self.objects.kubernetes;
        let Some(existing) = kubernetes.call(deadline, &call, || self.get_once()).await? else {
            return Ok(());
        };
        let whose = if applied_by_us(&existing) {
            " It was written by gpufleet (field manager `gpufleet`): by another Terraform configuration, or by an apply that was killed before it could save its state."
        } else {
            ""
        };
        Err(GaveUp::from(crate::protocol::Diagnostics::from(
            Diagnostic::error(
                "Object already exists",
                format!(
                    "{} already exists on {}.{whose} To manage it with Terraform, import it: `terraform import <address> {}`.",
                    self.describe(),
                    kubernetes.describe(),
                    self.name
                ),
            )
            .at(AttributePath::attr("name")),
        )))
    }

    /// The object as it is now, if it exists and gpufleet has applied it:
    /// what a write whose outcome is unknown left behind. Runs briefly, even
    /// after StopProvider.
    pub async fn find_applied(&self) -> Result<Option<K>, GaveUp> {
        let call = self.checking("was written");
        let live = self
            .objects
            .kubernetes
            .check(&call, || self.get_once())
            .await?;
        Ok(live.filter(applied_by_us))
    }
}

/// `Node "gpu-1"`, `ConfigMap gpu-operator/config`: an object for people.
pub fn describe(kind: Kind, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{} {namespace}/{name}", kind.kind),
        None => format!("{} {name:?}", kind.kind),
    }
}

/// Whether gpufleet has server-side applied `object` (its field manager
/// holds fields by `Apply`).
pub fn applied_by_us<K: Resource>(object: &K) -> bool {
    object.meta().managed_fields.iter().flatten().any(|entry| {
        entry.manager.as_deref() == Some(FIELD_MANAGER)
            && entry.operation.as_deref() == Some("Apply")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_names_its_api_and_resource() {
        let node_pool = Kind::new("karpenter.sh/v1", "NodePool", "nodepools");
        assert_eq!(node_pool.to_string(), "karpenter.sh/v1 NodePool");
        let resource = node_pool.api_resource();
        assert_eq!(
            (
                resource.group.as_str(),
                resource.version.as_str(),
                resource.plural.as_str()
            ),
            ("karpenter.sh", "v1", "nodepools")
        );
        assert_eq!(Kind::NODE.api_resource().group, "");
        assert_eq!(Kind::NODE.to_string(), "v1 Node");
        assert_eq!(node_pool.plural_kind(), "NodePools");
        assert_eq!(
            Kind::new("nvidia.com/v1", "ClusterPolicy", "clusterpolicies").plural_kind(),
            "ClusterPolicies"
        );
        assert_eq!(
            Kind::new("karpenter.k8s.aws/v1", "EC2NodeClass", "ec2nodeclasses").plural_kind(),
            "EC2NodeClasses"
        );
        assert_eq!(describe(Kind::NODE, None, "gpu-1"), "Node \"gpu-1\"");
        assert_eq!(
            describe(Kind::CONFIG_MAP, Some("gpu-operator"), "config"),
            "ConfigMap gpu-operator/config"
        );
    }
}
