//! gpufleet: a Terraform and OpenTofu provider for Kubernetes clusters that
//! run GPU training and GPU inference side by side.
//!
//! Layers, bottom up:
//! - [`protocol`]: the plugin protocol (handshake, mTLS, gRPC, values,
//!   schemas, diagnostics); its own crate (`crates/protocol`), which depends
//!   on nothing of GPUs or Kubernetes.
//! - [`framework`]: resources, typed models, schemas, validators, planning;
//!   its own crate (`crates/framework`) on the protocol alone.
//! - [`catalog`]: GPU models, what they support, and label schemes.
//! - [`cluster`]: the client layer: the connection, typed calls, the one
//!   retry policy, the one API-error mapping, Kubernetes names, permissions.
//! - [`kit`]: the resource kit on top of it: the server-side-applied object,
//!   node targets, shared ConfigMap keys, ownership of live fields.
//! - [`resources`] and [`data_sources`]: one module per type.
//! - [`provider`]: the provider block and the list of what it registers.

/// The release, from Cargo.toml.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod catalog;
pub mod cluster;
pub mod data_sources;
pub use gpufleet_framework as framework;
pub mod kit;
pub mod logging;
pub use gpufleet_protocol as protocol;
pub mod provider;
pub mod resources;
