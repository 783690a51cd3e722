//! A resource that is exactly one Kubernetes object written by server-side
//! apply, written once: create refuses to adopt an object someone else made,
//! read shows only the fields gpufleet owns (everything after an import
//! but other tools' bookkeeping),
//! update re-applies, delete removes, and import takes the object's name,
//! which is also its identity.
//! Every operation keeps retrying within its `timeouts`, and an apply that
//! fails after its write may have landed looks at the cluster and reports
//! what is there, so nothing written is lost from state.
//! A new such resource supplies its model, schema and the mapping between
//! model and object; [`ObjectResource`] does the rest. Objects that go with
//! the main one (a ConfigMap key, NodeOverlays) are its companions: written
//! after it, read with it so their drift shows, removed after it.

use std::collections::BTreeMap;
use std::fmt::Debug;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Cluster, list, ownership};
use crate::cluster::FIELD_MANAGER;
use crate::cluster::api::{self, Kind, Objects};
use crate::cluster::names::check_import_name;
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::timeouts::{Operation, Timeouts};
use crate::framework::{
    Failed, Identity, IdentityAttr, Listing, Model, PlanChange, Private, Resource, Stored, Warnings,
};
use crate::kit::timeouts_attribute;
use crate::protocol::{Diagnostic, Diagnostics, Value};

/// One kind of object and how a resource's model maps to it.
#[async_trait]
pub trait AppliedObject: Send + Sync + 'static {
    /// The resource's state.
    type Model: Model;
    /// The object as the API serves it.
    type Object: Clone + Serialize + DeserializeOwned + Debug + Send + Sync + kube::Resource;
    /// See [`Self::resolve`].
    type Resolved: Send + Sync;

    /// Type name without the provider prefix, e.g. `priority_class`.
    const NAME: &'static str;
    /// The objects' API.
    const KIND: Kind;
    /// What the import ID is, e.g. `class name`.
    const IMPORT_ID: &'static str;
    /// Whether `terraform query` lists the objects of this kind.
    const LISTABLE: bool = false;
    /// The identity's one attribute, which holds the import ID.
    const IDENTITY: &'static str = "name";

    /// The identity attribute's description.
    fn identity_description(&self) -> String {
        format!("The {}.", Self::IMPORT_ID)
    }
    /// Checks an import ID beyond being a Kubernetes name.
    fn check_import_id(&self, _id: &str) -> Result<(), Diagnostics> {
        Ok(())
    }
    /// Fills what create decides before anything is written (generated
    /// values), and checks what it needs beyond the object.
    async fn prepare_create(
        &self,
        _cluster: &Cluster,
        _planned: &mut Self::Model,
    ) -> Result<(), Diagnostics> {
        Ok(())
    }
    /// Checks what a create or update needs of the cluster before anything
    /// is written, and fills into `planned` what the plan could not know.
    async fn prepare_write(
        &self,
        _cluster: &Cluster,
        _resolved: &Self::Resolved,
        _planned: &mut Self::Model,
        _deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        Ok(())
    }
    /// Completes `state`, as a write (companions included) or a read left
    /// it, with what comes from elsewhere than the objects.
    async fn complete(
        &self,
        _cluster: &Cluster,
        _state: &mut Self::Model,
    ) -> Result<(), Diagnostics> {
        Ok(())
    }

    /// The resource's schema, without `timeouts` (added for every such
    /// resource).
    fn schema(&self) -> ObjectSchema;
    /// The model's `timeouts`.
    fn timeouts(model: &Self::Model) -> Option<&Timeouts>;
    /// Checks across attributes beyond the schema's validators.
    fn validate(&self, _config: &Value, _diagnostics: &mut Diagnostics) {}
    /// Fills attributes derived from configuration (see [`Resource::derive`]).
    fn derive(&self, _model: &mut Self::Model) {}
    /// Plan-time checks that need provider settings or the cluster as it is
    /// (see [`Resource::modify_plan`]).
    async fn modify_plan(
        &self,
        _cluster: &Cluster,
        _change: &mut PlanChange<'_>,
        _diagnostics: &mut Diagnostics,
    ) {
    }
    /// The objects.
    async fn objects<'c>(&self, cluster: &'c Cluster) -> Result<Objects<'c, Self::Object>, GaveUp>;
    /// The object's name in `model`.
    fn object_name(model: &Self::Model) -> &str;
    /// What `model` is imported by, its identity: the object's name unless
    /// the name follows from something else.
    fn import_id_of(model: &Self::Model) -> &str {
        Self::object_name(model)
    }
    /// What a write works out once from the planned model and the
    /// provider's settings, for [`Self::to_object`] and
    /// [`Self::write_companions`] both (the fleet's catalog names); `()`
    /// for a resource that works nothing out.
    fn resolve(&self, cluster: &Cluster, planned: &Self::Model) -> Self::Resolved;
    /// The object to apply: exactly the fields gpufleet owns.
    fn to_object(
        &self,
        resolved: &Self::Resolved,
        model: &Self::Model,
    ) -> Result<Self::Object, Diagnostics>;
    /// State from the live object. `prior` says which optional fields are
    /// managed (and how the user spelled equivalent values); `importing`
    /// takes every live field (other tools' bookkeeping annotations are
    /// already gone, see [`ownership::without_bookkeeping`]).
    fn state_from(
        &self,
        cluster: &Cluster,
        live: Self::Object,
        prior: &Self::Model,
        importing: bool,
    ) -> Result<Self::Model, Diagnostics>;
    /// The state skeleton an import of `name` starts from.
    fn imported(&self, name: &str) -> Self::Model;
    /// Whether a listed object named `name` is one the resource accepts:
    /// a list leaves out what its validation would refuse.
    fn manageable(&self, _name: &str) -> bool {
        true
    }
    /// Stored state of an older schema `version` (as JSON) in the current
    /// schema's shape (see [`Resource::upgrade_state`]); resources that bump
    /// their schema version implement it.
    fn upgrade_state(
        &self,
        version: i64,
        _state: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        Err(crate::protocol::Diagnostic::error(
            "Cannot upgrade resource state",
            format!(
                "{} has no upgrade from schema version {version}.",
                Self::NAME
            ),
        )
        .into())
    }

    /// Writes the companions `state` (the planned state, as the main
    /// object's apply left it) asks for, over those `prior` asked for
    /// (`None` on create), releasing what is no longer wanted. Every
    /// companion call shares the operation's `deadline`.
    async fn write_companions(
        &self,
        _cluster: &Cluster,
        _resolved: &Self::Resolved,
        _prior: Option<&Self::Model>,
        _state: &mut Self::Model,
        _deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        Ok(Warnings::default())
    }
    /// Reads the companions into `state` (what the read of the main object
    /// gave, with `prior` as what state had), so that drift shows; when
    /// `importing`, also the configuration they imply.
    async fn read_companions(
        &self,
        _cluster: &Cluster,
        _state: &mut Self::Model,
        _prior: &Self::Model,
        _importing: bool,
        _deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        Ok(())
    }
    /// Checks, before anything is deleted, what must be true for the whole
    /// delete to finish (a fleet's flavor no queue lists any more), waiting
    /// for it within `deadline`: a delete that cannot finish then removes
    /// nothing, and state stays what is there.
    async fn prepare_delete(
        &self,
        _cluster: &Cluster,
        _prior: &Self::Model,
        _deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        Ok(())
    }
    /// Removes the companions `prior` wrote; runs after the main object is
    /// deleted.
    async fn delete_companions(
        &self,
        _cluster: &Cluster,
        _prior: &Self::Model,
        _deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        Ok(Warnings::default())
    }
}

