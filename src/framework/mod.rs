//! A small framework over the protocol: providers, resources and data
//! sources declare schemas with validators and plan behaviour, and implement
//! create/read/update/delete; the framework does validation, planning, state
//! upgrades and dispatch. It knows nothing about GPUs or Kubernetes.

pub mod plan;
pub mod schema;
pub mod state;
pub mod validators;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;

use crate::protocol::provider::{
    ApplyRequest, ImportedResource, PlanRequest, PlanResponse, Provider, ReadRequest, Schemas,
    StateResponse,
};
use crate::protocol::schema::Nesting;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Type, Value, codec};
use plan::Plan;
use schema::{Attr, AttrKind, ObjectSchema};

/// A resource's state after an operation, with its private bookkeeping.
pub struct Stored {
    pub state: Value,
    pub private: Vec<u8>,
}

impl From<Value> for Stored {
    fn from(state: Value) -> Self {
        Self {
            state,
            private: Vec::new(),
        }
    }
}

#[async_trait]
pub trait Resource<C>: Send + Sync {
    /// Type name without the provider prefix, e.g. `priority_class`.
    fn name(&self) -> &'static str;
    fn schema(&self) -> ObjectSchema;
    /// Checks across attributes; per-attribute validators run before this.
    fn validate(&self, _config: &Value, _diagnostics: &mut Diagnostics) {}
    /// Adjusts the generic plan, e.g. computed values derivable from
    /// configuration. The client gives provider-wide settings; planning must
    /// not call the cluster.
    fn modify_plan(
        &self,
        _client: &C,
        _plan: &mut Plan,
        _prior: &Value,
        _config: &Value,
        _diagnostics: &mut Diagnostics,
    ) {
    }
    async fn create(&self, client: &C, planned: &Value) -> Result<Stored, Diagnostics>;
    /// `None` when the object no longer exists.
    async fn read(
        &self,
        client: &C,
        current: &Value,
        private: &[u8],
    ) -> Result<Option<Stored>, Diagnostics>;
    async fn update(
        &self,
        client: &C,
        prior: &Value,
        planned: &Value,
        private: &[u8],
    ) -> Result<Stored, Diagnostics>;
    async fn delete(&self, client: &C, prior: &Value, private: &[u8]) -> Result<(), Diagnostics>;
    /// The state skeleton for an import ID; Terraform reads the object next.
    fn import(&self, id: &str) -> Result<Stored, Diagnostics>;
    /// Rewrites stored state of an older schema `version` (as JSON) into the
    /// shape of the current schema. Resources that bump their version override this.
    fn upgrade_state(
        &self,
        version: i64,
        _state: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        Err(Diagnostic::error(
            "Cannot upgrade resource state",
            format!(
                "{} has no upgrade from schema version {version}.",
                self.name()
            ),
        )
        .into())
    }
}

#[async_trait]
pub trait DataSource<C>: Send + Sync {
    fn name(&self) -> &'static str;
    fn schema(&self) -> ObjectSchema;
    fn validate(&self, _config: &Value, _diagnostics: &mut Diagnostics) {}
    async fn read(&self, client: &C, config: &Value) -> Result<Value, Diagnostics>;
}

#[async_trait]
pub trait ProviderDefinition: Send + Sync + 'static {
    /// What configuration produces and every operation uses (e.g. an API client).
    type Client: Send + Sync + 'static;
    /// Prefix of every type name, e.g. `gpufleet`.
    fn type_prefix(&self) -> &'static str;
    fn schema(&self) -> ObjectSchema;
    fn validate(&self, _config: &Value, _diagnostics: &mut Diagnostics) {}
    async fn configure(&self, config: &Value) -> Result<Self::Client, Diagnostics>;
    fn resources(&self) -> Vec<Arc<dyn Resource<Self::Client>>>;
    fn data_sources(&self) -> Vec<Arc<dyn DataSource<Self::Client>>>;
}

struct Registered<T: ?Sized> {
    implementation: Arc<T>,
    schema: ObjectSchema,
    ty: Type,
}

/// Implements the protocol for a [`ProviderDefinition`].
pub struct FrameworkProvider<P: ProviderDefinition> {
    definition: P,
    provider_schema: ObjectSchema,
    resources: HashMap<String, Registered<dyn Resource<P::Client>>>,
    data_sources: HashMap<String, Registered<dyn DataSource<P::Client>>>,
    schemas: Schemas,
    client: RwLock<Option<Arc<P::Client>>>,
}

