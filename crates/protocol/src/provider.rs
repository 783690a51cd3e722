//! The provider as the protocol sees it: decoded values in, values and
//! diagnostics out. The framework implements this trait; the gRPC service
//! in `server.rs` does the wire work around it.

use async_trait::async_trait;

use super::diagnostics::{AttributePath, Diagnostics};
use super::schema::{IdentitySchema, Schema};
use super::value::Value;

/// Every schema the provider declares, answered to `GetProviderSchema`.
pub struct Schemas {
    /// The `provider` block's schema.
    pub provider: Schema,
    /// Full type names (`gpufleet_priority_class`) with their schemas.
    pub resources: Vec<(String, Schema)>,
    /// Full data source type names with their schemas.
    pub data_sources: Vec<(String, Schema)>,
    /// Full resource type names with their identity schemas, answered to
    /// `GetResourceIdentitySchemas`.
    pub identities: Vec<(String, IdentitySchema)>,
    /// The resource types that can be listed, with the schemas of their
    /// list configuration (`list` blocks of `terraform query`).
    pub list_resources: Vec<(String, Schema)>,
}

/// `PlanResourceChange`: what Terraform asks a resource to plan.
pub struct PlanRequest {
    /// The resource type, e.g. `gpufleet_priority_class`.
    pub type_name: String,
    /// The state before the change; null when the resource is to be created.
    pub prior_state: Value,
    /// Terraform's proposal: the configuration merged with the prior state;
    /// null when the resource is to be destroyed.
    pub proposed_new_state: Value,
    /// The configuration as written, unknowns included; null on destroy.
    pub config: Value,
    /// The opaque bytes the provider stored with the prior state.
    pub prior_private: Vec<u8>,
}

/// The provider's plan for one resource.
#[derive(Default)]
pub struct PlanResponse {
    /// The state apply will produce, unknown where only apply can tell.
    pub planned_state: Value,
    /// Attributes whose change forces destroying and recreating the resource.
    pub requires_replace: Vec<AttributePath>,
    /// Opaque bytes handed back to the provider with the apply request.
    pub planned_private: Vec<u8>,
    /// The identity apply will produce; null when the plan cannot tell yet
    /// (e.g. a name known only after apply) or on destroy.
    pub planned_identity: Value,
    /// Errors and warnings for the user; an error fails the plan.
    pub diagnostics: Diagnostics,
}

/// `ApplyResourceChange`: a planned change Terraform asks the provider to make.
pub struct ApplyRequest {
    /// The resource type, e.g. `gpufleet_priority_class`.
    pub type_name: String,
    /// The state before the change; null on create.
    pub prior_state: Value,
    /// The state the plan promised; null on destroy.
    pub planned_state: Value,
    /// The configuration, wholly known by apply time; null on destroy.
    pub config: Value,
    /// The opaque bytes the plan returned in [`PlanResponse::planned_private`].
    pub planned_private: Vec<u8>,
}

/// A resource's state after apply or read, as Terraform stores it.
pub struct StateResponse {
    /// Null means the object does not exist (after delete, or gone on read).
    pub state: Value,
    /// Opaque bytes Terraform stores next to the state and passes back later.
    pub private: Vec<u8>,
    /// The object's identity; null with a null state.
    pub identity: Value,
    /// Errors and warnings for the user; an error fails the operation.
    pub diagnostics: Diagnostics,
}

/// `ReadResource`: refresh one resource's state from the real object.
pub struct ReadRequest {
    /// The resource type, e.g. `gpufleet_priority_class`.
    pub type_name: String,
    /// The state Terraform has stored, upgraded to the current schema.
    pub current_state: Value,
    /// The opaque bytes stored with that state.
    pub private: Vec<u8>,
}

/// One resource found by `terraform import`; Terraform reads it next.
pub struct ImportedResource {
    /// The state to start from: enough for `read_resource` to find the object.
    pub state: Value,
    /// Opaque bytes stored with that state.
    pub private: Vec<u8>,
    /// The identity of the object to import.
    pub identity: Value,
}

/// What `ImportResourceState` names the object by.
pub enum ImportTarget {
    /// The import ID (`terraform import ADDR ID`, `import { id = ... }`).
    Id(String),
    /// An identity value (`import { identity = {...} }`, Terraform 1.12+).
    Identity(Value),
}

/// `ListResource`: the objects of a resource type a list block asks for.
pub struct ListRequest {
    /// The resource type, e.g. `gpufleet_priority_class`.
    pub type_name: String,
    /// The list block's `config`, a value of the list schema.
    pub config: Value,
}

/// One object a list found.
pub struct Listed {
    /// Its identity, which an import of it takes.
    pub identity: Value,
    /// How people call it, e.g. its name.
    pub display_name: String,
    /// The state an import of it would give (sent when the request asks).
    pub state: Value,
}

/// A provider behind the gRPC service: one method per protocol call, with
/// values already decoded against the schemas.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// The schemas of the provider block, resources and data sources; they
    /// decode every value the client sends.
    fn schemas(&self) -> &Schemas;
    /// Checks the provider block before it is configured; values may be unknown.
    async fn validate_provider_config(&self, config: Value) -> Diagnostics;
    /// Sets the provider up from its block before any resource call; during
    /// plan, values that depend on other resources may still be unknown.
    async fn configure(&self, config: Value, terraform_version: &str) -> Diagnostics;
    /// Checks one resource block's configuration; values may be unknown.
    async fn validate_resource_config(&self, type_name: &str, config: Value) -> Diagnostics;
    /// Checks one data source block's configuration; values may be unknown.
    async fn validate_data_source_config(&self, type_name: &str, config: Value) -> Diagnostics;
    /// Turns stored state (JSON, written with schema `version`) into a value
    /// of the current schema.
    fn upgrade_resource_state(
        &self,
        type_name: &str,
        version: i64,
        json: &[u8],
    ) -> Result<Value, Diagnostics>;
    /// Turns a stored identity (JSON, written with identity schema `version`)
    /// into a value of the current identity schema.
    fn upgrade_resource_identity(
        &self,
        type_name: &str,
        version: i64,
        json: &[u8],
    ) -> Result<Value, Diagnostics>;
    /// Refreshes a resource's state; null state when the object is gone.
    async fn read_resource(&self, req: ReadRequest) -> StateResponse;
    /// Plans a create, update or destroy.
    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse;
    /// Makes a planned change and returns the resulting state.
    async fn apply_resource_change(&self, req: ApplyRequest) -> StateResponse;
    /// The resources an import ID or identity names (`terraform import`,
    /// `import` blocks).
    async fn import_resource_state(
        &self,
        type_name: &str,
        target: ImportTarget,
    ) -> (Vec<ImportedResource>, Diagnostics);
    /// Checks a list block's configuration; values may be unknown.
    async fn validate_list_resource_config(&self, type_name: &str, config: Value) -> Diagnostics;
    /// Every object a list block's configuration matches.
    async fn list_resource(&self, req: ListRequest) -> (Vec<Listed>, Diagnostics);
    /// Reads a data source: its configuration in, its full value out.
    async fn read_data_source(&self, type_name: &str, config: Value) -> (Value, Diagnostics);
}