/// The resource of an [`AppliedObject`].
pub struct ObjectResource<T>(pub T);

/// The identity of an [`ObjectResource`]: its one attribute
/// ([`AppliedObject::IDENTITY`]) and the import ID it holds, the object's
/// name or what the name follows from (the kinds gpufleet applies are
/// cluster-scoped, or in one fixed namespace, so there is no namespace).
#[derive(Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ObjectIdentity(BTreeMap<String, String>);

impl<T: AppliedObject> ObjectResource<T> {
    fn what(model: &T::Model) -> String {
        api::describe(T::KIND, None, T::object_name(model))
    }

    fn deadline(model: &T::Model, operation: Operation) -> Deadline {
        Deadline::of(T::timeouts(model), operation)
    }

    /// State from `live` (see [`AppliedObject::state_from`]); an import
    /// first leaves out other tools' bookkeeping annotations, for every
    /// kind alike.
    fn state_from(
        &self,
        cluster: &Cluster,
        mut live: T::Object,
        prior: &T::Model,
        importing: bool,
    ) -> Result<T::Model, Diagnostics> {
        if importing {
            ownership::without_bookkeeping(kube::Resource::meta_mut(&mut live));
        }
        self.0.state_from(cluster, live, prior, importing)
    }

    async fn apply(
        &self,
        cluster: &Cluster,
        prior: Option<&T::Model>,
        mut planned: T::Model,
        operation: Operation,
        deadline: Deadline,
    ) -> Result<Stored<T::Model>, Failed<T::Model>> {
        let objects = self.0.objects(cluster).await?;
        let resolved = self.0.resolve(cluster, &planned);
        self.0
            .prepare_write(cluster, &resolved, &mut planned, deadline)
            .await?;
        let object = self.0.to_object(&resolved, &planned)?;
        let action = format!("{} {}", operation.attribute(), Self::what(&planned));
        let named = objects.named(T::object_name(&planned)).doing(action);
        let live = match named.apply(&object, FIELD_MANAGER, deadline).await {
            Ok(live) => live,
            Err(gave_up) if gave_up.maybe_applied => {
                let found = named.find_applied().await;
                return Err(self.after_unknown_outcome(cluster, found, planned, gave_up));
            }
            Err(gave_up) => return Err(gave_up.into()),
        };
        // The object is written: whatever happens now, state must keep it.
        let mut state = match self.state_from(cluster, live, &planned, false) {
            Ok(state) => state,
            Err(d) => return Err(Failed::after_write(planned, d)),
        };
        let warnings = match self
            .0
            .write_companions(cluster, &resolved, prior, &mut state, deadline)
            .await
        {
            Ok(warnings) => warnings,
            Err(d) => return Err(Failed::after_write(state, d)),
        };
        match self.0.complete(cluster, &mut state).await {
            Ok(()) => Ok(Stored::new(state).warn(warnings)),
            Err(d) => Err(Failed::after_write(state, d)),
        }
    }

