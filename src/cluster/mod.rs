//! The client layer: how gpufleet reaches Kubernetes (as kube-rs's
//! kube-client). It knows nothing of resources; the resource kit
//! ([`crate::kit`]) builds on it.
//!
//! - [`connection`]: the provider block's connection settings and kubeconfig.
//! - [`client`]: the lazily built client and the retry policy's entry point.
//! - [`api`]: typed calls, one handle per API and per object, and the one
//!   read-modify-write.
//! - [`discovery`]: which APIs the cluster serves, asked once.
//! - [`errors`]: the one mapping from API errors to diagnostics.
//! - [`retry`]: the one retry policy.
//! - [`names`]: Kubernetes names, keys, label values and quantities.

pub mod api;
pub mod client;
pub mod connection;
pub mod discovery;
pub mod errors;
pub mod names;
pub mod retry;

pub use client::{FIELD_MANAGER, Kubernetes};
