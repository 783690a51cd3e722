//! The provider as the protocol sees it: decoded values in, values and
//! diagnostics out. The framework implements this trait; the gRPC service
//! in `server.rs` does the wire work around it.

use async_trait::async_trait;

use super::diagnostics::{AttributePath, Diagnostics};
use super::schema::Schema;
use super::value::Value;

pub struct Schemas {
    pub provider: Schema,
    /// Full type names (`gpufleet_priority_class`) with their schemas.
    pub resources: Vec<(String, Schema)>,
    pub data_sources: Vec<(String, Schema)>,
}

pub struct PlanRequest {
    pub type_name: String,
    pub prior_state: Value,
    pub proposed_new_state: Value,
    pub config: Value,
    pub prior_private: Vec<u8>,
}

#[derive(Default)]
pub struct PlanResponse {
    pub planned_state: Value,
    pub requires_replace: Vec<AttributePath>,
    pub planned_private: Vec<u8>,
    pub diagnostics: Diagnostics,
}

pub struct ApplyRequest {
    pub type_name: String,
    pub prior_state: Value,
    pub planned_state: Value,
    pub config: Value,
    pub planned_private: Vec<u8>,
}

pub struct StateResponse {
    /// Null means the object does not exist (after delete, or gone on read).
    pub state: Value,
    pub private: Vec<u8>,
    pub diagnostics: Diagnostics,
}

pub struct ReadRequest {
    pub type_name: String,
    pub current_state: Value,
    pub private: Vec<u8>,
}

pub struct ImportedResource {
    pub state: Value,
    pub private: Vec<u8>,
}

#[async_trait]
pub trait Provider: Send + Sync + 'static {
    fn schemas(&self) -> &Schemas;
    async fn validate_provider_config(&self, config: Value) -> Diagnostics;
    async fn configure(&self, config: Value, terraform_version: &str) -> Diagnostics;
    async fn validate_resource_config(&self, type_name: &str, config: Value) -> Diagnostics;
    async fn validate_data_source_config(&self, type_name: &str, config: Value) -> Diagnostics;
    /// Turns stored state (JSON, written with schema `version`) into a value
    /// of the current schema.
    fn upgrade_resource_state(
        &self,
        type_name: &str,
        version: i64,
        json: &[u8],
    ) -> Result<Value, Diagnostics>;
    async fn read_resource(&self, req: ReadRequest) -> StateResponse;
    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse;
    async fn apply_resource_change(&self, req: ApplyRequest) -> StateResponse;
    async fn import_resource_state(
        &self,
        type_name: &str,
        id: &str,
    ) -> (Vec<ImportedResource>, Diagnostics);
    async fn read_data_source(&self, type_name: &str, config: Value) -> (Value, Diagnostics);
}
