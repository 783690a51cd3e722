//! The protocol's [`Provider`] for a [`ProviderDefinition`]: dispatch by
//! type name to resources and data sources registered once, with their
//! schemas and value types built at start-up and reused by every call.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;

use super::identity::Identity;
use super::model::{Private, decode, encode, with_placeholders};
use super::plan::{self, derive_planned};
use super::resource::{DataSource, Failed, PlanChange, ProviderDefinition, Resource, Stored};
use super::schema::ObjectSchema;
use crate::protocol::provider::{
    ApplyRequest, ImportTarget, ImportedResource, ListRequest, Listed, PlanRequest, PlanResponse,
    Provider, ReadRequest, Schemas, StateResponse,
};
use crate::protocol::{Diagnostic, Diagnostics, Type, Value, codec};

/// A resource with its schema and value type, ready for dispatch.
pub struct RegisteredResource<C> {
    name: &'static str,
    schema: ObjectSchema,
    ty: Type,
    /// Derived attributes whose read value stands (see [`Attr::observed`]).
    ///
    /// [`Attr::observed`]: super::schema::Attr::observed
    observed: Vec<&'static str>,
    identity: Identity,
    identity_ty: Type,
    list_schema: Option<ObjectSchema>,
    operations: Box<dyn Operations<C>>,
}

/// A data source with its schema and value type, ready for dispatch.
pub struct RegisteredDataSource<C> {
    name: &'static str,
    schema: ObjectSchema,
    ty: Type,
    operations: Box<dyn DataSourceOperations<C>>,
}

/// Registers a resource: its schema and type are built here, once.
pub fn register_resource<C: Send + Sync + 'static, R: Resource<C>>(
    resource: R,
) -> RegisteredResource<C> {
    let schema = resource.schema();
    let identity = resource.identity();
    RegisteredResource {
        name: resource.name(),
        ty: schema.value_type(),
        identity_ty: identity.value_type(),
        identity,
        list_schema: resource.list_schema(),
        observed: schema
            .attrs
            .iter()
            .filter(|a| a.observed)
            .map(|a| a.name)
            .collect(),
        schema,
        operations: Box::new(resource),
    }
}

/// Registers a data source: its schema and type are built here, once.
pub fn register_data_source<C: Send + Sync + 'static, D: DataSource<C>>(
    data_source: D,
) -> RegisteredDataSource<C> {
    let schema = data_source.schema();
    RegisteredDataSource {
        name: data_source.name(),
        ty: schema.value_type(),
        schema,
        operations: Box::new(data_source),
    }
}