    /// A write that may or may not have landed (its answer was lost, or
    /// StopProvider cut it short): what the cluster holds decides what state
    /// keeps. An object gpufleet applied is kept as it is (a create as
    /// tainted, so the next plan replaces it; an update shows what is left to
    /// change); one that is not there, or not ours, is not tracked; and when
    /// the cluster cannot say, the planned object is kept, since tracking an
    /// object that may not exist costs a replacement while losing one that
    /// does leaves it unmanaged.
    fn after_unknown_outcome(
        &self,
        cluster: &Cluster,
        found: Result<Option<T::Object>, GaveUp>,
        planned: T::Model,
        gave_up: GaveUp,
    ) -> Failed<T::Model> {
        let mut diagnostics = gave_up.diagnostics;
        let what = Self::what(&planned);
        let (state, note) = match found.map_err(Diagnostics::from) {
            Ok(None) => return diagnostics.into(),
            Ok(Some(live)) => match self.state_from(cluster, live, &planned, false) {
                Ok(state) => (
                    state,
                    format!(
                        "{what} is on the cluster, written by gpufleet: Terraform keeps it in state, so the next plan shows what is left to do."
                    ),
                ),
                Err(d) => {
                    diagnostics.extend(d);
                    (
                        planned,
                        format!(
                            "{what} is on the cluster, written by gpufleet: Terraform keeps it in state."
                        ),
                    )
                }
            },
            Err(d) => {
                let why = d.0.first().map(|d| d.summary.clone()).unwrap_or_default();
                (
                    planned,
                    format!(
                        "Whether {what} was written could not be found out ({why}): Terraform keeps it in state, so that the next plan replaces or updates it rather than leave an object nobody tracks."
                    ),
                )
            }
        };
        diagnostics.push(Diagnostic::warning(
            "Kept in state after a failed write",
            note,
        ));
        Failed::after_write(state, diagnostics)
    }
}

#[async_trait]
impl<T: AppliedObject> Resource<Cluster> for ObjectResource<T> {
    type Model = T::Model;
    type IdentityModel = ObjectIdentity;

