//! The one way gpufleet talks to Kubernetes: a lazily built client, one
//! server-side-apply helper, one retry policy for write conflicts, and one
//! mapping from API errors to diagnostics.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use super::connection::Connection;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

/// Field manager for every server-side apply gpufleet makes.
pub const FIELD_MANAGER: &str = "gpufleet";

/// The cluster connection. The client is only built when an operation
/// needs the cluster, so validate, and plan of new resources, work without
/// one (or before its kubeconfig file exists).
pub struct Kubernetes {
    settings: Connection,
    client: OnceCell<Result<Client, String>>,
}

impl Kubernetes {
    pub fn new(settings: Connection) -> Self {
        Self {
            settings,
            client: OnceCell::new(),
        }
    }

    /// Where the cluster is, for messages.
    pub fn describe(&self) -> String {
        self.settings.describe()
    }

    pub async fn client(&self) -> Result<Client, Diagnostics> {
        let built = self
            .client
            .get_or_init(|| async {
                let config = self.settings.kube_config().await?;
                Client::try_from(config).map_err(|e| e.to_string())
            })
            .await;
        built.clone().map_err(|e| {
            Diagnostic::error(
                "Cannot connect to Kubernetes",
                format!(
                    "gpufleet could not set up a client for {}: {e}",
                    self.describe()
                ),
            )
            .into()
        })
    }

    pub async fn api<K>(&self) -> Result<Api<K>, Diagnostics>
    where
        K: Resource<Scope = k8s_openapi::ClusterResourceScope>,
        K::DynamicType: Default,
    {
        Ok(Api::all(self.client().await?))
    }

    /// The diagnostic for a failed API call. `action` says what gpufleet was
    /// doing (`create PriorityClass "online-inference"`), `kind` names the
    /// API (`karpenter.sh/v1 NodePool`) for the not-installed case.
    pub fn api_error(&self, action: &str, kind: &str, error: &kube::Error) -> Diagnostics {
        api_error(&self.describe(), action, kind, error)
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
/// fields it carries.
pub async fn apply<K>(api: &Api<K>, name: &str, object: &K) -> Result<K, kube::Error>
where
    K: Clone + DeserializeOwned + Serialize + Debug,
{
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
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
        Err(e) if status(&e) == Some(404) && !api_missing(&e) => Ok(None),
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

/// Retries `attempt` while it fails with a write conflict (HTTP 409, a stale
/// resourceVersion), with a short growing pause; other errors end at once.
pub async fn retry_on_conflict<T, F, Fut>(mut attempt: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    const ATTEMPTS: u32 = 20;
    let mut pause = Duration::from_millis(10);
    for _ in 1..ATTEMPTS {
        match attempt().await {
            Err(e) if status(&e) == Some(409) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            other => return other,
        }
    }
    attempt().await
}

pub fn status(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Whether a 404 says that the API itself (the group, version or resource)
/// does not exist. The API server answers an unknown API path with a plain
/// text "404 page not found" (kube reports it with a reason other than
/// `NotFound`), or with a `NotFound` status "the server could not find the
/// requested resource"; a missing object is a `NotFound` status naming it.
fn api_missing(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(response) => {
            response.code == 404
                && (response.reason != "NotFound"
                    || response
                        .message
                        .contains("the server could not find the requested resource"))
        }
        _ => false,
    }
}

fn api_error(cluster: &str, action: &str, kind: &str, error: &kube::Error) -> Diagnostics {
    let (summary, detail) = match error {
        _ if api_missing(error) => (
            format!("{kind} is not installed"),
            format!(
                "Could not {action}: the API {kind} does not exist on {cluster}. Install its CustomResourceDefinition (for example Karpenter's CRDs) and try again."
            ),
        ),
        kube::Error::Api(response) => match response.code {
            403 => (
                "Permission denied by Kubernetes".to_string(),
                format!(
                    "Could not {action} on {cluster}: {}. Grant the user gpufleet runs as this permission (RBAC).",
                    response.message
                ),
            ),
            409 => (
                "Conflict with another writer".to_string(),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
            422 | 400 => (
                "Kubernetes rejected the object".to_string(),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
            _ => (
                format!("Kubernetes API error ({})", response.code),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
        },
        other => (
            "Cannot reach Kubernetes".to_string(),
            format!("Could not {action}: {cluster} did not answer: {other}"),
        ),
    };
    Diagnostic::error(summary, detail).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn error(reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, reason).with_code(404).boxed())
    }

    #[test]
    fn a_missing_api_is_told_apart_from_a_missing_object() {
        let plain = error("Failed to parse error data", "404 page not found");
        let status = error(
            "NotFound",
            "the server could not find the requested resource",
        );
        let object = error("NotFound", "nodepools.karpenter.sh \"x\" not found");
        assert!(api_missing(&plain));
        assert!(api_missing(&status));
        assert!(!api_missing(&object));
        let d = api_error(
            "the cluster at https://k",
            "create NodePool \"x\"",
            "karpenter.sh/v1 NodePool",
            &plain,
        );
        assert_eq!(d.0[0].summary, "karpenter.sh/v1 NodePool is not installed");
        assert!(d.0[0].detail.contains("the cluster at https://k"));
    }
}