/// A resource's operations on protocol values; implemented for every
/// [`Resource`] by converting to and from its model.
#[async_trait]
trait Operations<C>: Send + Sync {
    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics);
    fn derive(&self, planned: &Value, ty: &Type) -> Result<Value, Diagnostics>;
    fn modify_plan(&self, client: &C, change: &mut PlanChange<'_>, diagnostics: &mut Diagnostics);
    async fn read(
        &self,
        client: &C,
        ty: &Type,
        observed: &[&'static str],
        current: &Value,
        private: &Private,
    ) -> Outcome;
    async fn apply(
        &self,
        client: &C,
        ty: &Type,
        prior: &Value,
        planned: &Value,
        private: &Private,
    ) -> Outcome;
    fn import(&self, ty: &Type, id: &str) -> Result<Value, Diagnostics>;
    fn upgrade_state(
        &self,
        version: i64,
        state: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics>;
    fn identity_of(&self, identity_ty: &Type, state: &Value) -> Result<Value, Diagnostics>;
    fn import_id(&self, identity: &Value) -> Result<String, Diagnostics>;
    fn upgrade_identity(
        &self,
        version: i64,
        identity: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics>;
    async fn list(
        &self,
        client: &C,
        ty: &Type,
        config: &Value,
    ) -> Result<Vec<(String, Value)>, Diagnostics>;
}

/// What an operation leaves: the state to record (`None` keeps the prior
/// one), its private data, and diagnostics.
struct Outcome {
    state: Option<(Value, Private)>,
    diagnostics: Diagnostics,
}

impl Outcome {
    fn failed(diagnostics: Diagnostics) -> Self {
        Self {
            state: None,
            diagnostics,
        }
    }
}

/// The state value of a stored model, derived attributes filled in, except
/// the `observed` ones, which keep the value the resource reported.
fn stored_value<C, R: Resource<C>>(
    resource: &R,
    ty: &Type,
    observed: &[&'static str],
    mut stored: Stored<R::Model>,
) -> Result<(Value, Private, Diagnostics), Diagnostics> {
    let reported = if observed.is_empty() {
        None
    } else {
        Some(encode(&stored.state, ty)?)
    };
    resource.derive(&mut stored.state);
    let mut value = encode(&stored.state, ty)?;
    if let Some(reported) = reported {
        for name in observed {
            plan::set(&mut value, name, reported.attr(name).clone());
        }
    }
    Ok((value, stored.private, stored.warnings))
}

fn outcome<C, R: Resource<C>>(
    resource: &R,
    ty: &Type,
    observed: &[&'static str],
    result: Result<Stored<R::Model>, Failed<R::Model>>,
) -> Outcome {
    let (stored, mut diagnostics) = match result {
        Ok(stored) => (Some(stored), Diagnostics::default()),
        Err(failed) => (failed.written, failed.diagnostics),
    };
    let Some(stored) = stored else {
        return Outcome::failed(diagnostics);
    };
    match stored_value(resource, ty, observed, stored) {
        Ok((value, private, warnings)) => {
            diagnostics.extend(warnings);
            Outcome {
                state: Some((value, private)),
                diagnostics,
            }
        }
        Err(d) => {
            diagnostics.extend(d);
            Outcome::failed(diagnostics)
        }
    }
}

#[async_trait]
impl<C: Send + Sync + 'static, R: Resource<C>> Operations<C> for R {
    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        Resource::validate(self, config, diagnostics);
    }

    fn derive(&self, planned: &Value, ty: &Type) -> Result<Value, Diagnostics> {
        let mut model: R::Model = decode(&with_placeholders(planned, ty))?;
        Resource::derive(self, &mut model);
        encode(&model, ty)
    }

    fn modify_plan(&self, client: &C, change: &mut PlanChange<'_>, diagnostics: &mut Diagnostics) {
        Resource::modify_plan(self, client, change, diagnostics);
    }

    async fn read(
        &self,
        client: &C,
        ty: &Type,
        observed: &[&'static str],
        current: &Value,
        private: &Private,
    ) -> Outcome {
        let result = async {
            let current = decode(current)?;
            Resource::read(self, client, current, private).await
        }
        .await;
        match result {
            Ok(Some(stored)) => outcome(self, ty, observed, Ok(stored)),
            Ok(None) => Outcome {
                state: Some((Value::Null, Private::default())),
                diagnostics: Diagnostics::default(),
            },
            Err(d) => Outcome::failed(d),
        }
    }

    async fn apply(
        &self,
        client: &C,
        ty: &Type,
        prior: &Value,
        planned: &Value,
        private: &Private,
    ) -> Outcome {
        if planned.is_null() {
            let result = async {
                let prior = decode(prior)?;
                Resource::delete(self, client, prior, private).await
            }
            .await;
            return match result {
                Ok(warnings) => Outcome {
                    state: Some((Value::Null, Private::default())),
                    diagnostics: warnings,
                },
                Err(d) => Outcome::failed(d),
            };
        }
        let result = async {
            let planned = decode(planned)?;
            if prior.is_null() {
                Resource::create(self, client, planned).await
            } else {
                let prior = decode(prior)?;
                Resource::update(self, client, prior, planned, private).await
            }
        }
        .await;
        // What was just written is what the plan derived, observed
        // attributes included.
        outcome(self, ty, &[], result)
    }

    fn import(&self, ty: &Type, id: &str) -> Result<Value, Diagnostics> {
        let model = Resource::import(self, id)?;
        let (value, _, _) = stored_value(self, ty, &[], Stored::new(model))?;
        Ok(value)
    }

    fn upgrade_state(
        &self,
        version: i64,
        state: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        Resource::upgrade_state(self, version, state)
    }

    fn identity_of(&self, identity_ty: &Type, state: &Value) -> Result<Value, Diagnostics> {
        let model: R::Model = decode(state)?;
        encode(&Resource::identity_of(self, &model), identity_ty)
    }

    fn import_id(&self, identity: &Value) -> Result<String, Diagnostics> {
        Resource::import_id(self, decode(identity)?)
    }

    fn upgrade_identity(
        &self,
        version: i64,
        identity: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        Resource::upgrade_identity(self, version, identity)
    }

    async fn list(
        &self,
        client: &C,
        ty: &Type,
        config: &Value,
    ) -> Result<Vec<(String, Value)>, Diagnostics> {
        Resource::list(self, client, config)
            .await?
            .into_iter()
            .map(|(name, model)| {
                let (state, _, _) = stored_value(self, ty, &[], Stored::new(model))?;
                Ok((name, state))
            })
            .collect()
    }
}

#[async_trait]
trait DataSourceOperations<C>: Send + Sync {
    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics);
    async fn read(&self, client: &C, ty: &Type, config: &Value) -> Result<Value, Diagnostics>;
}

#[async_trait]
impl<C: Send + Sync + 'static, D: DataSource<C>> DataSourceOperations<C> for D {
    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        DataSource::validate(self, config, diagnostics);
    }

    async fn read(&self, client: &C, ty: &Type, config: &Value) -> Result<Value, Diagnostics> {
        let model = DataSource::read(self, client, decode(config)?).await?;
        encode(&model, ty)
    }
}

impl<C: Send + Sync + 'static> RegisteredResource<C> {
    /// The type name without the provider prefix.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The schema the resource was registered with.
    pub fn schema(&self) -> &ObjectSchema {
        &self.schema
    }

    /// The schema of the resource's `list` block, if it can be listed.
    pub fn list_schema(&self) -> Option<&ObjectSchema> {
        self.list_schema.as_ref()
    }

    /// The identity declaration the resource was registered with.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The identity of the object `state` describes; null for no object.
    pub fn identity_of(&self, state: &Value) -> Result<Value, Diagnostics> {
        if state.is_null() {
            return Ok(Value::Null);
        }
        // A planned state may still hold unknowns the identity is not made of.
        self.operations
            .identity_of(&self.identity_ty, &with_placeholders(state, &self.ty))
    }

    /// The identity a plan promises: null until the attributes it is made
    /// of are known (Terraform accepts a null planned identity, and takes
    /// the one apply returns).
    fn planned_identity(&self, planned: &Value) -> Result<Value, Diagnostics> {
        let known = self
            .identity
            .from
            .iter()
            .all(|name| planned.attr(name).is_wholly_known());
        if planned.is_null() || !known {
            return Ok(Value::Null);
        }
        self.identity_of(planned)
    }

    /// The import ID `identity` stands for.
    fn import_id(&self, identity: &Value) -> Result<String, Diagnostics> {
        let missing = self.identity.missing_for_import(identity);
        if missing.has_errors() {
            return Err(missing);
        }
        self.operations.import_id(identity)
    }

    /// Validation as `ValidateResourceConfig` runs it.
    pub fn validate(&self, config: &Value) -> Diagnostics {
        let mut diagnostics = self.schema.validate_config(config);
        self.operations.validate(config, &mut diagnostics);
        diagnostics
    }

    /// Planning as `PlanResourceChange` runs it: the framework's generic
    /// plan, then derived attributes, then the resource's own adjustments.
    pub fn plan(&self, client: &C, req: &PlanRequest) -> PlanResponse {
        let mut planned = plan::plan(
            &self.schema,
            &req.prior_state,
            &req.proposed_new_state,
            &req.config,
        );
        let mut diagnostics = Diagnostics::default();
        if !req.proposed_new_state.is_null() {
            // Derived attributes start null, so one `derive` leaves unset
            // stays as planned.
            let mut inputs = planned.planned.clone();
            for attr in self
                .schema
                .attrs
                .iter()
                .filter(|a| !a.derived_from.is_empty())
            {
                plan::set(&mut inputs, attr.name, Value::Null);
            }
            let derived = self.operations.derive(&inputs, &self.ty);
            derive_planned(&self.schema, &mut planned.planned, derived.ok().as_ref());
            let mut change = PlanChange {
                config: &req.config,
                prior: &req.prior_state,
                planned: &mut planned.planned,
                requires_replace: &mut planned.requires_replace,
            };
            self.operations
                .modify_plan(client, &mut change, &mut diagnostics);
        }
        let planned_identity = self.planned_identity(&planned.planned).unwrap_or_else(|d| {
            diagnostics.extend(d);
            Value::Null
        });
        PlanResponse {
            planned_state: planned.planned,
            requires_replace: planned.requires_replace,
            planned_private: req.prior_private.clone(),
            planned_identity,
            diagnostics,
        }
    }
}