    fn name(&self) -> &'static str {
        T::NAME
    }

    fn schema(&self) -> ObjectSchema {
        let mut schema = self.0.schema();
        schema.attrs.push(timeouts_attribute());
        schema
    }

    fn identity(&self) -> Identity {
        Identity::new(
            &[T::IDENTITY],
            vec![
                IdentityAttr::string(T::IDENTITY)
                    .required_for_import()
                    .describe(self.0.identity_description()),
            ],
        )
    }

    fn identity_of(&self, state: &T::Model) -> ObjectIdentity {
        ObjectIdentity(BTreeMap::from([(
            T::IDENTITY.to_string(),
            T::import_id_of(state).to_string(),
        )]))
    }

    fn import_id(&self, mut identity: ObjectIdentity) -> Result<String, Diagnostics> {
        Ok(identity.0.remove(T::IDENTITY).unwrap_or_default())
    }

    fn list_schema(&self) -> Option<ObjectSchema> {
        T::LISTABLE.then(|| {
            list::schema(vec![Attr::bool("only_unmanaged").optional().describe(
                "Leave out the objects gpufleet has applied (field manager `gpufleet` in `metadata.managedFields`): those a Terraform state manages, or once did. An object imported and not changed by an apply since carries no such mark, so it is still listed.",
            )])
        })
    }

    /// One LIST, each object then taken as an import and its read would
    /// take it (every live field, companions included). An object whose
    /// state cannot be taken (one that does not parse as its kind) is left
    /// out with a warning naming it.
    async fn list(
        &self,
        cluster: &Cluster,
        config: &Value,
    ) -> Result<Listing<T::Model>, Diagnostics> {
        let objects = self.0.objects(cluster).await?;
        let deadline = Deadline::of(None, Operation::Read);
        let only_unmanaged = config.attr("only_unmanaged") == &Value::Bool(true);
        let listed = objects.list(list::label_selector(config), deadline).await?;
        let mut listing = Listing::from(Vec::new());
        for live in listed {
            let name = kube::Resource::meta(&live).name.clone().unwrap_or_default();
            if !self.0.manageable(&name) || (only_unmanaged && api::applied_by_us(&live)) {
                continue;
            }
            let skeleton = self.0.imported(&name);
            let mut state = match self.state_from(cluster, live, &skeleton, true) {
                Ok(state) => state,
                Err(why) => {
                    let what = api::describe(T::KIND, None, &name);
                    listing.warnings.push(list::left_out(&what, why));
                    continue;
                }
            };
            self.0
                .read_companions(cluster, &mut state, &skeleton, true, deadline)
                .await?;
            listing.found.push((name, state));
        }
        Ok(listing)
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        self.0.validate(config, diagnostics);
    }

    fn derive(&self, model: &mut T::Model) {
        self.0.derive(model);
    }

    async fn modify_plan(
        &self,
        cluster: &Cluster,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        self.0.modify_plan(cluster, change, diagnostics).await;
    }

    async fn create(
        &self,
        cluster: &Cluster,
        mut planned: T::Model,
    ) -> Result<Stored<T::Model>, Failed<T::Model>> {
        self.0.prepare_create(cluster, &mut planned).await?;
        let deadline = Self::deadline(&planned, Operation::Create);
        let objects = self.0.objects(cluster).await?;
        objects
            .named(T::object_name(&planned))
            .ensure_absent(deadline)
            .await?;
        self.apply(cluster, None, planned, Operation::Create, deadline)
            .await
    }

    async fn read(
        &self,
        cluster: &Cluster,
        current: T::Model,
        private: &Private,
    ) -> Result<Option<Stored<T::Model>>, Diagnostics> {
        let objects = self.0.objects(cluster).await?;
        let deadline = Self::deadline(&current, Operation::Read);
        let live = objects
            .named(T::object_name(&current))
            .get(deadline)
            .await?;
        let Some(live) = live else { return Ok(None) };
        let mut state = self.state_from(cluster, live, &current, private.importing)?;
        self.0
            .read_companions(cluster, &mut state, &current, private.importing, deadline)
            .await?;
        self.0.complete(cluster, &mut state).await?;
        Ok(Some(state.into()))
    }

    async fn update(
        &self,
        cluster: &Cluster,
        prior: T::Model,
        planned: T::Model,
        _private: &Private,
    ) -> Result<Stored<T::Model>, Failed<T::Model>> {
        let deadline = Self::deadline(&planned, Operation::Update);
        self.apply(cluster, Some(&prior), planned, Operation::Update, deadline)
            .await
    }

    async fn delete(
        &self,
        cluster: &Cluster,
        prior: T::Model,
        _private: &Private,
    ) -> Result<Warnings, Diagnostics> {
        let deadline = Self::deadline(&prior, Operation::Delete);
        self.0.prepare_delete(cluster, &prior, deadline).await?;
        let objects = self.0.objects(cluster).await?;
        objects
            .named(T::object_name(&prior))
            .delete(deadline)
            .await?;
        self.0.delete_companions(cluster, &prior, deadline).await
    }

    fn import(&self, id: &str) -> Result<T::Model, Diagnostics> {
        check_import_name(id, T::IMPORT_ID)?;
        self.0.check_import_id(id)?;
        Ok(self.0.imported(id))
    }

    fn upgrade_state(
        &self,
        version: i64,
        state: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        self.0.upgrade_state(version, state)
    }
}
