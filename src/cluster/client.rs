//! The cluster connection: a lazily built kube client and the operations
//! every resource shares (server-side apply, get, delete, the create-time
//! existence check), each reporting failures through the one error mapping.

use std::fmt::Debug;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use super::connection::{Connection, Endpoint};
use super::errors::{api_error, client_error, object_missing, status};
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

/// Field manager for every write gpufleet makes.
pub const FIELD_MANAGER: &str = "gpufleet";

/// The cluster connection. The client is only built when an operation
/// needs the cluster, so validate, and plan of new resources, work without
/// one (or before its kubeconfig file exists).
pub struct Kubernetes {
    settings: Connection,
    connected: OnceCell<Result<Connected, Diagnostic>>,
}

struct Connected {
    client: Client,
    endpoint: Endpoint,
}

impl Kubernetes {
    /// A connection that is not made until first used.
    pub fn new(settings: Connection) -> Self {
        Self {
            settings,
            connected: OnceCell::new(),
        }
    }

    /// Where the cluster is, for messages: the API server's URL once the
    /// settings have been read.
    pub fn describe(&self) -> String {
        self.endpoint().describe()
    }

    fn endpoint(&self) -> Endpoint {
        match self.connected.get() {
            Some(Ok(connected)) => connected.endpoint.clone(),
            _ => self.settings.configured_endpoint(),
        }
    }

    /// The client, built on first use.
    pub async fn client(&self) -> Result<Client, Diagnostics> {
        let connected = self
            .connected
            .get_or_init(|| async {
                let config = self.settings.kube_config().await.map_err(|e| {
                    Diagnostic::error(
                        "Cannot connect to Kubernetes",
                        format!(
                            "Could not set up a client for {}: {e}",
                            self.settings.describe()
                        ),
                    )
                })?;
                let endpoint = self.settings.endpoint(&config);
                match Client::try_from(config) {
                    Ok(client) => Ok(Connected { client, endpoint }),
                    Err(e) => Err(client_error(&endpoint, &e)),
                }
            })
            .await;
        match connected {
            Ok(connected) => Ok(connected.client.clone()),
            Err(d) => Err(d.clone().into()),
        }
    }

    /// The API of a cluster-scoped built-in kind.
    pub async fn api<K>(&self) -> Result<Api<K>, Diagnostics>
    where
        K: Resource<Scope = k8s_openapi::ClusterResourceScope>,
        K::DynamicType: Default,
    {
        Ok(Api::all(self.client().await?))
    }

    /// The API of a namespaced built-in kind in `namespace`.
    pub async fn namespaced_api<K>(&self, namespace: &str) -> Result<Api<K>, Diagnostics>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Ok(Api::namespaced(self.client().await?, namespace))
    }

    /// The API of a cluster-scoped custom resource.
    pub async fn dynamic_api(
        &self,
        resource: &ApiResource,
    ) -> Result<Api<DynamicObject>, Diagnostics> {
        Ok(Api::all_with(self.client().await?, resource))
    }

    /// The diagnostic for a failed API call. `action` says what gpufleet was
    /// doing (`create PriorityClass "online-inference"`), `kind` names the
    /// API (`karpenter.sh/v1 NodePool`) for the not-installed case.
    pub fn api_error(&self, action: &str, kind: &str, error: &kube::Error) -> Diagnostics {
        api_error(&self.endpoint(), action, kind, error)
    }

    /// Reads an object for state: `None` when it is gone. `object` names it
    /// for people (`PriorityClass "x"`), `kind` its API for the
    /// not-installed case.
    pub async fn read<K>(
        &self,
        api: &Api<K>,
        name: &str,
        object: &str,
        kind: &str,
    ) -> Result<Option<K>, Diagnostics>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        get(api, name)
            .await
            .map_err(|e| self.api_error(&format!("read {object}"), kind, &e))
    }

    /// Creates or updates `object` by server-side apply.
    pub async fn apply<K>(
        &self,
        api: &Api<K>,
        name: &str,
        value: &K,
        action: &str,
        kind: &str,
    ) -> Result<K, Diagnostics>
    where
        K: Clone + DeserializeOwned + Serialize + Debug,
    {
        apply(api, name, value)
            .await
            .map_err(|e| self.api_error(action, kind, &e))
    }

    /// Creates or updates `value` by server-side apply as field manager
    /// `manager`: it owns exactly the fields `value` carries, next to other
    /// managers' fields of the same object, and stops owning (so the API
    /// server removes) fields it sent before and leaves out now.
    pub async fn apply_as<K>(
        &self,
        api: &Api<K>,
        name: &str,
        value: &K,
        manager: &str,
        action: &str,
        kind: &str,
    ) -> Result<K, Diagnostics>
    where
        K: Clone + DeserializeOwned + Serialize + Debug,
    {
        apply_with(api, name, value, manager)
            .await
            .map_err(|e| self.api_error(action, kind, &e))
    }

    /// Deletes an object; one already gone counts as deleted.
    pub async fn remove<K>(
        &self,
        api: &Api<K>,
        name: &str,
        object: &str,
        kind: &str,
    ) -> Result<(), Diagnostics>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        delete(api, name)
            .await
            .map_err(|e| self.api_error(&format!("delete {object}"), kind, &e))
    }

    /// Create refuses to adopt an object someone else made: the user imports
    /// it instead.
    pub async fn ensure_absent<K>(
        &self,
        api: &Api<K>,
        name: &str,
        object: &str,
        kind: &str,
    ) -> Result<(), Diagnostics>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        let existing = get(api, name)
            .await
            .map_err(|e| self.api_error(&format!("create {object}"), kind, &e))?;
        if existing.is_none() {
            return Ok(());
        }
        Err(Diagnostic::error(
            "Object already exists",
            format!(
                "{object} already exists on {}. To manage it with Terraform, import it: `terraform import <address> {name}`.",
                self.describe()
            ),
        )
        .at(AttributePath::attr("name"))
        .into())
    }
}

/// Creates or updates `object` by server-side apply, owning exactly the
/// fields it carries (and taking them over from other managers).
pub async fn apply<K>(api: &Api<K>, name: &str, object: &K) -> Result<K, kube::Error>
where
    K: Clone + DeserializeOwned + Serialize + Debug,
{
    apply_with(api, name, object, FIELD_MANAGER).await
}

/// [`apply`] as field manager `manager`.
pub async fn apply_with<K>(
    api: &Api<K>,
    name: &str,
    object: &K,
    manager: &str,
) -> Result<K, kube::Error>
where
    K: Clone + DeserializeOwned + Serialize + Debug,
{
    api.patch(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(object),
    )
    .await
}

/// Gets an object; `None` when it does not exist. An API that does not
/// exist (a CRD that is not installed) is an error, not a missing object.
pub async fn get<K>(api: &Api<K>, name: &str) -> Result<Option<K>, kube::Error>
where
    K: Clone + DeserializeOwned + Debug,
{
    match api.get(name).await {
        Ok(object) => Ok(Some(object)),
        Err(e) if object_missing(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Deletes an object; one that is already gone counts as deleted.
pub async fn delete<K>(api: &Api<K>, name: &str) -> Result<(), kube::Error>
where
    K: Clone + DeserializeOwned + Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(e) if status(&e) == Some(404) => Ok(()),
        Err(e) => Err(e),
    }
}
