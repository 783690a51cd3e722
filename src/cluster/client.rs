//! The cluster connection: a lazily built kube client and the operations
//! every resource shares (server-side apply, get, delete, the create-time
//! existence check), each made under the one retry policy and reporting
//! failures through the one error mapping.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::client::ClientBuilder;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use super::connection::{Connection, Endpoint};
use super::errors::{api_error, client_error, object_missing, status};
use super::retry::{self, Answers, Call, Deadline, GaveUp};
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

/// Field manager for every write gpufleet makes.
pub const FIELD_MANAGER: &str = "gpufleet";

/// The cluster connection. The client is only built when an operation
/// needs the cluster, so validate, and plan of new resources, work without
/// one (or before its kubeconfig file exists).
pub struct Kubernetes {
    settings: Connection,
    connected: OnceCell<Result<Connected, Diagnostic>>,
    /// Whether the API server has answered this process yet (the retry
    /// policy waits only for a server that was there before).
    reached: Arc<AtomicBool>,
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
            reached: Arc::default(),
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

    /// The client, built on first use. Retries are the retry policy's
    /// alone, so kube's own are off.
    pub async fn client(&self) -> Result<Client, Diagnostics> {
        let connected = self
            .connected
            .get_or_init(|| async {
                let mut config = self.settings.kube_config().await.map_err(|e| {
                    Diagnostic::error(
                        "Cannot connect to Kubernetes",
                        format!(
                            "Could not set up a client for {}: {e}",
                            self.settings.describe()
                        ),
                    )
                })?;
                let endpoint = self.settings.endpoint(&config);
                config.default_retry = false;
                let reached = self.reached.clone();
                let answers =
                    tower::layer::layer_fn(move |inner| Answers::new(inner, reached.clone()));
                match ClientBuilder::try_from(config) {
                    Ok(builder) => Ok(Connected {
                        client: builder.with_layer(&answers).build(),
                        endpoint,
                    }),
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

    /// Runs `attempt` (one API call, or a read-modify-write) under the retry
    /// policy until it succeeds, `deadline` passes or Terraform asks the
    /// provider to stop.
    pub async fn call<T, F, Fut>(
        &self,
        deadline: Deadline,
        call: &Call<'_>,
        attempt: F,
    ) -> Result<T, GaveUp>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        retry::call(&self.endpoint(), &self.reached, deadline, call, attempt).await
    }

    /// [`Self::call`] for a call named by its parts (see [`Call`]), giving
    /// up with the diagnostics alone.
    pub async fn retried<T, F, Fut>(
        &self,
        deadline: Deadline,
        action: &str,
        request: &str,
        api: &str,
        attempt: F,
    ) -> Result<T, Diagnostics>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        let call = Call {
            action,
            request,
            api,
        };
        Ok(self.call(deadline, &call, attempt).await?)
    }

    /// Runs `attempt` to find out what an operation whose outcome is unknown
    /// did: briefly, and even after StopProvider.
    pub async fn check<T, F, Fut>(&self, call: &Call<'_>, attempt: F) -> Result<T, GaveUp>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        retry::check(&self.endpoint(), &self.reached, call, attempt).await
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
        deadline: Deadline,
    ) -> Result<Option<K>, Diagnostics>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        let action = format!("read {object}");
        let request = format!("GET {kind} {name:?}");
        let call = Call {
            action: &action,
            request: &request,
            api: kind,
        };
        Ok(self.call(deadline, &call, || get(api, name)).await?)
    }

    /// Creates or updates `object` by server-side apply. When the policy
    /// gives up without knowing whether the write landed, the failure says
    /// so ([`GaveUp::maybe_applied`]) and [`Self::written_by_us`] tells.
    pub async fn apply<K>(
        &self,
        api: &Api<K>,
        name: &str,
        value: &K,
        action: &str,
        kind: &str,
        deadline: Deadline,
    ) -> Result<K, GaveUp>
    where
        K: Clone + DeserializeOwned + Serialize + Debug,
    {
        let request = format!("PATCH {kind} {name:?} (server-side apply)");
        let call = Call {
            action,
            request: &request,
            api: kind,
        };
        self.call(deadline, &call, || apply(api, name, value)).await
    }

    /// Creates or updates `value` by server-side apply as field manager
    /// `manager`, under the retry policy: it owns exactly the fields `value`
    /// carries, next to other managers' fields of the same object, and stops
    /// owning (so the API server removes) fields it sent before and leaves
    /// out now.
    #[allow(clippy::too_many_arguments)]
    pub async fn apply_as<K>(
        &self,
        api: &Api<K>,
        name: &str,
        value: &K,
        manager: &str,
        action: &str,
        kind: &str,
        deadline: Deadline,
    ) -> Result<K, GaveUp>
    where
        K: Clone + DeserializeOwned + Serialize + Debug,
    {
        let request = format!("PATCH {kind} {name:?} (server-side apply as {manager})");
        let call = Call {
            action,
            request: &request,
            api: kind,
        };
        self.call(deadline, &call, || apply_with(api, name, value, manager))
            .await
    }

    /// The object as it is now, if it exists and gpufleet has applied it:
    /// what a write whose outcome is unknown left behind.
    pub async fn written_by_us<K>(
        &self,
        api: &Api<K>,
        name: &str,
        object: &str,
        kind: &str,
    ) -> Result<Option<K>, Diagnostics>
    where
        K: Clone + DeserializeOwned + Debug + Resource,
    {
        let action = format!("find out whether {object} was written");
        let request = format!("GET {kind} {name:?}");
        let call = Call {
            action: &action,
            request: &request,
            api: kind,
        };
        let live = self.check(&call, || get(api, name)).await?;
        Ok(live.filter(applied_by_us))
    }

    /// Deletes an object; one already gone counts as deleted, and so does
    /// one found gone after the answer to its delete was lost.
    pub async fn remove<K>(
        &self,
        api: &Api<K>,
        name: &str,
        object: &str,
        kind: &str,
        deadline: Deadline,
    ) -> Result<(), Diagnostics>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        let action = format!("delete {object}");
        let request = format!("DELETE {kind} {name:?}");
        let call = Call {
            action: &action,
            request: &request,
            api: kind,
        };
        let gave_up = match self.call(deadline, &call, || delete(api, name)).await {
            Ok(()) => return Ok(()),
            Err(gave_up) => gave_up,
        };
        if gave_up.maybe_applied {
            let check = Call {
                action: &format!("find out whether {object} was deleted"),
                request: &format!("GET {kind} {name:?}"),
                api: kind,
            };
            if let Ok(None) = self.check(&check, || get(api, name)).await {
                return Ok(());
            }
        }
        Err(gave_up.diagnostics)
    }

