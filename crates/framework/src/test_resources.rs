//! Two resources for the framework's own tests: one whose state and
//! identity schemas were renamed in version 1, one with an observed
//! derived attribute.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::identity::{Identity, IdentityAttr};
use super::model::Private;
use super::resource::{Failed, Resource, Stored, Warnings};
use super::schema::{Attr, ObjectSchema};
use gpufleet_protocol::Diagnostics;

/// Version 1 renamed `size` to `capacity`, and identity version 1
/// renamed `key` to `id`.
pub(super) struct Renamed;

#[derive(Default, Serialize, Deserialize)]
pub(super) struct RenamedModel {
    id: Option<String>,
    capacity: Option<f64>,
}

#[derive(Default, Serialize, Deserialize)]
pub(super) struct IdIdentity {
    id: String,
}

pub(super) fn id_identity() -> Identity {
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
    async fn delete(&self, _: &(), _: RenamedModel, _: &Private) -> Result<Warnings, Diagnostics> {
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
pub(super) struct Observing;

#[derive(Default, Serialize, Deserialize)]
pub(super) struct ObservingModel {
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
