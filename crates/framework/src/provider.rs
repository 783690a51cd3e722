//! The protocol's [`Provider`] for a [`ProviderDefinition`]: dispatch by
//! type name to resources and data sources registered once, with their
//! schemas and value types built at start-up and reused by every call.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;

use super::model::{Private, decode};
use super::registered::{Outcome, RegisteredDataSource, RegisteredResource};
use super::resource::ProviderDefinition;
use super::schema::ObjectSchema;
use gpufleet_protocol::provider::{
    ApplyRequest, ImportTarget, ImportedResource, ListRequest, Listed, PlanRequest, PlanResponse,
    Provider, ReadRequest, Schemas, StateResponse,
};
use gpufleet_protocol::{Diagnostic, Diagnostics, Value, codec};

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
        let planned = async {
            let resource = self.resource(&req.type_name)?;
            Ok::<_, Diagnostics>(resource.plan(&*self.client()?, &req).await)
        }
        .await;
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
            let listing = r.operations.list(&client, &r.ty, &req.config).await?;
            let listed = listing
                .found
                .into_iter()
                .map(|(display_name, state)| {
                    Ok(Listed {
                        identity: r.identity_of(&state)?,
                        display_name,
                        state,
                    })
                })
                .collect::<Result<_, Diagnostics>>()?;
            Ok((listed, listing.warnings))
        };
        match listed.await {
            Ok(listed) => listed,
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
    use crate::registered::register_resource;
    use crate::test_resources::{Observing, Renamed};

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
