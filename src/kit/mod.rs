//! The resource kit: what resources share on top of the client layer
//! ([`crate::cluster`]), as kube-rs's kube-runtime builds on kube-client.
//!
//! - [`object`]: a resource that is one server-side-applied object, written
//!   once for every such resource, with the objects that go with it.
//! - [`node_target`]: the nodes a resource writes to, by name or selector,
//!   and the writes to them.
//! - [`node_scoped`]: a resource that writes to existing nodes, written once
//!   for every such resource.
//! - [`config_map`]: one owner's key of a ConfigMap several owners share.
//! - [`admission`]: a namespace fence (a ValidatingAdmissionPolicy and its
//!   binding) refusing workloads that would use a resource outside the
//!   namespaces it allows.
//! - [`ownership`]: which live fields state shows (only those gpufleet owns).
//! - [`list`]: the filters and listing `terraform query` uses.
//! - [`permissions`]: the API permissions resources need, the RBAC roles
//!   made from them, and the rule a denied request lacks.

pub mod admission;
pub mod config_map;
pub mod list;
pub mod node_scoped;
pub mod node_target;
pub mod object;
pub mod ownership;
pub mod permissions;

use crate::catalog::LabelScheme;
use crate::cluster::Kubernetes;
use crate::framework::schema::Attr;
use crate::framework::timeouts;
use config_map::ConfigMapRef;

/// The `timeouts` attribute of every resource: the deadlines of its
/// operations, which the client's retry policy keeps.
pub fn timeouts_attribute() -> Attr {
    timeouts::attribute(
        "How long an operation may take, retries included: API calls are retried while the API server restarts, throttles (429) or reports a conflict, until this deadline. Two minutes each when unset.",
    )
}

/// What every resource and data source works against: the cluster and the
/// provider-wide settings.
pub struct Cluster {
    /// The connection.
    pub kubernetes: Kubernetes,
    /// How GPU constraints become node labels unless a fleet says otherwise.
    pub label_scheme: LabelScheme,
    /// The ConfigMap the NVIDIA device plugin reads its configurations
    /// from, in the GPU Operator's namespace.
    pub device_plugin_config: ConfigMapRef,
}

impl Cluster {
    /// A cluster that is never reached (nothing listens where it points),
    /// for plan-time unit tests: every look at it finds it unreachable.
    #[cfg(test)]
    pub fn offline(label_scheme: LabelScheme) -> Self {
        Self {
            kubernetes: Kubernetes::new(crate::cluster::connection::Connection {
                host: Some("https://127.0.0.1:1".into()),
                token: Some("never-sent".into()),
                insecure: Some(true),
                ..Default::default()
            }),
            label_scheme,
            device_plugin_config: ConfigMapRef {
                namespace: "gpu-operator".into(),
                name: "gpufleet-device-plugin".into(),
            },
        }
    }
}
