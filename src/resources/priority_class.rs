//! `gpufleet_priority_class`: a scheduling.k8s.io/v1 PriorityClass, e.g.
//! inference (high, preempts) above training (low, `Never`).

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::scheduling::v1::PriorityClass as PriorityClassObject;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::ownership::{IMPORTING, check_import_name, importing, owned, owned_map};
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::state::{typed, untyped};
use crate::framework::validators::{
    annotation_keys, dns1123_subdomain, integer_between, labels, one_of,
};
use crate::framework::{Resource, Stored};
use crate::protocol::{AttributePath, Diagnostics, Value};
use crate::provider::Client;
use crate::provider::kube::apply;

const KIND: &str = "scheduling.k8s.io/v1 PriorityClass";
/// Values above this are reserved for system classes.
const MAX_USER_VALUE: i64 = 1_000_000_000;
const POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];

pub struct PriorityClass;

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct State {
    id: Option<String>,
    name: String,
    value: i64,
    preemption_policy: Option<String>,
    global_default: Option<bool>,
    description: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
}

impl State {
    fn to_object(&self) -> PriorityClassObject {
        PriorityClassObject {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: self.labels.clone(),
                annotations: self.annotations.clone(),
                ..Default::default()
            },
            // Validation keeps the value within i32.
            value: self.value as i32,
            preemption_policy: self.preemption_policy.clone(),
            global_default: self.global_default,
            description: self.description.clone(),
        }
    }

    /// State from the live object; `prior` says which optional fields are ours.
    fn from_object(object: PriorityClassObject, prior: &State, importing: bool) -> State {
        let name = object.metadata.name.unwrap_or_default();
        State {
            id: Some(name.clone()),
            name,
            value: i64::from(object.value),
            preemption_policy: Some(
                object
                    .preemption_policy
                    .unwrap_or_else(|| POLICIES[0].to_string()),
            ),
            global_default: Some(object.global_default.unwrap_or(false)),
            description: owned(object.description, &prior.description, importing),
            labels: owned_map(object.metadata.labels, &prior.labels, importing),
            annotations: owned_map(object.metadata.annotations, &prior.annotations, importing),
        }
    }
}

impl PriorityClass {
    async fn apply_state(
        &self,
        client: &Client,
        planned: &Value,
        action: &str,
    ) -> Result<Stored, Diagnostics> {
        let state: State = typed(planned)?;
        let api = client.kubernetes.api::<PriorityClassObject>().await?;
        let action = format!("{action} PriorityClass {:?}", state.name);
        let live = apply(&api, &state.name, &state.to_object())
            .await
            .map_err(|e| client.kubernetes.api_error(&action, KIND, &e))?;
        Ok(untyped(
            &State::from_object(live, &state, false),
            &self.schema().value_type(),
        )?
        .into())
    }
}

