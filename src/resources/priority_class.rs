//! `gpufleet_priority_class`: a scheduling.k8s.io/v1 PriorityClass, e.g.
//! inference (high, preempts) above training (low, `Never`). With
//! `allowed_namespaces`, the API server refuses pods naming the class in
//! other namespaces (see [`crate::kit::admission`]), so the high inference
//! class cannot preempt training from anywhere else.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::scheduling::v1::PriorityClass as PriorityClassObject;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::cluster::api::{Kind, Objects};
use crate::cluster::names::{annotation_keys, dns1123_subdomain, labels};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::fence_description;
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::timeouts::Timeouts;
use crate::framework::validators::{integer_between, one_of};
use crate::framework::{PlanChange, Warnings};
use crate::kit::Cluster;
use crate::kit::admission::{self, Fence, Guarded, cel_strings};
use crate::kit::object::AppliedObject;
use crate::kit::ownership::{owned, owned_map};
use crate::kit::permissions::{LISTED_OBJECT_VERBS, Permission};
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// Values above this are reserved for system classes.
const MAX_USER_VALUE: i64 = 1_000_000_000;
const POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];

/// The `gpufleet_priority_class` resource.
pub struct PriorityClass;

/// What it needs of the API: its PriorityClasses, as any applied object,
/// and `list` for `terraform query`.
pub const PERMISSIONS: &[Permission] = &[Permission::cluster(
    "scheduling.k8s.io",
    "priorityclasses",
    LISTED_OBJECT_VERBS,
)];

/// The resource's state.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Model {
    id: Option<String>,
    name: String,
    value: i64,
    preemption_policy: Option<String>,
    global_default: Option<bool>,
    description: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    timeouts: Option<Timeouts>,
    /// `allowed_namespaces` and the admission policy it writes.
    #[serde(flatten)]
    fence: Fence,
}

fn policy_name(name: &str) -> String {
    admission::policy_name("class", name)
}

/// The class's namespace fence: a pod uses the class when it names it.
fn guarded(name: &str, fence: Fence) -> Guarded {
    Guarded {
        resource_type: "gpufleet_priority_class",
        name: name.to_string(),
        what: format!("priority class {name:?}"),
        policy_name: policy_name(name),
        variables: Vec::new(),
        uses: format!(
            "variables.podSpec.?priorityClassName.orValue('') in {}",
            cel_strings([name])
        ),
        how: "names it in priorityClassName".to_string(),
        fence,
    }
}

#[async_trait]
impl AppliedObject for PriorityClass {
    type Model = Model;
    type Object = PriorityClassObject;
    type Resolved = ();
    const NAME: &'static str = "priority_class";
    const KIND: Kind = Kind::new("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses");
    const IMPORT_ID: &'static str = "class name";
    const LISTABLE: bool = true;

    fn schema(&self) -> ObjectSchema {
        ObjectSchema::new(
            "A PriorityClass: pods that name it get its priority; `preemption_policy = \"Never\"` keeps them from evicting others.",
            vec![
                Attr::string("id").derived_from(&["name"]).describe("The class name."),
                Attr::string("name")
                    .required()
                    .requires_replace()
                    .validate(dns1123_subdomain())
                    .describe("Name pods use in `priorityClassName`. The `system-` prefix is reserved."),
                Attr::number("value")
                    .required()
                    .requires_replace()
                    .validate(integer_between(
                        i64::from(i32::MIN),
                        MAX_USER_VALUE,
                        " (values above 1000000000 are reserved for system priority classes)",
                    ))
                    .describe("Priority; higher runs first. Immutable in Kubernetes, so a change replaces the class."),
                Attr::string("preemption_policy")
                    .default(Value::string(POLICIES[0]))
                    .requires_replace()
                    .validate(one_of(POLICIES))
                    .describe("Whether pods of this class may evict lower-priority pods. Immutable in Kubernetes."),
                Attr::bool("global_default")
                    .default(Value::Bool(false))
                    .describe("Whether pods without a class get this one."),
                Attr::string("description").optional().describe("What the class is for."),
                Attr::string_map("labels").optional().validate(labels()).describe("Labels of the PriorityClass; other writers' labels are left alone."),
                Attr::string_map("annotations").optional().validate(annotation_keys()).describe("Annotations of the PriorityClass; other writers' annotations are left alone."),
            ]
            .into_iter()
            .chain(admission::attributes(fence_description!(
                "priority class",
                "names it in `priorityClassName`"
            )))
            .collect(),
        )
    }

    fn timeouts(model: &Model) -> Option<&Timeouts> {
        model.timeouts.as_ref()
    }