impl<P: ProviderDefinition> FrameworkProvider<P> {
    pub fn new(definition: P) -> Self {
        let prefix = definition.type_prefix();
        let resources: HashMap<_, _> = definition
            .resources()
            .into_iter()
            .map(|r| {
                let schema = r.schema();
                let ty = schema.value_type();
                (
                    format!("{prefix}_{}", r.name()),
                    Registered {
                        implementation: r,
                        schema,
                        ty,
                    },
                )
            })
            .collect();
        let data_sources: HashMap<_, _> = definition
            .data_sources()
            .into_iter()
            .map(|d| {
                let schema = d.schema();
                let ty = schema.value_type();
                (
                    format!("{prefix}_{}", d.name()),
                    Registered {
                        implementation: d,
                        schema,
                        ty,
                    },
                )
            })
            .collect();
        let provider_schema = definition.schema();
        let sorted = |m: Vec<(String, crate::protocol::schema::Schema)>| {
            let mut m = m;
            m.sort_by(|a, b| a.0.cmp(&b.0));
            m
        };
        let schemas = Schemas {
            provider: provider_schema.to_protocol(),
            resources: sorted(
                resources
                    .iter()
                    .map(|(n, r)| (n.clone(), r.schema.to_protocol()))
                    .collect(),
            ),
            data_sources: sorted(
                data_sources
                    .iter()
                    .map(|(n, d)| (n.clone(), d.schema.to_protocol()))
                    .collect(),
            ),
        };
        Self {
            definition,
            provider_schema,
            resources,
            data_sources,
            schemas,
            client: RwLock::new(None),
        }
    }

    fn client(&self) -> Result<Arc<P::Client>, Diagnostics> {
        self.client
            .read()
            .expect("client lock")
            .clone()
            .ok_or_else(|| {
                Diagnostic::error(
                    "Provider not configured",
                    "Terraform did not configure the provider before using it.",
                )
                .into()
            })
    }

    fn resource(
        &self,
        type_name: &str,
    ) -> Result<&Registered<dyn Resource<P::Client>>, Diagnostics> {
        self.resources.get(type_name).ok_or_else(|| {
            Diagnostic::error(
                "Unknown resource type",
                format!("gpufleet has no resource {type_name:?}."),
            )
            .into()
        })
    }
}

/// Validates a whole configuration against its attributes.
pub fn validate_config(attrs: &[Attr], config: &Value) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    validate_attributes(attrs, config, &AttributePath::root(), &mut diagnostics);
    diagnostics
}

/// Runs attribute validators over a configuration, recursing into nested
/// attributes; unknown values are skipped (they are checked again at plan).
pub fn validate_attributes(
    attrs: &[Attr],
    object: &Value,
    path: &AttributePath,
    diagnostics: &mut Diagnostics,
) {
    for attr in attrs {
        let value = object.attr(attr.name);
        let here = path.join_attr(attr.name);
        if value.is_null() || value.is_unknown() {
            continue;
        }
        for validator in &attr.validators {
            if let Err(detail) = validator(value) {
                // Terraform cannot point at an attribute inside a list or
                // object expression (it shows the resource), so say which.
                let detail = if here.0.len() > 1 {
                    format!("{here}: {detail}")
                } else {
                    detail
                };
                diagnostics.error_at(here.clone(), "Invalid attribute value", detail);
            }
        }
        if let AttrKind::Nested(nesting, nested) = &attr.kind {
            match nesting {
                Nesting::Single => validate_attributes(nested, value, &here, diagnostics),
                Nesting::List | Nesting::Set => {
                    for (i, element) in value.elements().into_iter().flatten().enumerate() {
                        validate_attributes(nested, element, &here.join_index(i), diagnostics);
                    }
                }
                Nesting::Map => {
                    for (key, element) in value.entries().into_iter().flatten() {
                        validate_attributes(nested, element, &here.join_key(key), diagnostics);
                    }
                }
            }
        }
    }
}

