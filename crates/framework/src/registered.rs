//! Resources and data sources registered once: their schemas and value
//! types built at start-up, and their operations on protocol values, which
//! convert to and from the models [`Resource`] and [`DataSource`] implement.

use async_trait::async_trait;

use super::identity::Identity;
use super::model::{Private, decode, encode, with_placeholders};
use super::plan::{self, derive_planned};
use super::resource::{DataSource, Failed, Listing, PlanChange, Resource, Stored};
use super::schema::ObjectSchema;
use gpufleet_protocol::provider::{PlanRequest, PlanResponse};
use gpufleet_protocol::{Diagnostics, Type, Value};

/// A resource with its schema and value type, ready for dispatch.
pub struct RegisteredResource<C> {
    pub(super) name: &'static str,
    pub(super) schema: ObjectSchema,
    pub(super) ty: Type,
    /// Derived attributes whose read value stands (see [`Attr::observed`]).
    ///
    /// [`Attr::observed`]: super::schema::Attr::observed
    pub(super) observed: Vec<&'static str>,
    pub(super) identity: Identity,
    pub(super) identity_ty: Type,
    pub(super) list_schema: Option<ObjectSchema>,
    pub(super) operations: Box<dyn Operations<C>>,
}

/// A data source with its schema and value type, ready for dispatch.
pub struct RegisteredDataSource<C> {
    pub(super) name: &'static str,
    pub(super) schema: ObjectSchema,
    pub(super) ty: Type,
    pub(super) operations: Box<dyn DataSourceOperations<C>>,
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
pub(super) trait Operations<C>: Send + Sync {
    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics);
    fn derive(&self, planned: &Value, ty: &Type) -> Result<Value, Diagnostics>;
    async fn modify_plan(
        &self,
        client: &C,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    );
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
    ) -> Result<Listing<Value>, Diagnostics>;
}

/// What an operation leaves: the state to record (`None` keeps the prior
/// one), its private data, and diagnostics.
pub(super) struct Outcome {
    pub(super) state: Option<(Value, Private)>,
    pub(super) diagnostics: Diagnostics,
}

impl Outcome {
    pub(super) fn failed(diagnostics: Diagnostics) -> Self {
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

    async fn modify_plan(
        &self,
        client: &C,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        Resource::modify_plan(self, client, change, diagnostics).await;
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
    ) -> Result<Listing<Value>, Diagnostics> {
        let listing = Resource::list(self, client, config).await?;
        let found = listing
            .found
            .into_iter()
            .map(|(name, model)| {
                let (state, _, _) = stored_value(self, ty, &[], Stored::new(model))?;
                Ok((name, state))
            })
            .collect::<Result<_, Diagnostics>>()?;
        Ok(Listing {
            found,
            warnings: listing.warnings,
        })
    }
}

#[async_trait]
pub(super) trait DataSourceOperations<C>: Send + Sync {
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
    pub(super) fn import_id(&self, identity: &Value) -> Result<String, Diagnostics> {
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

    /// Plans the derived attributes from the inputs in `planned`; with
    /// `rederived`, those whose inputs are not known become unknown rather
    /// than keep what an earlier pass planned.
    fn derive_into(&self, planned: &mut Value, rederived: bool) {
        // Derived attributes start null, so one `derive` leaves unset stays
        // as planned.
        let mut inputs = planned.clone();
        let derived_attrs = self
            .schema
            .attrs
            .iter()
            .filter(|a| !a.derived_from.is_empty());
        for attr in derived_attrs.clone() {
            plan::set(&mut inputs, attr.name, Value::Null);
        }
        if rederived {
            for attr in derived_attrs {
                if !attr
                    .derived_from
                    .iter()
                    .all(|i| planned.attr(i).is_wholly_known())
                {
                    plan::set(planned, attr.name, Value::UNKNOWN);
                }
            }
        }
        let derived = self.operations.derive(&inputs, &self.ty);
        derive_planned(&self.schema, planned, derived.ok().as_ref());
    }

    /// Planning as `PlanResourceChange` runs it: the framework's generic
    /// plan, then derived attributes, then the resource's own adjustments.
    pub async fn plan(&self, client: &C, req: &PlanRequest) -> PlanResponse {
        let mut planned = plan::plan(
            &self.schema,
            &req.prior_state,
            &req.proposed_new_state,
            &req.config,
        );
        let mut diagnostics = Diagnostics::default();
        if !req.proposed_new_state.is_null() {
            self.derive_into(&mut planned.planned, false);
            let before = planned.planned.clone();
            let mut change = PlanChange {
                config: &req.config,
                prior: &req.prior_state,
                planned: &mut planned.planned,
                requires_replace: &mut planned.requires_replace,
            };
            self.operations
                .modify_plan(client, &mut change, &mut diagnostics)
                .await;
            // What `modify_plan` planned of the inputs (a value read from
            // the cluster) counts for the derived attributes too.
            let inputs_changed = self.schema.attrs.iter().any(|a| {
                a.derived_from.is_empty()
                    && !planned
                        .planned
                        .attr(a.name)
                        .semantically_eq(before.attr(a.name))
            });
            if inputs_changed {
                self.derive_into(&mut planned.planned, true);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_resources::Observing;

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

    #[test]
    fn a_plan_carries_the_identity_once_what_it_is_made_of_is_known() {
        let registered = register_resource(Observing);
        let plan = |id: Value| {
            let config = registered.schema.object(&[("id", id)]);
            futures::executor::block_on(registered.plan(
                &(),
                &PlanRequest {
                    type_name: "test_observing".into(),
                    prior_state: Value::Null,
                    proposed_new_state: config.clone(),
                    config,
                    prior_private: Vec::new(),
                },
            ))
        };
        let known = plan(Value::string("a"));
        assert_eq!(
            known.planned_identity,
            Value::Object([("id".to_string(), Value::string("a"))].into())
        );
        assert_eq!(plan(Value::UNKNOWN).planned_identity, Value::Null);
    }
}
