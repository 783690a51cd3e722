//! What a provider implements: resources, data sources and the provider
//! definition, each over its own typed model. The framework does the rest
//! (validation, planning, derived values, import, state upgrades and the
//! conversions between models and protocol values).

use async_trait::async_trait;

use super::identity::Identity;
use super::model::{Model, Private};
use super::schema::ObjectSchema;
use gpufleet_protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// Diagnostics of an operation that succeeded; only warnings.
pub type Warnings = Diagnostics;

/// What a `list` found: each object, by how people call it, with its state;
/// and warnings for the user, such as objects it had to leave out.
pub struct Listing<M> {
    /// The objects listed.
    pub found: Vec<(String, M)>,
    /// Shown to the user before the objects.
    pub warnings: Warnings,
}

impl<M> From<Vec<(String, M)>> for Listing<M> {
    fn from(found: Vec<(String, M)>) -> Self {
        Self {
            found,
            warnings: Diagnostics::default(),
        }
    }
}

/// A resource's state after an operation, with its private bookkeeping and
/// any warnings for the user.
pub struct Stored<M> {
    /// The state Terraform records.
    pub state: M,
    /// Bookkeeping Terraform keeps beside it.
    pub private: Private,
    /// Shown to the user next to the successful result.
    pub warnings: Warnings,
}

impl<M> Stored<M> {
    /// `state` with no private data and no warnings.
    pub fn new(state: M) -> Self {
        Self {
            state,
            private: Private::default(),
            warnings: Diagnostics::default(),
        }
    }

    /// Adds warnings to show with the result.
    pub fn warn(mut self, warnings: Warnings) -> Self {
        self.warnings.extend(warnings);
        self
    }
}

impl<M> From<M> for Stored<M> {
    fn from(state: M) -> Self {
        Self::new(state)
    }
}

/// A create or update that failed. When it failed after writing to the
/// cluster, `written` is what is there now: Terraform records it (a failed
/// create as tainted), so nothing written is ever lost from state.
pub struct Failed<M> {
    /// Why it failed.
    pub diagnostics: Diagnostics,
    /// The state of what was written before the failure, if anything was.
    pub written: Option<Stored<M>>,
}

impl<M> Failed<M> {
    /// A failure after `written` reached the cluster.
    pub fn after_write(written: M, diagnostics: Diagnostics) -> Self {
        Self {
            diagnostics,
            written: Some(Stored::new(written)),
        }
    }
}

impl<M> From<Diagnostics> for Failed<M> {
    fn from(diagnostics: Diagnostics) -> Self {
        Self {
            diagnostics,
            written: None,
        }
    }
}

impl<M> From<Diagnostic> for Failed<M> {
    fn from(diagnostic: Diagnostic) -> Self {
        Diagnostics::from(diagnostic).into()
    }
}

/// The plan of one resource as [`Resource::modify_plan`] sees it: the
/// configuration and prior state as given, the planned state after the
/// framework's planning, to adjust.
pub struct PlanChange<'a> {
    /// The configuration; unknown where Terraform cannot know a value yet.
    pub config: &'a Value,
    /// The prior state; null on create.
    pub prior: &'a Value,
    /// The planned state.
    pub planned: &'a mut Value,
    /// Changed attributes that force replacement: the schema's, and any the
    /// resource adds for changes its API cannot make in place.
    pub requires_replace: &'a mut Vec<AttributePath>,
}