    /// Create refuses to adopt an object someone else made: the user imports
    /// it instead.
    pub async fn ensure_absent<K>(
        &self,
        api: &Api<K>,
        name: &str,
        object: &str,
        kind: &str,
        deadline: Deadline,
    ) -> Result<(), Diagnostics>
    where
        K: Clone + DeserializeOwned + Debug + Resource,
    {
        let action = format!("create {object}");
        let request = format!("GET {kind} {name:?}");
        let call = Call {
            action: &action,
            request: &request,
            api: kind,
        };
        let Some(existing) = self.call(deadline, &call, || get(api, name)).await? else {
            return Ok(());
        };
        let whose = if applied_by_us(&existing) {
            " It was written by gpufleet (field manager `gpufleet`): by another Terraform configuration, or by an apply that was killed before it could save its state."
        } else {
            ""
        };
        Err(Diagnostic::error(
            "Object already exists",
            format!(
                "{object} already exists on {}.{whose} To manage it with Terraform, import it: `terraform import <address> {name}`.",
                self.describe()
            ),
        )
        .at(AttributePath::attr("name"))
        .into())
    }
}

/// Whether gpufleet has server-side applied `object`.
fn applied_by_us<K: Resource>(object: &K) -> bool {
    object.meta().managed_fields.iter().flatten().any(|entry| {
        entry.manager.as_deref() == Some(FIELD_MANAGER)
            && entry.operation.as_deref() == Some("Apply")
    })
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
