//! Unit-test helpers for resources: validate a configuration, plan against a
//! prior state the way Terraform asks for it, build values from JSON. They
//! run the same code paths the protocol does.

use super::plan::proposed;
use super::registered::{RegisteredResource, register_resource};
use super::resource::Resource;
use super::schema::ObjectSchema;
use gpufleet_protocol::codec::from_json;
use gpufleet_protocol::diagnostics::Severity;
use gpufleet_protocol::provider::{PlanRequest, PlanResponse};
use gpufleet_protocol::{Diagnostics, Value};

/// A resource registered as the provider registers it.
pub struct Harness<C> {
    resource: RegisteredResource<C>,
}

impl<C: Send + Sync + 'static> Harness<C> {
    /// Registers `resource` for testing.
    pub fn new<R: Resource<C>>(resource: R) -> Self {
        let resource = register_resource(resource);
        let mut problems = resource.schema().check();
        problems.extend(resource.identity().check(resource.schema()));
        assert!(problems.is_empty(), "schema problems: {problems:#?}");
        Self { resource }
    }

    /// The resource's schema.
    pub fn schema(&self) -> &ObjectSchema {
        self.resource.schema()
    }

    /// A value of the resource's type from JSON (absent attributes null).
    pub fn value(&self, json: serde_json::Value) -> Value {
        from_json(&json, &self.schema().value_type()).expect("value of the schema's type")
    }

    /// (path, detail) of every error `ValidateResourceConfig` reports.
    pub fn validate(&self, config: &Value) -> Vec<(String, String)> {
        errors(&self.resource.validate(config))
    }

    /// `PlanResourceChange` for `config` against `prior` (null to create),
    /// with Terraform's proposed new state, on the tests' one runtime (a
    /// plan may look at the cluster, whose client lives as long as it).
    pub fn plan(&self, client: &C, prior: &Value, config: &Value) -> PlanResponse {
        static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
        let runtime = RUNTIME.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a runtime for plans")
        });
        runtime.block_on(self.resource.plan(
            client,
            &PlanRequest {
                type_name: self.resource.name().to_string(),
                prior_state: prior.clone(),
                proposed_new_state: proposed(&self.schema().attrs, prior, config),
                config: config.clone(),
                prior_private: Vec::new(),
            },
        ))
    }

    /// (path, detail) of every error validation and then planning report,
    /// as Terraform meets them (planning only when validation passes).
    pub fn errors(&self, client: &C, config: &Value) -> Vec<(String, String)> {
        let found = self.validate(config);
        if !found.is_empty() {
            return found;
        }
        errors(&self.plan(client, &Value::Null, config).diagnostics)
    }
}

/// (path, detail) of the errors among `diagnostics`.
pub fn errors(diagnostics: &Diagnostics) -> Vec<(String, String)> {
    let errors = diagnostics
        .0
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .cloned()
        .collect();
    Diagnostics(errors).located()
}
