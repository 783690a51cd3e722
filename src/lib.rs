//! gpufleet: a Terraform and OpenTofu provider for Kubernetes clusters that
//! run GPU training and GPU inference side by side.
//!
//! Layers, bottom up: `protocol` (the plugin protocol; no GPUs, no
//! Kubernetes), `framework` (resources, schemas, planning), `provider`
//! (configuration and the Kubernetes client), `catalog` (GPU models), and
//! one module per resource and data source.

pub mod catalog;
pub mod data_sources;
pub mod framework;
pub mod logging;
pub mod protocol;
pub mod provider;
pub mod resources;