    fn validate(&self, config: &Value, diagnostics: &mut Diagnostics) {
        if let Some(name) = config
            .attr("name")
            .as_str()
            .filter(|n| n.starts_with("system-"))
        {
            diagnostics.error_at(
                AttributePath::attr("name"),
                "Reserved name",
                format!("{name:?}: the `system-` prefix is reserved for Kubernetes' own priority classes."),
            );
        }
        let policy = config.attr("name").as_str().map(policy_name);
        admission::validate(config, policy, diagnostics);
    }

    fn derive(&self, model: &mut Model) {
        model.id = Some(model.name.clone());
        model.fence.derive(policy_name(&model.name));
    }

    /// Whether the API server enforces the fence, when the plan creates or
    /// changes the class.
    async fn modify_plan(
        &self,
        cluster: &Cluster,
        change: &mut PlanChange<'_>,
        diagnostics: &mut Diagnostics,
    ) {
        if !change.prior.is_null() && *change.planned == *change.prior {
            return;
        }
        let config = change.config;
        let fenced = ["allowed_namespaces", "allowed_namespace_selector"]
            .iter()
            .any(|a| !config.attr(a).is_null());
        if let Some(name) = config.attr("name").as_str().filter(|_| fenced) {
            let what = format!("priority class {name:?}");
            diagnostics.extend(admission::plan(cluster, &what).await);
        }
    }

    /// The API server must enforce the fence before the class is written.
    async fn prepare_write(
        &self,
        cluster: &Cluster,
        _: &(),
        planned: &mut Model,
        deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        let wanted = guarded(&planned.name, planned.fence.clone());
        admission::prepare(cluster, &wanted, deadline).await
    }

    async fn write_companions(
        &self,
        cluster: &Cluster,
        _: &(),
        prior: Option<&Model>,
        state: &mut Model,
        deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        let prior_fenced = prior.is_some_and(|p| p.fence.fenced());
        let wanted = guarded(&state.name, state.fence.clone());
        admission::write(cluster, &wanted, prior_fenced, &mut state.fence, deadline).await?;
        Ok(Warnings::default())
    }

    async fn read_companions(
        &self,
        cluster: &Cluster,
        state: &mut Model,
        _prior: &Model,
        importing: bool,
        deadline: Deadline,
    ) -> Result<(), Diagnostics> {
        let name = state.name.clone();
        let fenced = |settings| guarded(&name, settings);
        admission::read(cluster, fenced, &mut state.fence, importing, deadline).await
    }

    async fn delete_companions(
        &self,
        cluster: &Cluster,
        prior: &Model,
        deadline: Deadline,
    ) -> Result<Warnings, Diagnostics> {
        if prior.fence.fenced() || prior.fence.admission_policy.is_some() {
            admission::delete(cluster, &policy_name(&prior.name), deadline).await?;
        }
        Ok(Warnings::default())
    }