/// Stored state (JSON of schema `version`) as a value of the current schema.
fn upgrade_state<C>(
    resource: &dyn Resource<C>,
    schema: &ObjectSchema,
    ty: &Type,
    version: i64,
    json: &[u8],
) -> Result<Value, Diagnostics> {
    if version > schema.version {
        return Err(Diagnostic::error(
            "Resource state from a newer provider",
            format!(
                "This state was written by a gpufleet version with schema {version}; this version knows up to {}. Upgrade the provider.",
                schema.version
            ),
        )
        .into());
    }
    let mut raw: serde_json::Value = serde_json::from_slice(json).map_err(|e| {
        Diagnostics::from(Diagnostic::error("Unreadable stored state", e.to_string()))
    })?;
    if version < schema.version {
        raw = resource.upgrade_state(version, raw)?;
    }
    // Attributes the schema no longer has are dropped, as Terraform does for
    // its own part since 1.11.
    if let Some(object) = raw.as_object_mut() {
        object.retain(|k, _| schema.attrs.iter().any(|a| a.name == k));
    }
    codec::from_json(&raw, ty, "").map_err(|e| {
        Diagnostic::error("Stored state does not match the schema", e.to_string()).into()
    })
}

fn state_response(
    result: Result<Stored, Diagnostics>,
    fallback: Value,
    fallback_private: Vec<u8>,
) -> StateResponse {
    match result {
        Ok(stored) => StateResponse {
            state: stored.state,
            private: stored.private,
            diagnostics: Diagnostics::default(),
        },
        Err(diagnostics) => StateResponse {
            state: fallback,
            private: fallback_private,
            diagnostics,
        },
    }
}

#[async_trait]
impl<P: ProviderDefinition> Provider for FrameworkProvider<P> {
    fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    async fn validate_provider_config(&self, config: Value) -> Diagnostics {
        let mut diagnostics = Diagnostics::default();
        validate_attributes(
            &self.provider_schema.attrs,
            &config,
            &AttributePath::root(),
            &mut diagnostics,
        );
        self.definition.validate(&config, &mut diagnostics);
        diagnostics
    }

    async fn configure(&self, config: Value, _terraform_version: &str) -> Diagnostics {
        match self.definition.configure(&config).await {
            Ok(client) => {
                *self.client.write().expect("client lock") = Some(Arc::new(client));
                Diagnostics::default()
            }
            Err(d) => d,
        }
    }

    async fn validate_resource_config(&self, type_name: &str, config: Value) -> Diagnostics {
        match self.resource(type_name) {
            Ok(r) => {
                let mut diagnostics = validate_config(&r.schema.attrs, &config);
                r.implementation.validate(&config, &mut diagnostics);
                diagnostics
            }
            Err(d) => d,
        }
    }

    async fn validate_data_source_config(&self, type_name: &str, config: Value) -> Diagnostics {
        let mut diagnostics = Diagnostics::default();
        match self.data_sources.get(type_name) {
            Some(d) => {
                validate_attributes(
                    &d.schema.attrs,
                    &config,
                    &AttributePath::root(),
                    &mut diagnostics,
                );
                d.implementation.validate(&config, &mut diagnostics);
            }
            None => diagnostics.error(
                "Unknown data source type",
                format!("gpufleet has no data source {type_name:?}."),
            ),
        }
        diagnostics
    }

    fn upgrade_resource_state(
        &self,
        type_name: &str,
        version: i64,
        json: &[u8],
    ) -> Result<Value, Diagnostics> {
        let r = self.resource(type_name)?;
        upgrade_state(r.implementation.as_ref(), &r.schema, &r.ty, version, json)
    }

    async fn read_resource(&self, req: ReadRequest) -> StateResponse {
        let fallback = (req.current_state.clone(), req.private.clone());
        let result = async {
            let r = self.resource(&req.type_name)?;
            let client = self.client()?;
            let read = r
                .implementation
                .read(&client, &req.current_state, &req.private)
                .await?;
            Ok(read.unwrap_or(Stored::from(Value::Null)))
        }
        .await;
        state_response(result, fallback.0, fallback.1)
    }

    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse {
        let r = match self.resource(&req.type_name) {
            Ok(r) => r,
            Err(diagnostics) => {
                return PlanResponse {
                    diagnostics,
                    ..Default::default()
                };
            }
        };
        let mut diagnostics = Diagnostics::default();
        let mut planned = plan::plan(
            &r.schema,
            &req.prior_state,
            &req.proposed_new_state,
            &req.config,
        );
        if !req.proposed_new_state.is_null() {
            match self.client() {
                Ok(client) => r.implementation.modify_plan(
                    &client,
                    &mut planned,
                    &req.prior_state,
                    &req.config,
                    &mut diagnostics,
                ),
                Err(d) => diagnostics.extend(d),
            }
        }
        PlanResponse {
            planned_state: planned.planned,
            requires_replace: planned.requires_replace,
            planned_private: req.prior_private,
            diagnostics,
        }
    }