#[async_trait]
impl Resource<Client> for PriorityClass {
    fn name(&self) -> &'static str {
        "priority_class"
    }

    fn schema(&self) -> ObjectSchema {
        ObjectSchema::new(
            "A PriorityClass: pods that name it get its priority; `preemption_policy = \"Never\"` keeps them from evicting others.",
            vec![
                Attr::string("id").computed().use_state_for_unknown().describe("The class name."),
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
                    .describe("`PreemptLowerPriority` (default) or `Never`. Immutable; a change replaces the class."),
                Attr::bool("global_default")
                    .default(Value::Bool(false))
                    .describe("Whether pods without a class get this one."),
                Attr::string("description").optional(),
                Attr::string_map("labels").optional().validate(labels()),
                Attr::string_map("annotations").optional().validate(annotation_keys()),
            ],
        )
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
    }

    async fn create(&self, client: &Client, planned: &Value) -> Result<Stored, Diagnostics> {
        let name = planned.attr("name").as_str().unwrap_or_default();
        let api = client.kubernetes.api::<PriorityClassObject>().await?;
        client
            .kubernetes
            .ensure_absent(&api, name, &format!("PriorityClass {name:?}"), KIND)
            .await?;
        self.apply_state(client, planned, "create").await
    }

    async fn read(
        &self,
        client: &Client,
        current: &Value,
        private: &[u8],
    ) -> Result<Option<Stored>, Diagnostics> {
        let prior: State = typed(current)?;
        let api = client.kubernetes.api::<PriorityClassObject>().await?;
        let object = format!("PriorityClass {:?}", prior.name);
        let live = client
            .kubernetes
            .read(&api, &prior.name, &object, KIND)
            .await?;
        let Some(live) = live else { return Ok(None) };
        let state = State::from_object(live, &prior, importing(private));
        Ok(Some(untyped(&state, &self.schema().value_type())?.into()))
    }

    async fn update(
        &self,
        client: &Client,
        _prior: &Value,
        planned: &Value,
        _private: &[u8],
    ) -> Result<Stored, Diagnostics> {
        self.apply_state(client, planned, "update").await
    }

    async fn delete(
        &self,
        client: &Client,
        prior: &Value,
        _private: &[u8],
    ) -> Result<(), Diagnostics> {
        let name = prior.attr("name").as_str().unwrap_or_default();
        let api = client.kubernetes.api::<PriorityClassObject>().await?;
        client
            .kubernetes
            .remove(&api, name, &format!("PriorityClass {name:?}"), KIND)
            .await
    }

    fn import(&self, id: &str) -> Result<Stored, Diagnostics> {
        check_import_name(id, "class name")?;
        let state = State {
            id: Some(id.to_string()),
            name: id.to_string(),
            ..Default::default()
        };
        Ok(Stored {
            state: untyped(&state, &self.schema().value_type())?,
            private: IMPORTING.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::validate_config;

    fn config(pairs: &[(&str, Value)]) -> Value {
        PriorityClass.schema().object(pairs)
    }

    fn errors(config: &Value) -> Vec<(String, String)> {
        let mut d = validate_config(&PriorityClass.schema().attrs, config);
        PriorityClass.validate(config, &mut d);
        d.located()
    }

    #[test]
    fn rejects_reserved_values_bad_names_and_unknown_policies_with_paths() {
        let bad = config(&[
            ("name", Value::string("Online_Inference")),
            ("value", Value::int(2_000_000_000)),
            ("preemption_policy", Value::string("Sometimes")),
        ]);
        let found = errors(&bad);
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            vec!["name", "value", "preemption_policy"],
            "{found:?}"
        );
        assert!(found[1].1.contains("reserved for system"));
        let system = config(&[
            ("name", Value::string("system-x")),
            ("value", Value::int(1)),
        ]);
        assert_eq!(errors(&system)[0].0, "name");
    }

    #[test]
    fn unknown_values_are_not_judged_at_validate_time() {
        let c = config(&[("name", Value::UNKNOWN), ("value", Value::UNKNOWN)]);
        assert!(errors(&c).is_empty());
    }

    #[test]
    fn maps_to_and_from_the_api_object() {
        let state = State {
            id: None,
            name: "batch-training".into(),
            value: 1000,
            preemption_policy: Some("Never".into()),
            global_default: Some(false),
            description: Some("training".into()),
            labels: Some([("team".to_string(), "ml".to_string())].into()),
            annotations: None,
        };
        let mut object = state.to_object();
        assert_eq!(object.value, 1000);
        assert_eq!(object.preemption_policy.as_deref(), Some("Never"));
        // Someone else's label and annotation stay out of state.
        object
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("other".into(), "x".into());
        object.metadata.annotations = Some([("kubectl".to_string(), "y".to_string())].into());
        let back = State::from_object(object, &state, false);
        assert_eq!(
            back,
            State {
                id: Some("batch-training".into()),
                ..state
            }
        );
    }
}