/// Implements the protocol for a [`ProviderDefinition`].
pub struct FrameworkProvider<P: ProviderDefinition> {
    definition: P,
    provider_schema: ObjectSchema,
    resources: HashMap<String, RegisteredResource<P::Client>>,
    data_sources: HashMap<String, RegisteredDataSource<P::Client>>,
    schemas: Schemas,
    client: RwLock<Option<Arc<P::Client>>>,
}

impl<P: ProviderDefinition> FrameworkProvider<P> {
    /// Registers everything `definition` offers and builds the schemas once.
    pub fn new(definition: P) -> Self {
        let prefix = definition.type_prefix();
        let resources: HashMap<_, _> = definition
            .resources()
            .into_iter()
            .map(|r| (format!("{prefix}_{}", r.name), r))
            .collect();
        let data_sources: HashMap<_, _> = definition
            .data_sources()
            .into_iter()
            .map(|d| (format!("{prefix}_{}", d.name), d))
            .collect();
        let provider_schema = definition.schema();
        fn sorted<S>(mut m: Vec<(String, S)>) -> Vec<(String, S)> {
            m.sort_by(|a, b| a.0.cmp(&b.0));
            m
        }
        let schemas = Schemas {
            provider: provider_schema.to_protocol(),
            identities: sorted(
                resources
                    .iter()
                    .map(|(n, r)| (n.clone(), r.identity.to_protocol()))
                    .collect(),
            ),
            list_resources: sorted(
                resources
                    .iter()
                    .filter_map(|(n, r)| Some((n.clone(), r.list_schema.as_ref()?.to_protocol())))
                    .collect(),
            ),
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

    /// Every registered resource, by full type name.
    pub fn resources(&self) -> impl Iterator<Item = (&str, &RegisteredResource<P::Client>)> {
        self.resources.iter().map(|(n, r)| (n.as_str(), r))
    }

    /// Every schema: provider, resources, data sources, by name.
    pub fn object_schemas(&self) -> impl Iterator<Item = (String, &ObjectSchema)> {
        let provider = std::iter::once(("provider".to_string(), &self.provider_schema));
        let resources = self.resources.iter().map(|(n, r)| (n.clone(), &r.schema));
        let data_sources = self
            .data_sources
            .iter()
            .map(|(n, d)| (n.clone(), &d.schema));
        provider.chain(resources).chain(data_sources)
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

    fn unknown(&self, kind: &str, type_name: &str) -> Diagnostics {
        Diagnostic::error(
            format!("Unknown {kind} type"),
            format!(
                "The {} provider has no {kind} {type_name:?}.",
                self.definition.type_prefix()
            ),
        )
        .into()
    }

    fn resource(&self, type_name: &str) -> Result<&RegisteredResource<P::Client>, Diagnostics> {
        self.resources
            .get(type_name)
            .ok_or_else(|| self.unknown("resource", type_name))
    }

    fn list_schema(&self, type_name: &str) -> Result<&ObjectSchema, Diagnostics> {
        self.resource(type_name)?
            .list_schema
            .as_ref()
            .ok_or_else(|| self.unknown("list resource", type_name))
    }

    fn data_source(
        &self,
        type_name: &str,
    ) -> Result<&RegisteredDataSource<P::Client>, Diagnostics> {
        self.data_sources
            .get(type_name)
            .ok_or_else(|| self.unknown("data source", type_name))
    }
}

/// Stored JSON of `kind` (state or identity) written with `version`, in the
/// shape of the `current` version: `upgrade` runs for older versions.
fn upgraded(
    kind: &str,
    version: i64,
    current: i64,
    json: &[u8],
    upgrade: impl FnOnce(serde_json::Value) -> Result<serde_json::Value, Diagnostics>,
) -> Result<serde_json::Value, Diagnostics> {
    if version > current {
        return Err(Diagnostic::error(
            format!("Resource {kind} from a newer provider"),
            format!(
                "This {kind} was written by a provider version with {kind} schema {version}; this version knows up to {current}. Upgrade the provider."
            ),
        )
        .into());
    }
    let raw: serde_json::Value = serde_json::from_slice(json).map_err(|e| {
        Diagnostics::from(Diagnostic::error(
            format!("Unreadable stored {kind}"),
            e.to_string(),
        ))
    })?;
    if version < current {
        upgrade(raw)
    } else {
        Ok(raw)
    }
}

/// Stored state (JSON of schema `version`) as a value of the current schema.
fn upgrade_state<C>(
    resource: &RegisteredResource<C>,
    version: i64,
    json: &[u8],
) -> Result<Value, Diagnostics> {
    let schema = &resource.schema;
    let mut raw = upgraded("state", version, schema.version, json, |raw| {
        resource.operations.upgrade_state(version, raw)
    })?;
    // Attributes the schema no longer has are dropped, as Terraform does for
    // its own part since 1.11.
    if let Some(object) = raw.as_object_mut() {
        object.retain(|k, _| schema.attrs.iter().any(|a| a.name == k));
    }
    codec::from_json(&raw, &resource.ty).map_err(|e| {
        Diagnostic::error("Stored state does not match the schema", e.to_string()).into()
    })
}

/// A stored identity (JSON of identity `version`) as a value of the
/// current identity schema.
fn upgrade_identity<C>(
    resource: &RegisteredResource<C>,
    version: i64,
    json: &[u8],
) -> Result<Value, Diagnostics> {
    let raw = upgraded(
        "identity",
        version,
        resource.identity.version,
        json,
        |raw| resource.operations.upgrade_identity(version, raw),
    )?;
    codec::from_json(&raw, &resource.identity_ty).map_err(|e| {
        Diagnostic::error(
            "Stored identity does not match the identity schema",
            e.to_string(),
        )
        .into()
    })
}

/// The state to record after `outcome` of `resource`'s operation, with
/// the identity of the object it describes.
fn state_response<C: Send + Sync + 'static>(
    resource: Option<&RegisteredResource<C>>,
    outcome: Outcome,
    prior: &Value,
    prior_private: &[u8],
) -> StateResponse {
    let (state, private) = match outcome.state {
        Some((state, private)) => (state, private.to_bytes()),
        // Nothing new to record: the prior object is kept, so nothing
        // Terraform knew is lost.
        None => (prior.clone(), prior_private.to_vec()),
    };
    let mut diagnostics = outcome.diagnostics;
    let identity = match resource.map(|r| r.identity_of(&state)) {
        Some(Ok(identity)) => identity,
        Some(Err(d)) => {
            diagnostics.extend(d);
            Value::Null
        }
        None => Value::Null,
    };
    StateResponse {
        state,
        private,
        identity,
        diagnostics,
    }
}

#[async_trait]
impl<P: ProviderDefinition> Provider for FrameworkProvider<P> {
    fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    async fn validate_provider_config(&self, config: Value) -> Diagnostics {
        let mut diagnostics = self.provider_schema.validate_config(&config);
        self.definition.validate(&config, &mut diagnostics);
        diagnostics
    }

    async fn configure(&self, config: Value, _terraform_version: &str) -> Diagnostics {
        // Values unknown at validation (variables, other resources' outputs)
        // are known now: check them before anything reads them.
        let invalid = self.validate_provider_config(config.clone()).await;
        if invalid.has_errors() {
            return invalid;
        }
        let configured = async {
            let config = decode(&config)?;
            let warnings = self.definition.configure_warnings(&config);
            Ok::<_, Diagnostics>((self.definition.configure(config).await?, warnings))
        };
        match configured.await {
            Ok((client, warnings)) => {
                *self.client.write().expect("client lock") = Some(Arc::new(client));
                warnings
            }
            Err(d) => d,
        }
    }

    async fn validate_resource_config(&self, type_name: &str, config: Value) -> Diagnostics {
        match self.resource(type_name) {
            Ok(r) => r.validate(&config),
            Err(d) => d,
        }
    }

    async fn validate_data_source_config(&self, type_name: &str, config: Value) -> Diagnostics {
        match self.data_source(type_name) {
            Ok(d) => {
                let mut diagnostics = d.schema.validate_config(&config);
                d.operations.validate(&config, &mut diagnostics);
                diagnostics
            }
            Err(d) => d,
        }
    }

    fn upgrade_resource_state(
        &self,
        type_name: &str,
        version: i64,
        json: &[u8],
    ) -> Result<Value, Diagnostics> {
        upgrade_state(self.resource(type_name)?, version, json)
    }

    fn upgrade_resource_identity(
        &self,
        type_name: &str,
        version: i64,
        json: &[u8],
    ) -> Result<Value, Diagnostics> {
        upgrade_identity(self.resource(type_name)?, version, json)
    }

    async fn read_resource(&self, req: ReadRequest) -> StateResponse {
        let resource = self.resource(&req.type_name).ok();
        let outcome = async {
            let r = self.resource(&req.type_name)?;
            let client = self.client()?;
            let private = Private::from_bytes(&req.private);
            Ok(r.operations
                .read(&client, &r.ty, &r.observed, &req.current_state, &private)
                .await)
        }
        .await
        .unwrap_or_else(Outcome::failed);
        state_response(resource, outcome, &req.current_state, &req.private)
    }

    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse {
        let planned = self
            .resource(&req.type_name)
            .and_then(|r| Ok(r.plan(&*self.client()?, &req)));
        planned.unwrap_or_else(|diagnostics| PlanResponse {
            diagnostics,
            ..Default::default()
        })
    }

    async fn apply_resource_change(&self, req: ApplyRequest) -> StateResponse {
        let (prior, planned) = (&req.prior_state, &req.planned_state);
        let resource = self.resource(&req.type_name).ok();
        let outcome = async {
            let r = self.resource(&req.type_name)?;
            let client = self.client()?;
            let private = Private::from_bytes(&req.planned_private);
            Ok(r.operations
                .apply(&client, &r.ty, prior, planned, &private)
                .await)
        }
        .await
        .unwrap_or_else(Outcome::failed);
        state_response(resource, outcome, prior, &req.planned_private)
    }

    async fn import_resource_state(
        &self,
        type_name: &str,
        target: ImportTarget,
    ) -> (Vec<ImportedResource>, Diagnostics) {
        let imported = self.resource(type_name).and_then(|r| {
            let id = match target {
                ImportTarget::Id(id) => id,
                ImportTarget::Identity(identity) => r.import_id(&identity)?,
            };
            let state = r.operations.import(&r.ty, &id)?;
            let identity = r.identity_of(&state)?;
            Ok((state, identity))
        });
        match imported {
            Ok((state, identity)) => (
                vec![ImportedResource {
                    state,
                    private: Private::importing().to_bytes(),
                    identity,
                }],
                Diagnostics::default(),
            ),
            Err(d) => (Vec::new(), d),
        }
    }

    async fn validate_list_resource_config(&self, type_name: &str, config: Value) -> Diagnostics {
        match self.list_schema(type_name) {
            Ok(schema) => schema.validate_config(&config),
            Err(d) => d,
        }
    }

    async fn list_resource(&self, req: ListRequest) -> (Vec<Listed>, Diagnostics) {
        let listed = async {
            // Values unknown at validation are known now.
            let invalid = self
                .list_schema(&req.type_name)?
                .validate_config(&req.config);
            if invalid.has_errors() {
                return Err(invalid);
            }
            let r = self.resource(&req.type_name)?;
            let client = self.client()?;
            r.operations
                .list(&client, &r.ty, &req.config)
                .await?
                .into_iter()
                .map(|(display_name, state)| {
                    Ok(Listed {
                        identity: r.identity_of(&state)?,
                        display_name,
                        state,
                    })
                })
                .collect()
        };
        match listed.await {
            Ok(listed) => (listed, Diagnostics::default()),
            Err(d) => (Vec::new(), d),
        }
    }

    async fn read_data_source(&self, type_name: &str, config: Value) -> (Value, Diagnostics) {
        let result = async {
            let d = self.data_source(type_name)?;
            let client = self.client()?;
            d.operations.read(&client, &d.ty, &config).await
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
    use crate::framework::identity::IdentityAttr;
    use crate::framework::resource::Warnings;
    use crate::framework::schema::Attr;
    use serde::{Deserialize, Serialize};

    /// Version 1 renamed `size` to `capacity`, and identity version 1
    /// renamed `key` to `id`.
    struct Renamed;

    #[derive(Default, Serialize, Deserialize)]
    struct RenamedModel {
        id: Option<String>,
        capacity: Option<f64>,
    }

    #[derive(Default, Serialize, Deserialize)]
    struct IdIdentity {
        id: String,
    }

    fn id_identity() -> Identity {
        Identity::new(
            &["id"],
            vec![IdentityAttr::string("id").required_for_import()],
        )
        .mutable()
    }

    #[async_trait]
    impl Resource<()> for Renamed {
        type Model = RenamedModel;
        type IdentityModel = IdIdentity;
        fn name(&self) -> &'static str {
            "renamed"
        }
        fn identity(&self) -> Identity {
            Identity {
                version: 1,
                ..id_identity()
            }
        }
        fn identity_of(&self, state: &RenamedModel) -> IdIdentity {
            IdIdentity {
                id: state.id.clone().unwrap_or_default(),
            }
        }
        fn import_id(&self, identity: IdIdentity) -> Result<String, Diagnostics> {
            Ok(identity.id)
        }
        fn upgrade_identity(
            &self,
            version: i64,
            mut identity: serde_json::Value,
        ) -> Result<serde_json::Value, Diagnostics> {
            assert_eq!(version, 0);
            Ok(serde_json::json!({ "id": identity["key"].take() }))
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
        async fn create(
            &self,
            _: &(),
            planned: RenamedModel,
        ) -> Result<Stored<RenamedModel>, Failed<RenamedModel>> {
            Ok(planned.into())
        }
        async fn read(
            &self,
            _: &(),
            current: RenamedModel,
            _: &Private,
        ) -> Result<Option<Stored<RenamedModel>>, Diagnostics> {
            Ok(Some(current.into()))
        }
        async fn update(
            &self,
            _: &(),
            _: RenamedModel,
            planned: RenamedModel,
            _: &Private,
        ) -> Result<Stored<RenamedModel>, Failed<RenamedModel>> {
            Ok(planned.into())
        }
        async fn delete(
            &self,
            _: &(),
            _: RenamedModel,
            _: &Private,
        ) -> Result<Warnings, Diagnostics> {
            Ok(Diagnostics::default())
        }
        fn import(&self, id: &str) -> Result<RenamedModel, Diagnostics> {
            Ok(RenamedModel {
                id: Some(id.into()),
                capacity: None,
            })
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

    /// `reported` is read back from "the cluster"; `derive` sets it from `id`.
    struct Observing;

    #[derive(Default, Serialize, Deserialize)]
    struct ObservingModel {
        id: Option<String>,
        reported: Option<String>,
    }

    #[async_trait]
    impl Resource<()> for Observing {
        type Model = ObservingModel;
        type IdentityModel = IdIdentity;
        fn name(&self) -> &'static str {
            "observing"
        }
        fn identity(&self) -> Identity {
            id_identity()
        }
        fn identity_of(&self, state: &ObservingModel) -> IdIdentity {
            IdIdentity {
                id: state.id.clone().unwrap_or_default(),
            }
        }
        fn import_id(&self, identity: IdIdentity) -> Result<String, Diagnostics> {
            Ok(identity.id)
        }
        fn schema(&self) -> ObjectSchema {
            ObjectSchema::new(
                "test",
                vec![
                    Attr::string("id").required(),
                    Attr::string("reported").derived_from(&["id"]).observed(),
                ],
            )
        }
        fn derive(&self, model: &mut ObservingModel) {
            model.reported = model.id.clone();
        }
        async fn create(
            &self,
            _: &(),
            planned: ObservingModel,
        ) -> Result<Stored<ObservingModel>, Failed<ObservingModel>> {
            Ok(ObservingModel {
                reported: None,
                ..planned
            }
            .into())
        }
        async fn read(
            &self,
            _: &(),
            current: ObservingModel,
            _: &Private,
        ) -> Result<Option<Stored<ObservingModel>>, Diagnostics> {
            Ok(Some(
                ObservingModel {
                    reported: Some("drifted".into()),
                    ..current
                }
                .into(),
            ))
        }
        async fn update(
            &self,
            _: &(),
            _: ObservingModel,
            planned: ObservingModel,
            _: &Private,
        ) -> Result<Stored<ObservingModel>, Failed<ObservingModel>> {
            Ok(planned.into())
        }
        async fn delete(
            &self,
            _: &(),
            _: ObservingModel,
            _: &Private,
        ) -> Result<Warnings, Diagnostics> {
            Ok(Diagnostics::default())
        }
        fn import(&self, _: &str) -> Result<ObservingModel, Diagnostics> {
            Ok(ObservingModel::default())
        }
    }

    #[test]
    fn observed_attributes_keep_what_reads_report() {
        let registered = register_resource(Observing);
        assert_eq!(registered.observed, ["reported"]);
        let state = registered
            .schema
            .object(&[("id", Value::string("a")), ("reported", Value::string("a"))]);
        let read = futures::executor::block_on(registered.operations.read(
            &(),
            &registered.ty,
            &registered.observed,
            &state,
            &Private::default(),
        ));
        let (value, _) = read.state.unwrap();
        assert_eq!(value.attr("reported"), &Value::string("drifted"));
        // What an apply wrote is what the plan derived.
        let applied = futures::executor::block_on(registered.operations.apply(
            &(),
            &registered.ty,
            &Value::Null,
            &state,
            &Private::default(),
        ));
        assert_eq!(
            applied.state.unwrap().0.attr("reported"),
            &Value::string("a")
        );
    }

    fn upgrade(version: i64, json: &str) -> Result<Value, Diagnostics> {
        upgrade_state(&register_resource(Renamed), version, json.as_bytes())
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

    fn upgrade_id(version: i64, json: &str) -> Result<Value, Diagnostics> {
        upgrade_identity(&register_resource(Renamed), version, json.as_bytes())
    }

    #[test]
    fn upgrades_older_identities_and_refuses_newer_ones() {
        let v = upgrade_id(0, r#"{"key":"a"}"#).unwrap();
        assert_eq!(
            v,
            Value::Object([("id".to_string(), Value::string("a"))].into())
        );
        assert_eq!(
            upgrade_id(1, r#"{"id":"b"}"#).unwrap().attr("id"),
            &Value::string("b")
        );
        let newer = upgrade_id(2, r#"{"id":"b"}"#).unwrap_err();
        assert!(
            newer.0[0]
                .summary
                .contains("identity from a newer provider"),
            "{newer:?}"
        );
        assert!(upgrade_id(1, "not json").is_err());
        // Without an upgrade of its own, a resource refuses older identities.
        let none = upgrade_identity(&register_resource(Observing), -1, b"{}").unwrap_err();
        assert!(
            none.0[0]
                .detail
                .contains("no upgrade from identity version -1"),
            "{none:?}"
        );
    }

    fn provider_of(resource: RegisteredResource<()>) -> FrameworkProvider<Only> {
        FrameworkProvider::new(Only(std::sync::Mutex::new(Some(resource))))
    }

    /// A provider of one resource.
    struct Only(std::sync::Mutex<Option<RegisteredResource<()>>>);

    #[async_trait]
    impl ProviderDefinition for Only {
        type Client = ();
        type Config = serde_json::Value;
        fn type_prefix(&self) -> &'static str {
            "test"
        }
        fn schema(&self) -> ObjectSchema {
            ObjectSchema::new("test", Vec::new())
        }
        async fn configure(&self, _: serde_json::Value) -> Result<(), Diagnostics> {
            Ok(())
        }
        fn resources(&self) -> Vec<RegisteredResource<()>> {
            self.0.lock().unwrap().take().into_iter().collect()
        }
        fn data_sources(&self) -> Vec<RegisteredDataSource<()>> {
            Vec::new()
        }
    }

    #[test]
    fn importing_by_identity_is_importing_by_id() {
        let provider = provider_of(register_resource(Renamed));
        let import = |target| {
            futures::executor::block_on(provider.import_resource_state("test_renamed", target))
        };
        let (by_id, d) = import(ImportTarget::Id("a".into()));
        assert!(d.0.is_empty(), "{d:?}");
        let identity = Value::Object([("id".to_string(), Value::string("a"))].into());
        let (by_identity, d) = import(ImportTarget::Identity(identity.clone()));
        assert!(d.0.is_empty(), "{d:?}");
        assert_eq!(by_id[0].state, by_identity[0].state);
        assert_eq!(by_id[0].private, by_identity[0].private);
        assert_eq!(by_id[0].identity, identity);
        assert_eq!(by_identity[0].identity, identity);
        let (none, d) = import(ImportTarget::Identity(Value::Object(
            [("id".to_string(), Value::Null)].into(),
        )));
        assert!(none.is_empty());
        assert_eq!(d.located()[0].0, "id");
        let schemas = provider.schemas();
        assert_eq!(schemas.identities[0].0, "test_renamed");
        assert_eq!(schemas.identities[0].1.version, 1);
    }

    #[test]
    fn a_plan_carries_the_identity_once_what_it_is_made_of_is_known() {
        let registered = register_resource(Observing);
        let plan = |id: Value| {
            let config = registered.schema.object(&[("id", id)]);
            registered.plan(
                &(),
                &PlanRequest {
                    type_name: "test_observing".into(),
                    prior_state: Value::Null,
                    proposed_new_state: config.clone(),
                    config,
                    prior_private: Vec::new(),
                },
            )
        };
        let known = plan(Value::string("a"));
        assert_eq!(
            known.planned_identity,
            Value::Object([("id".to_string(), Value::string("a"))].into())
        );
        assert_eq!(plan(Value::UNKNOWN).planned_identity, Value::Null);
    }

    #[test]
    fn reads_and_applies_return_the_identity_and_none_for_a_gone_object() {
        let provider = provider_of(register_resource(Observing));
        let configured = futures::executor::block_on(
            provider.configure(Value::Object(Default::default()), "test"),
        );
        assert!(configured.0.is_empty(), "{configured:?}");
        let state = Value::Object(
            [("id", Value::string("a")), ("reported", Value::string("a"))]
                .map(|(k, v)| (k.to_string(), v))
                .into(),
        );
        let identity = Value::Object([("id".to_string(), Value::string("a"))].into());
        let read = futures::executor::block_on(provider.read_resource(ReadRequest {
            type_name: "test_observing".into(),
            current_state: state.clone(),
            private: Vec::new(),
        }));
        assert!(read.diagnostics.0.is_empty(), "{:?}", read.diagnostics);
        assert_eq!(read.identity, identity);
        let applied = futures::executor::block_on(provider.apply_resource_change(ApplyRequest {
            type_name: "test_observing".into(),
            prior_state: Value::Null,
            planned_state: state.clone(),
            config: state.clone(),
            planned_private: Vec::new(),
        }));
        assert_eq!(applied.identity, identity);
        let destroyed = futures::executor::block_on(provider.apply_resource_change(ApplyRequest {
            type_name: "test_observing".into(),
            prior_state: state,
            planned_state: Value::Null,
            config: Value::Null,
            planned_private: Vec::new(),
        }));
        assert_eq!(destroyed.identity, Value::Null);
    }
}
