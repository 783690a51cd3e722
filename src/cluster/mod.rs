//! The cluster layer: how gpufleet reaches Kubernetes and what every
//! resource shares when it does.
//!
//! - [`connection`]: the provider block's connection settings and kubeconfig.
//! - [`client`]: the lazily built client and the retry policy's entry point.
//! - [`api`]: typed calls, one handle per API and per object, and the one
//!   read-modify-write.
//! - [`errors`]: the one mapping from API errors to diagnostics.
//! - [`retry`]: the one retry policy.
//! - [`names`]: Kubernetes names, keys, label values and quantities.
//! - [`ownership`]: which live fields state shows (only those gpufleet owns).
//! - [`permissions`]: the API permissions resources declare, and the RBAC
//!   roles made from them.
//! - [`object`]: a resource that is one server-side-applied object, written
//!   once for every such resource, with the objects that go with it.
//! - [`config_map`]: one owner's key of a ConfigMap several owners share.
//! - [`plan_notes`]: what resources planned in this run tell each other.

pub mod api;
pub mod client;
pub mod config_map;
pub mod connection;
pub mod errors;
pub mod names;
pub mod object;
pub mod ownership;
pub mod permissions;
pub mod plan_notes;
pub mod retry;

pub use client::{FIELD_MANAGER, Kubernetes};

use crate::catalog::LabelScheme;
use config_map::ConfigMapRef;
use plan_notes::PlanNotes;

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
    /// What the resources planned so far in this run noted for each other.
    pub plan_notes: PlanNotes,
}

impl Cluster {
    /// A cluster that is never reached, for plan-time unit tests (planning
    /// never calls the cluster).
    #[cfg(test)]
    pub fn offline(label_scheme: LabelScheme) -> Self {
        Self {
            kubernetes: Kubernetes::new(Default::default()),
            label_scheme,
            device_plugin_config: ConfigMapRef {
                namespace: "gpu-operator".into(),
                name: "gpufleet-device-plugin".into(),
            },
            plan_notes: PlanNotes::default(),
        }
    }
}
