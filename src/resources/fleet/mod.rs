//! `gpufleet_fleet`: a Karpenter `karpenter.sh/v1` NodePool for one kind of
//! GPU work, e.g. training on 8×H100 nodes or inference on L4s.
//!
//! - [`schema`](schema::schema): the attributes.
//! - `validation`: Karpenter's syntax rules and reserved keys.
//! - `model`: the state, and the outputs derived from configuration.
//! - `constraints`: the node constraints as one table, from which the
//!   schema, `min_values`, each constraint's requirement and import are
//!   derived.
//! - `resolved`: the label scheme, catalog models and their GPU name
//!   values, resolved once by each step that needs them.
//! - `requirements`: the generated requirements checked as a list, then
//!   the implied and raw ones; `decompose`: live requirements →
//!   constraints; `allowed`: whether requirements on one label contradict
//!   each other.
//! - `node_pool`: the NodePool built from state, and state read back from it.
//! - `interconnect`: what workloads request for the nodes' interconnect.
//! - `prerequisites`: what the fleet needs on the cluster that gpufleet
//!   does not create (Karpenter's CRDs, the node class), warned at plan.
//! - `upgrade`: state written by older schema versions.
//! - `sharing`: `gpu_sharing`: the device-plugin key, template labels and
//!   NodeOverlays written beside the NodePool.
//! - `admission`: `allowed_namespaces`: the ValidatingAdmissionPolicy and
//!   binding that keep other namespaces' workloads off the fleet.
//! - `flavor`: `kueue_flavor`: the fleet as a Kueue ResourceFlavor, written
//!   beside the NodePool.
//!
//! Karpenter's defaults (disruption, `expireAfter`) are planned as defaults
//! and always sent, so they never show as diffs.

mod admission;
mod allowed;
mod constraints;
mod decompose;
mod flavor;
mod interconnect;
mod model;
mod node_pool;
mod prerequisites;
mod requirements;
mod resolved;
mod schema;
mod sharing;
mod upgrade;
mod validation;

use async_trait::async_trait;
use kube::api::DynamicObject;

use constraints::{CONSTRAINTS, Constraint, Constraints};
pub use model::Model;
pub(crate) use node_pool::NODE_POOL;
pub use prerequisites::PERMISSIONS as NODE_CLASS_PERMISSIONS;
use resolved::Models;
pub use resolved::Resolved;

use crate::catalog::LabelScheme;
use crate::cluster::api::{Kind, Objects};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::model::{decode, encode, with_placeholders};
use crate::framework::plan::{derive_planned, set};
use crate::framework::schema::ObjectSchema;
use crate::framework::timeouts::Timeouts;
use crate::framework::{PlanChange, Resource, Warnings};
use crate::kit::Cluster;
use crate::kit::object::{AppliedObject, ObjectResource};
use crate::kit::permissions::{APPLIED_OBJECT_VERBS, LISTED_OBJECT_VERBS, Permission};
use crate::protocol::{AttributePath, Diagnostics, Value};

/// The `gpufleet_fleet` resource.
pub struct Fleet;

/// What it needs of the API besides its sharing configuration key
/// ([`crate::resources::sharing::writes::PERMISSIONS`]): its NodePool, as
/// any applied object and `list` for `terraform query`, and the
/// NodeOverlays that tell Karpenter a shared GPU's capacity, as any applied
/// object.
pub const PERMISSIONS: &[Permission] = &[
    Permission::cluster("karpenter.sh", "nodepools", LISTED_OBJECT_VERBS),
    Permission::cluster("karpenter.sh", "nodeoverlays", APPLIED_OBJECT_VERBS),
];

/// What `kueue_flavor` needs: the fleet's ResourceFlavor, as any applied
/// object, and the ClusterQueues, to name those that hold it.
pub const FLAVOR_PERMISSIONS: &[Permission] = &[
    Permission::cluster("kueue.x-k8s.io", "resourceflavors", APPLIED_OBJECT_VERBS),
    Permission::cluster("kueue.x-k8s.io", "clusterqueues", &["list"]),
];