/// A managed resource over its own model.
#[async_trait]
pub trait Resource<C>: Send + Sync + 'static {
    /// The resource's state as a Rust type; every attribute of the schema is
    /// a field (computed ones optional, as they may be unknown in plans).
    type Model: Model;
    /// The resource's identity as a Rust type; every identity attribute is a
    /// field (those not required for import optional).
    type IdentityModel: Model;

    /// Type name without the provider prefix, e.g. `priority_class`.
    fn name(&self) -> &'static str;
    /// The schema, built once at start-up.
    fn schema(&self) -> ObjectSchema;
    /// The identity declaration, built once at start-up.
    fn identity(&self) -> Identity;
    /// The identity of the object `state` describes.
    fn identity_of(&self, state: &Self::Model) -> Self::IdentityModel;
    /// The import ID of the object `identity` names: an import by identity
    /// is the import of this ID.
    fn import_id(&self, identity: Self::IdentityModel) -> Result<String, Diagnostics>;
    /// Checks across attributes that the schema's declarative validators
    /// cannot express; they have run before this.
    fn validate(&self, _config: &Value, _diagnostics: &mut Diagnostics) {}
    /// Fills the attributes declared `derived_from` configuration. The
    /// framework calls it on the planned model (using the results whose
    /// inputs are known) and on every state the resource returns, so plan
    /// and state agree by construction.
    fn derive(&self, _model: &mut Self::Model) {}
    /// Plan-time checks and adjustments that need provider settings or
    /// what the cluster holds now. It may read the cluster, but a plan for
    /// new resources must not need it: an unreachable cluster is a warning
    /// naming what apply will check. It must not depend on the plans of
    /// other resources in the same run: Terraform plans them in no fixed
    /// order and in parallel (hashicorp/terraform,
    /// internal/terraform/graph_walk_context.go, `Execute`), and a plan's
    /// answer is final before the next is asked for, so whatever one
    /// resource learnt from another planned earlier would make the
    /// diagnostics depend on that order.
    async fn modify_plan(
        &self,
        _client: &C,
        _change: &mut PlanChange<'_>,
        _diagnostics: &mut Diagnostics,
    ) {
    }
    /// Creates the object.
    async fn create(
        &self,
        client: &C,
        planned: Self::Model,
    ) -> Result<Stored<Self::Model>, Failed<Self::Model>>;
    /// Reads the object; `None` when it no longer exists.
    async fn read(
        &self,
        client: &C,
        current: Self::Model,
        private: &Private,
    ) -> Result<Option<Stored<Self::Model>>, Diagnostics>;
    /// Changes the object in place.
    async fn update(
        &self,
        client: &C,
        prior: Self::Model,
        planned: Self::Model,
        private: &Private,
    ) -> Result<Stored<Self::Model>, Failed<Self::Model>>;
    /// Deletes the object.
    async fn delete(
        &self,
        client: &C,
        prior: Self::Model,
        private: &Private,
    ) -> Result<Warnings, Diagnostics>;
    /// The state skeleton for an import ID; the framework marks it as being
    /// imported and Terraform reads the object next.
    fn import(&self, id: &str) -> Result<Self::Model, Diagnostics>;
    /// Rewrites stored state of an older schema `version` (as JSON) into the
    /// shape of the current schema. Resources that bump their version
    /// override this.
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
    /// The configuration of the resource's `list` block (`terraform query`,
    /// Terraform 1.14+); `None` when its objects cannot be listed.
    fn list_schema(&self) -> Option<ObjectSchema> {
        None
    }
    /// Every object `config` (a value of [`Self::list_schema`]) matches,
    /// with how people call it, each as the state an import of it and the
    /// read after give, so configuration generated from it plans nothing.
    /// An object that cannot be taken is a warning naming it, not the
    /// failure of the whole list.
    async fn list(
        &self,
        _client: &C,
        _config: &Value,
    ) -> Result<Listing<Self::Model>, Diagnostics> {
        Err(Diagnostic::error(
            "Cannot list resources",
            format!("{} cannot be listed.", self.name()),
        )
        .into())
    }
    /// Rewrites a stored identity of an older identity `version` (as JSON)
    /// into the shape of the current one. Resources that bump their
    /// identity version override this.
    fn upgrade_identity(
        &self,
        version: i64,
        _identity: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        Err(Diagnostic::error(
            "Cannot upgrade resource identity",
            format!(
                "{} has no upgrade from identity version {version}.",
                self.name()
            ),
        )
        .into())
    }
}

/// A data source over its own model.
#[async_trait]
pub trait DataSource<C>: Send + Sync + 'static {
    /// The data source's configuration and result as a Rust type.
    type Model: Model;

    /// Type name without the provider prefix.
    fn name(&self) -> &'static str;
    /// The schema, built once at start-up.
    fn schema(&self) -> ObjectSchema;
    /// Checks across attributes beyond the schema's validators.
    fn validate(&self, _config: &Value, _diagnostics: &mut Diagnostics) {}
    /// Reads the data for `config`.
    async fn read(&self, client: &C, config: Self::Model) -> Result<Self::Model, Diagnostics>;
}

/// A provider: its configuration, what configuring produces, and what it offers.
#[async_trait]
pub trait ProviderDefinition: Send + Sync + 'static {
    /// What configuration produces and every operation uses (e.g. an API client).
    type Client: Send + Sync + 'static;
    /// The provider block as a Rust type.
    type Config: Model;
    /// Prefix of every type name, e.g. `gpufleet`; also names the provider in messages.
    fn type_prefix(&self) -> &'static str;
    /// The provider block's schema.
    fn schema(&self) -> ObjectSchema;
    /// Checks across provider attributes beyond the schema's validators.
    fn validate(&self, _config: &Value, _diagnostics: &mut Diagnostics) {}
    /// Builds the client from the provider block.
    async fn configure(&self, config: Self::Config) -> Result<Self::Client, Diagnostics>;
    /// Warnings about a provider block that works but is unsafe, shown when
    /// the provider is configured.
    fn configure_warnings(&self, _config: &Self::Config) -> Diagnostics {
        Diagnostics::default()
    }
    /// The resources, each registered with [`super::register_resource`].
    fn resources(&self) -> Vec<super::RegisteredResource<Self::Client>>;
    /// The data sources, each registered with [`super::register_data_source`].
    fn data_sources(&self) -> Vec<super::RegisteredDataSource<Self::Client>>;
}