    async fn objects<'c>(
        &self,
        cluster: &'c Cluster,
    ) -> Result<Objects<'c, PriorityClassObject>, GaveUp> {
        cluster.kubernetes.objects(Self::KIND).await
    }

    fn object_name(model: &Model) -> &str {
        &model.name
    }

    fn resolve(&self, _: &Cluster, _: &Model) {}

    fn to_object(&self, _: &(), model: &Model) -> Result<PriorityClassObject, Diagnostics> {
        // Validation bounds the value, but a value known only at apply time
        // was never validated.
        let value = i32::try_from(model.value)
            .ok()
            .filter(|v| i64::from(*v) <= MAX_USER_VALUE)
            .ok_or_else(|| {
                Diagnostic::error(
                    "Invalid attribute value",
                    format!("{} is outside {}..={MAX_USER_VALUE}", model.value, i32::MIN),
                )
                .at(AttributePath::attr("value"))
            })?;
        Ok(PriorityClassObject {
            metadata: ObjectMeta {
                name: Some(model.name.clone()),
                labels: model.labels.clone(),
                annotations: model.annotations.clone(),
                ..Default::default()
            },
            // Optional in the API's schema from 1.36, required before: always sent.
            value: Some(value),
            preemption_policy: model.preemption_policy.clone(),
            global_default: model.global_default,
            description: model.description.clone(),
        })
    }

    fn state_from(
        &self,
        _: &Cluster,
        object: PriorityClassObject,
        prior: &Model,
        importing: bool,
    ) -> Result<Model, Diagnostics> {
        Ok(Model {
            id: None,
            name: object.metadata.name.unwrap_or_default(),
            // The API's Go type always writes `value` (no omitempty) and
            // reads a missing one as 0 (k8s.io/api, scheduling/v1 types.go).
            value: i64::from(object.value.unwrap_or_default()),
            preemption_policy: Some(
                object
                    .preemption_policy
                    .unwrap_or_else(|| POLICIES[0].to_string()),
            ),
            global_default: Some(object.global_default.unwrap_or(false)),
            description: owned(object.description, &prior.description, importing),
            labels: owned_map(object.metadata.labels, &prior.labels, importing),
            annotations: owned_map(object.metadata.annotations, &prior.annotations, importing),
            timeouts: prior.timeouts.clone(),
            fence: Fence::settings_of(&prior.fence),
        })
    }

    /// Kubernetes' own classes, which validation refuses to manage.
    fn manageable(&self, name: &str) -> bool {
        !name.starts_with("system-")
    }

    fn imported(&self, name: &str) -> Model {
        Model {
            name: name.to_string(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::LabelScheme;
    use crate::framework::testkit::{Harness, errors};
    use crate::kit::object::ObjectResource;
    use serde_json::json;

    fn harness() -> Harness<Cluster> {
        Harness::new(ObjectResource(PriorityClass))
    }

    fn errors_of(config: serde_json::Value) -> Vec<(String, String)> {
        let h = harness();
        h.validate(&h.value(config))
    }

    #[test]
    fn rejects_reserved_values_bad_names_and_unknown_policies_with_paths() {
        let found = errors_of(json!({
            "name": "Online_Inference",
            "value": 2_000_000_000,
            "preemption_policy": "Sometimes",
        }));
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            vec!["name", "value", "preemption_policy"],
            "{found:?}"
        );
        assert!(found[1].1.contains("reserved for system"));
        let system = errors_of(json!({"name": "system-x", "value": 1}));
        assert_eq!(system[0].0, "name");
    }

    #[test]
    fn a_value_beyond_64_bits_is_out_of_range_and_an_id_is_not_configurable() {
        let h = harness();
        let huge = Value::Number(Value::parse_number("1e30").unwrap());
        let found = h.validate(
            &h.schema()
                .object(&[("name", Value::string("inference")), ("value", huge)]),
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "value");
        assert!(
            found[0]
                .1
                .contains("1000000000000000000000000000000 is outside"),
            "{found:?}"
        );
        let found = errors_of(json!({"name": "inference", "value": 1, "id": "inference"}));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "id");
    }

    #[test]
    fn unknown_values_are_not_judged_at_validate_time() {
        let h = harness();
        let c = h
            .schema()
            .object(&[("name", Value::UNKNOWN), ("value", Value::UNKNOWN)]);
        assert!(h.validate(&c).is_empty());
    }

    #[test]
    fn plan_knows_the_id_and_defaults() {
        let h = harness();
        let config = h.value(json!({"name": "batch-training", "value": 1000}));
        let plan = h.plan(&Cluster::offline(LabelScheme::Cfke), &Value::Null, &config);
        assert!(errors(&plan.diagnostics).is_empty());
        assert_eq!(
            plan.planned_state.attr("id"),
            &Value::string("batch-training")
        );
        assert_eq!(
            plan.planned_state.attr("preemption_policy"),
            &Value::string("PreemptLowerPriority")
        );
    }

    fn seed() -> Model {
        Model {
            id: None,
            name: "batch-training".into(),
            value: 1000,
            preemption_policy: Some("Never".into()),
            global_default: Some(false),
            description: Some("training".into()),
            labels: Some([("team".to_string(), "ml".to_string())].into()),
            annotations: None,
            timeouts: None,
            fence: Fence::default(),
        }
    }

    #[test]
    fn maps_to_and_from_the_api_object() {
        let cluster = Cluster::offline(LabelScheme::Cfke);
        let state = seed();
        let mut object = PriorityClass.to_object(&(), &state).unwrap();
        assert_eq!(object.value, Some(1000));
        assert_eq!(object.preemption_policy.as_deref(), Some("Never"));
        // Someone else's label and annotation stay out of state.
        object
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("other".into(), "x".into());
        object.metadata.annotations = Some([("kubectl".to_string(), "y".to_string())].into());
        let back = PriorityClass
            .state_from(&cluster, object, &state, false)
            .unwrap();
        assert_eq!(back, state);
    }

    #[test]
    fn a_value_outside_i32_is_refused_not_wrapped() {
        let huge = Model {
            value: i64::from(i32::MAX) + 1,
            ..seed()
        };
        let error = PriorityClass.to_object(&(), &huge).unwrap_err();
        assert_eq!(error.located()[0].0, "value");
    }
}