/// The node constraints of `config` with those known only after apply
/// left out (their attribute, its `min_values` and, when partly unknown,
/// all of `min_values` or `requirements`), and the constraints left out.
fn known_constraints(config: &Value) -> (Value, Vec<&'static Constraint>) {
    let mut known = config.clone();
    let mut unset = |path: &[&str]| {
        let mut value = Some(&mut known);
        for name in path {
            value = value.and_then(|v| v.attr_mut(name));
        }
        if let Some(value) = value {
            *value = Value::Null;
        }
    };
    let mut unknown = Vec::new();
    for constraint in &CONSTRAINTS {
        let field = constraint.field;
        if !config.attr(field).is_wholly_known() {
            unknown.push(constraint);
            unset(&[field]);
            unset(&["min_values", field]);
        }
    }
    for attribute in ["min_values", "requirements"] {
        if !config.attr(attribute).is_wholly_known() {
            unset(&[attribute]);
        }
    }
    (known, unknown)
}

/// The label scheme of a configuration ([`resolved::effective_scheme`]),
/// once what decides it is known.
fn planned_scheme(config: &Value, provider: LabelScheme) -> Option<LabelScheme> {
    match config.attr("label_scheme") {
        Value::Null => {
            let group = config.attr("node_class").attr("group").as_str()?;
            Some(resolved::effective_scheme(None, group, provider))
        }
        setting => setting.as_str().and_then(LabelScheme::parse),
    }
}

/// Plans the label scheme a configuration leaves unset, so that the plan
/// shows it, and again the attributes derived from it (the framework
/// derived them before the scheme was known).
fn plan_label_scheme(planned: &mut Value, scheme: LabelScheme) -> Result<(), Diagnostics> {
    set(planned, "label_scheme", Value::string(scheme.as_str()));
    let whole = Resource::<Cluster>::schema(&ObjectResource(Fleet));
    let ty = whole.value_type();
    let mut following = whole;
    following
        .attrs
        .retain(|a| a.derived_from.contains(&"label_scheme"));
    let mut inputs = planned.clone();
    for attr in &following.attrs {
        set(&mut inputs, attr.name, Value::Null);
    }
    let mut model: Model = decode(&with_placeholders(&inputs, &ty))?;
    Fleet.derive(&mut model);
    derive_planned(&following, planned, Some(&encode(&model, &ty)?));
    Ok(())
}

#[async_trait]
impl AppliedObject for Fleet {
    type Model = Model;
    type Object = DynamicObject;
    type Resolved = Resolved;
    const NAME: &'static str = "fleet";
    const KIND: Kind = NODE_POOL;
    const IMPORT_ID: &'static str = "NodePool name";
    const LISTABLE: bool = true;

    fn schema(&self) -> ObjectSchema {
        schema::schema()
    }

    fn timeouts(model: &Model) -> Option<&Timeouts> {
        model.timeouts.as_ref()
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        validation::validate(config, diagnostics);
        let accelerators = config.attr("accelerators");
        let models = accelerators.is_wholly_known().then(|| {
            let names = accelerators.elements().into_iter().flatten();
            Models::resolve(names.filter_map(Value::as_str))
        });
        sharing::validate(config, models.as_ref(), diagnostics);
        admission::validate(config, diagnostics);
        flavor::validate(config, diagnostics);
    }

    fn derive(&self, model: &mut Model) {
        model.derive();
        let models = Models::of(&model.constraints);
        sharing::derive(model, &models);
        interconnect::derive(model, &models);
        requirements::derive(model);
        admission::derive(model);
    }

