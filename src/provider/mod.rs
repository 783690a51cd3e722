//! The gpufleet provider: its configuration block, the Kubernetes
//! connection, and the list of resources and data sources.

pub mod connection;
pub mod kube;

use std::sync::Arc;

use async_trait::async_trait;

use crate::catalog::LabelScheme;
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::state::typed;
use crate::framework::validators::one_of;
use crate::framework::{DataSource, ProviderDefinition, Resource};
use crate::protocol::schema::Nesting;
use crate::protocol::{AttributePath, Diagnostics, Value};
use connection::Connection;

pub use self::kube::Kubernetes;

/// What every resource and data source gets: the cluster and provider-wide settings.
pub struct Client {
    pub kubernetes: Kubernetes,
    /// How GPU constraints become node labels unless a fleet says otherwise.
    pub label_scheme: LabelScheme,
}

#[cfg(test)]
impl Client {
    /// A client with no cluster configured, for plan-time unit tests (plan
    /// never calls the cluster).
    pub fn offline(label_scheme: LabelScheme) -> Self {
        Self {
            kubernetes: Kubernetes::new(Default::default()),
            label_scheme,
        }
    }
}

pub struct Gpufleet;

/// The `label_scheme` values, as [`LabelScheme::as_str`] spells them.
pub const LABEL_SCHEMES: &[&str] = &["cfke", "aws", "azure"];

#[async_trait]
impl ProviderDefinition for Gpufleet {
    type Client = Client;

    fn type_prefix(&self) -> &'static str {
        "gpufleet"
    }

    fn schema(&self) -> ObjectSchema {
        ObjectSchema::new(
            "Manages GPU fleets, node taints, priority classes and GPU sharing on a Kubernetes cluster.",
            vec![
                Attr::string("config_path").optional().describe("Path to a kubeconfig file. Defaults to `KUBE_CONFIG_PATH`, then `KUBECONFIG`."),
                Attr::string("config_context").optional().describe("Context of the kubeconfig to use; its current context when unset."),
                Attr::string("host").optional().describe("API server URL, e.g. `https://10.0.0.1:6443`. When set, no kubeconfig is read."),
                Attr::string("token").optional().sensitive().describe("Bearer token for `host`."),
                Attr::string("cluster_ca_certificate").optional().describe("PEM CA certificate of the API server."),
                Attr::string("client_certificate").optional().describe("PEM client certificate for `host`."),
                Attr::string("client_key").optional().sensitive().describe("PEM key of `client_certificate`."),
                Attr::bool("insecure").optional().describe("Skip verifying the API server's certificate (test clusters only)."),
                Attr::nested(
                    "exec",
                    Nesting::Single,
                    vec![
                        Attr::string("api_version").required().describe("e.g. `client.authentication.k8s.io/v1`."),
                        Attr::string("command").required(),
                        Attr::string_list("args").optional(),
                        Attr::string_map("env").optional(),
                    ],
                )
                .optional()
                .describe("Run a command for credentials (an exec credential plugin)."),
                Attr::string("label_scheme")
                    .optional()
                    .validate(one_of(LABEL_SCHEMES))
                    .describe("Node labels GPU constraints map to: `cfke` (default), `aws` or `azure`."),
            ],
        )
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        let (cert, key) = (config.attr("client_certificate"), config.attr("client_key"));
        if cert.is_null() != key.is_null() && !cert.is_unknown() && !key.is_unknown() {
            diagnostics.error_at(
                AttributePath::attr(if cert.is_null() {
                    "client_certificate"
                } else {
                    "client_key"
                }),
                "Incomplete client certificate",
                "`client_certificate` and `client_key` go together.",
            );
        }
    }

    async fn configure(&self, config: &Value) -> Result<Client, Diagnostics> {
        let connection: Connection = typed(config)?;
        let label_scheme = config
            .attr("label_scheme")
            .as_str()
            .and_then(LabelScheme::parse)
            .unwrap_or(LabelScheme::Cfke);
        Ok(Client {
            kubernetes: Kubernetes::new(connection),
            label_scheme,
        })
    }

    fn resources(&self) -> Vec<Arc<dyn Resource<Client>>> {
        vec![
            Arc::new(crate::resources::priority_class::PriorityClass),
            Arc::new(crate::resources::fleet::Fleet),
            Arc::new(crate::resources::node_taint::NodeTaint),
        ]
    }

    fn data_sources(&self) -> Vec<Arc<dyn DataSource<Client>>> {
        vec![Arc::new(crate::data_sources::accelerators::Accelerators)]
    }
}
