//! The cluster layer: how gpufleet reaches Kubernetes and what every
//! resource shares when it does.
//!
//! - [`connection`]: the provider block's connection settings and kubeconfig.
//! - [`client`]: the lazily built client, server-side apply, get, delete.
//! - [`errors`]: the one mapping from API errors to diagnostics.
//! - [`retry`]: the one retry policy.
//! - [`names`]: Kubernetes names, keys, label values and quantities.
//! - [`ownership`]: which live fields state shows (only those gpufleet owns).
//! - [`permissions`]: the API permissions resources declare, and the RBAC
//!   roles made from them.
//! - [`object`]: a resource that is one server-side-applied object, written
//!   once for every such resource.

pub mod client;
pub mod connection;
pub mod errors;
pub mod names;
pub mod object;
pub mod ownership;
pub mod permissions;
pub mod retry;

pub use client::{FIELD_MANAGER, Kubernetes};

use crate::catalog::LabelScheme;

/// What every resource and data source works against: the cluster and the
/// provider-wide settings.
pub struct Cluster {
    /// The connection.
    pub kubernetes: Kubernetes,
    /// How GPU constraints become node labels unless a fleet says otherwise.
    pub label_scheme: LabelScheme,
}

impl Cluster {
    /// A cluster that is never reached, for plan-time unit tests (planning
    /// never calls the cluster).
    #[cfg(test)]
    pub fn offline(label_scheme: LabelScheme) -> Self {
        Self {
            kubernetes: Kubernetes::new(Default::default()),
            label_scheme,
        }
    }
}