    /// What the label scheme cannot express, and raw requirements that
    /// contradict attributes, fail the plan, not the apply. Karpenter refuses
    /// to turn a NodePool static or dynamic in place, so adding or removing
    /// `replicas` replaces the fleet. A plan that creates or changes the
    /// fleet also checks what it needs of the cluster (`prerequisites`);
    /// one that changes nothing does not, so a refresh costs no more.
    async fn modify_plan(
        &self,
        cluster: &Cluster,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        let changing = change.prior.is_null() || *change.planned != *change.prior;
        let (prior, planned) = (
            change.prior.attr("replicas"),
            change.planned.attr("replicas"),
        );
        if !change.prior.is_null() && !planned.is_unknown() && prior.is_null() != planned.is_null()
        {
            change
                .requires_replace
                .push(AttributePath::attr("replicas"));
        }
        let config = change.config;
        let (known, unknown) = known_constraints(config);
        let constraints = match decode::<Constraints>(&known) {
            Ok(constraints) => constraints,
            Err(d) => return diagnostics.extend(d),
        };
        let scheme = planned_scheme(config, cluster.label_scheme);
        if let Some(scheme) = scheme
            && config.attr("label_scheme").is_null()
            && let Err(d) = plan_label_scheme(change.planned, scheme)
        {
            return diagnostics.extend(d);
        }
        // Resolved once for every check; its scheme counts only once known.
        let resolved = Resolved::of(&constraints, scheme.unwrap_or(cluster.label_scheme));
        sharing::modify_plan(cluster, change, &resolved.models, changing, diagnostics).await;
        admission::modify_plan(cluster, change, changing, diagnostics).await;
        if changing {
            let overlays = change.planned.attr("node_overlays");
            diagnostics.extend(prerequisites::check(cluster, config, overlays).await);
        }
        if scheme.is_some() {
            diagnostics.extend(constraints.known_problems(&resolved, &unknown));
            if let Some(warning) = constraints.architecture_mismatch(&resolved) {
                diagnostics.push(warning);
            }
        }
    }

    async fn objects<'c>(
        &self,
        cluster: &'c Cluster,
    ) -> Result<Objects<'c, DynamicObject>, GaveUp> {
        cluster.kubernetes.custom(NODE_POOL).await
    }

    fn object_name(model: &Model) -> &str {
        &model.name
    }

    /// The catalog names of the planned fleet, under its label scheme.
    fn resolve(&self, cluster: &Cluster, planned: &Model) -> Resolved {
        Resolved::with_setting(
            &planned.constraints,
            planned.label_scheme.as_deref(),
            &planned.node_class.group,
            cluster.label_scheme,
        )
    }

    fn to_object(&self, resolved: &Resolved, model: &Model) -> Result<DynamicObject, Diagnostics> {
        node_pool::build(model, resolved)
    }

    fn state_from(
        &self,
        cluster: &Cluster,
        live: DynamicObject,
        prior: &Model,
        importing: bool,
    ) -> Result<Model, Diagnostics> {
        Model::from_live(live, prior, importing, cluster.label_scheme)
    }

    fn imported(&self, name: &str) -> Model {
        Model {
            name: name.to_string(),
            ..Default::default()
        }
    }

    fn upgrade_state(
        &self,
        version: i64,
        state: serde_json::Value,
    ) -> Result<serde_json::Value, Diagnostics> {
        upgrade::upgrade(version, state)
    }

    /// The sharing's and the fence's checks against the cluster now,
    /// before the NodePool.
    async fn prepare_write(
        &self,
        cluster: &Cluster,
        resolved: &Resolved,
        planned: &mut Model,
        deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        admission::prepare(cluster, planned, deadline).await?;
        sharing::prepare(cluster, planned, resolved, deadline).await
    }

    async fn write_companions(
        &self,
        cluster: &Cluster,
        resolved: &Resolved,
        prior: Option<&Model>,
        state: &mut Model,
        deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        let warnings = sharing::write(cluster, prior, state, resolved, deadline).await?;
        admission::write(cluster, prior, state, deadline).await?;
        flavor::write(cluster, prior, state, deadline).await?;
        Ok(Diagnostics(warnings))
    }

    async fn read_companions(
        &self,
        cluster: &Cluster,
        state: &mut Model,
        prior: &Model,
        importing: bool,
        deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        let models = Models::of(&state.constraints);
        sharing::read(cluster, state, prior, importing, &models, deadline).await?;
        admission::read(cluster, state, importing, deadline).await?;
        flavor::read(cluster, state, prior, importing, deadline).await
    }

    /// Nothing goes while a queue lists the fleet's flavor.
    async fn prepare_delete(
        &self,
        cluster: &Cluster,
        prior: &Model,
        deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        flavor::prepare_delete(cluster, prior, deadline).await
    }

    async fn delete_companions(
        &self,
        cluster: &Cluster,
        prior: &Model,
        deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        sharing::delete(cluster, prior, deadline).await?;
        admission::delete(cluster, prior, deadline).await?;
        flavor::delete(cluster, prior, deadline).await?;
        Ok(Warnings::default())
    }
}

#[cfg(test)]
mod tests;
