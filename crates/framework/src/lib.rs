//! A small framework over the protocol, in the manner of HashiCorp's
//! terraform-plugin-framework: providers, resources and data sources declare
//! schemas (with described validators, defaults, plan behaviour and derived
//! values) and implement their operations over typed models; the framework
//! does validation, planning, conversions, import marking, identities,
//! state upgrades and dispatch. It knows nothing of GPUs or Kubernetes.
//!
//! - [`schema`]: attributes and their behaviour, and the schema self-check.
//! - [`validators`]: attribute and cross-attribute validators.
//! - [`model`]: typed models and private state.
//! - [`resource`]: the traits a provider implements.
//! - [`identity`]: resource identity declarations.
//! - [`plan`]: the generic planning every resource gets.
//! - [`registered`]: resources and data sources registered for dispatch.
//! - [`provider`]: the protocol's provider for a definition.
//! - [`timeouts`]: the `timeouts` attribute.

pub mod identity;
pub mod model;
pub mod plan;
pub mod provider;
pub mod registered;
pub mod resource;
pub mod schema;
#[cfg(test)]
mod test_resources;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod timeouts;
pub mod validators;

pub use identity::{Identity, IdentityAttr};
pub use model::{Model, Private};
pub use provider::FrameworkProvider;
pub use registered::{
    RegisteredDataSource, RegisteredResource, register_data_source, register_resource,
};
pub use resource::{
    DataSource, Failed, Listing, PlanChange, ProviderDefinition, Resource, Stored, Warnings,
};