    async fn apply_resource_change(&self, req: ApplyRequest) -> StateResponse {
        let (prior, planned, private) =
            (&req.prior_state, &req.planned_state, &req.planned_private);
        let result = async {
            let r = self.resource(&req.type_name)?;
            let client = self.client()?;
            let imp = &r.implementation;
            if planned.is_null() {
                imp.delete(&client, prior, private).await?;
                Ok(Stored::from(Value::Null))
            } else if prior.is_null() {
                imp.create(&client, planned).await
            } else {
                imp.update(&client, prior, planned, private).await
            }
        }
        .await;
        // On failure the prior object is kept: nothing Terraform knew is lost.
        state_response(result, prior.clone(), private.clone())
    }

    async fn import_resource_state(
        &self,
        type_name: &str,
        id: &str,
    ) -> (Vec<ImportedResource>, Diagnostics) {
        match self
            .resource(type_name)
            .and_then(|r| r.implementation.import(id))
        {
            Ok(stored) => (
                vec![ImportedResource {
                    state: stored.state,
                    private: stored.private,
                }],
                Diagnostics::default(),
            ),
            Err(d) => (Vec::new(), d),
        }
    }

    async fn read_data_source(&self, type_name: &str, config: Value) -> (Value, Diagnostics) {
        let result = async {
            let d = self.data_sources.get(type_name).ok_or_else(|| {
                Diagnostics::from(Diagnostic::error(
                    "Unknown data source type",
                    format!("gpufleet has no data source {type_name:?}."),
                ))
            })?;
            let client = self.client()?;
            d.implementation.read(&client, &config).await
        }
        .await;
        match result {
            Ok(v) => (v, Diagnostics::default()),
            Err(d) => (Value::Null, d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Version 1 renamed `size` to `capacity`.
    struct Renamed;

    #[async_trait]
    impl Resource<()> for Renamed {
        fn name(&self) -> &'static str {
            "renamed"
        }
        fn schema(&self) -> ObjectSchema {
            let mut schema = ObjectSchema::new(
                "test",
                vec![
                    Attr::string("id").computed(),
                    Attr::number("capacity").required(),
                ],
            );
            schema.version = 1;
            schema
        }
        async fn create(&self, _: &(), planned: &Value) -> Result<Stored, Diagnostics> {
            Ok(planned.clone().into())
        }
        async fn read(
            &self,
            _: &(),
            current: &Value,
            _: &[u8],
        ) -> Result<Option<Stored>, Diagnostics> {
            Ok(Some(current.clone().into()))
        }
        async fn update(
            &self,
            _: &(),
            _: &Value,
            planned: &Value,
            _: &[u8],
        ) -> Result<Stored, Diagnostics> {
            Ok(planned.clone().into())
        }
        async fn delete(&self, _: &(), _: &Value, _: &[u8]) -> Result<(), Diagnostics> {
            Ok(())
        }
        fn import(&self, id: &str) -> Result<Stored, Diagnostics> {
            Ok(Value::string(id).into())
        }
        fn upgrade_state(
            &self,
            version: i64,
            mut state: serde_json::Value,
        ) -> Result<serde_json::Value, Diagnostics> {
            assert_eq!(version, 0);
            let size = state["size"].take();
            state["capacity"] = size;
            Ok(state)
        }
    }

    fn upgrade(version: i64, json: &str) -> Result<Value, Diagnostics> {
        let schema = Renamed.schema();
        upgrade_state(
            &Renamed,
            &schema,
            &schema.value_type(),
            version,
            json.as_bytes(),
        )
    }

    #[test]
    fn upgrades_older_state_and_strips_removed_attributes() {
        let v = upgrade(0, r#"{"id":"a","size":1.5,"legacy":true}"#).unwrap();
        assert_eq!(v.attr("capacity"), &Value::Number("1.5".parse().unwrap()));
        assert_eq!(v.attr("id"), &Value::string("a"));
        let same = upgrade(1, r#"{"id":"a","capacity":2,"gone":1}"#).unwrap();
        assert_eq!(same.attr("capacity").as_i64(), Some(2));
    }

    #[test]
    fn refuses_state_from_a_newer_schema_and_garbage() {
        let newer = upgrade(2, "{}").unwrap_err();
        assert!(newer.0[0].summary.contains("newer provider"));
        assert!(upgrade(1, "not json").is_err());
        assert!(upgrade(1, r#"{"capacity":"many"}"#).is_err());
    }
}
