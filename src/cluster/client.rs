//! The cluster connection: a lazily built kube client, and the one entry
//! point of the retry policy that every call ([`super::api`]) goes through.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use kube::Client;
use kube::client::ClientBuilder;
use tokio::sync::OnceCell;

use super::connection::{Connection, Endpoint, ExplainDenial};
use super::discovery::Served;
use super::errors::client_error;
use super::retry::{self, Answers, Call, Deadline, GaveUp, Readiness};
use crate::protocol::{Diagnostic, Diagnostics};

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
    explain_denial: Option<ExplainDenial>,
    /// What the cluster serves, once asked ([`Self::served`]).
    pub(super) served: OnceCell<Option<Served>>,
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
            explain_denial: None,
            served: OnceCell::new(),
        }
    }

    /// The same connection, naming in every 403 the rule `explain` finds.
    pub fn explaining_denials(mut self, explain: ExplainDenial) -> Self {
        self.explain_denial = Some(explain);
        self
    }

    /// Where the cluster is, for messages: the API server's URL once the
    /// settings have been read.
    pub fn describe(&self) -> String {
        self.endpoint().describe()
    }

    /// The API server and its CA as the settings give them, read from the
    /// settings (which builds the client) if not yet.
    pub async fn connected_endpoint(&self) -> Result<Endpoint, Diagnostics> {
        self.client().await?;
        Ok(self.endpoint())
    }

    fn endpoint(&self) -> Endpoint {
        let endpoint = match self.connected.get() {
            Some(Ok(connected)) => connected.endpoint.clone(),
            _ => self.settings.configured_endpoint(),
        };
        Endpoint {
            explain_denial: self.explain_denial,
            ..endpoint
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

    /// A client that sends nothing but bearer token `token` to this
    /// connection's server and CA.
    pub(super) async fn token_client(&self, token: &str) -> Result<Client, Diagnostics> {
        let mut config =
            self.settings.kube_config().await.map_err(|e| {
                Diagnostics::from(Diagnostic::error("Cannot connect to Kubernetes", e))
            })?;
        config.auth_info = serde_json::from_value(serde_json::json!({ "token": token }))
            .expect("a bearer token is a kubeconfig user");
        config.default_retry = false;
        Client::try_from(config).map_err(|e| Diagnostics::from(client_error(&self.endpoint(), &e)))
    }

    /// Runs `attempt` (one API call, or a read-modify-write) under the retry
    /// policy until it succeeds, `deadline` passes or Terraform asks the
    /// provider to stop.
    pub(super) async fn call<T, F, Fut>(
        &self,
        deadline: Deadline,
        call: &Call,
        attempt: F,
    ) -> Result<T, GaveUp>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        retry::call(
            &self.endpoint(),
            &self.reached,
            self,
            deadline,
            call,
            attempt,
        )
        .await
    }

    /// Runs `attempt` to find out what an operation whose outcome is unknown
    /// did: briefly, and even after StopProvider.
    pub(super) async fn check<T, F, Fut>(&self, call: &Call, attempt: F) -> Result<T, GaveUp>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        retry::check(&self.endpoint(), &self.reached, self, call, attempt).await
    }
}

impl Readiness for Kubernetes {
    /// `GET /readyz`, which every user may read on a cluster with
    /// Kubernetes' default roles (`system:public-info-viewer`).
    async fn ready(&self) -> bool {
        let Ok(client) = self.client().await else {
            return false;
        };
        let request = http::Request::get("/readyz")
            .body(Vec::new())
            .expect("a GET of /readyz is a request");
        client.request_text(request).await.is_ok()
    }
}
