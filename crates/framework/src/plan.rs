//! Planning shared by every resource: defaults, unknown computed values,
//! "use state for unknown" and "requires replace", then the resource's own
//! adjustments.

use super::schema::{Attr, AttrKind, ObjectSchema};
use gpufleet_protocol::schema::Nesting;
use gpufleet_protocol::{AttributePath, Value};

/// The framework's plan of one resource.
pub struct Plan {
    /// The planned new state.
    pub planned: Value,
    /// Changed attributes that force replacement.
    pub requires_replace: Vec<AttributePath>,
}

/// Plans a change from `prior` to `proposed` (Terraform's merge of config and
/// prior state). `proposed` null means destroy.
pub fn plan(schema: &ObjectSchema, prior: &Value, proposed: &Value, config: &Value) -> Plan {
    let mut planned = proposed.clone();
    if proposed.is_null() {
        return Plan {
            planned,
            requires_replace: Vec::new(),
        };
    }
    // Defaults first: a default that equals the prior value is no change.
    apply_defaults(&schema.attrs, &mut planned, config);
    let creating = prior.is_null();
    let changing = creating || !planned.semantically_eq(prior);
    for attr in computed_unset(&schema.attrs, config) {
        let keep_prior = !creating && (attr.use_state_for_unknown || !changing);
        if !keep_prior {
            set(&mut planned, attr.name, Value::UNKNOWN);
        }
    }
    let mut requires_replace = Vec::new();
    if !creating {
        replaced(
            &schema.attrs,
            &planned,
            prior,
            &AttributePath::root(),
            &mut requires_replace,
        );
    }
    Plan {
        planned,
        requires_replace,
    }
}

/// Plans the default of each attribute the configuration leaves null, also
/// inside single nested attributes the configuration sets. (Defaults inside
/// list, set and map nested attributes are not applied.)
fn apply_defaults(attrs: &[Attr], planned: &mut Value, config: &Value) {
    for attr in attrs {
        let configured = config.attr(attr.name);
        match (&attr.default, &attr.kind) {
            (Some(default), _) if configured.is_null() => {
                set(planned, attr.name, default.clone());
            }
            (_, AttrKind::Nested(Nesting::Single, nested)) if !configured.is_null() => {
                if let Some(value) = planned.attr_mut(attr.name) {
                    apply_defaults(nested, value, configured);
                }
            }
            _ => {}
        }
    }
}

/// Collects the paths of changed attributes that require replacement, also
/// inside single nested attributes.
fn replaced(
    attrs: &[Attr],
    planned: &Value,
    prior: &Value,
    path: &AttributePath,
    found: &mut Vec<AttributePath>,
) {
    for attr in attrs {
        let (planned, prior) = (planned.attr(attr.name), prior.attr(attr.name));
        if attr.requires_replace && !planned.semantically_eq(prior) {
            found.push(path.join_attr(attr.name));
        } else if let AttrKind::Nested(Nesting::Single, nested) = &attr.kind {
            replaced(nested, planned, prior, &path.join_attr(attr.name), found);
        }
    }
}

/// Computed attributes the configuration leaves to the provider (and that have no default).
fn computed_unset<'a>(attrs: &'a [Attr], config: &'a Value) -> impl Iterator<Item = &'a Attr> {
    attrs
        .iter()
        .filter(move |a| a.flags.computed && a.default.is_none() && config.attr(a.name).is_null())
}

/// Plans the attributes declared `derived_from` with the values `derived`
/// (the planned state after the resource's `derive`) holds, wherever their
/// inputs are known. The others, and those `derive` left null (it cannot
/// tell them before apply) unless they are `exact`, stay as planned:
/// unknown while changing.
pub fn derive_planned(schema: &ObjectSchema, planned: &mut Value, derived: Option<&Value>) {
    let Some(derived) = derived else { return };
    for attr in schema.attrs.iter().filter(|a| !a.derived_from.is_empty()) {
        let known = attr
            .derived_from
            .iter()
            .all(|input| planned.attr(input).is_wholly_known());
        let value = derived.attr(attr.name);
        if known && (!value.is_null() || attr.exact) {
            set(planned, attr.name, value.clone());
        }
    }
}

/// Sets attribute `name` of an object value.
pub fn set(object: &mut Value, name: &str, value: Value) {
    if let Value::Object(entries) = object {
        entries.insert(name.to_string(), value);
    }
}

/// Terraform's proposed new state: configured values, and prior values of
/// computed attributes the configuration leaves unset.
pub fn proposed(attrs: &[Attr], prior: &Value, config: &Value) -> Value {
    Value::Object(
        attrs
            .iter()
            .map(|attr| {
                let (configured, prior) = (config.attr(attr.name), prior.attr(attr.name));
                let value = match &attr.kind {
                    _ if configured.is_null() && attr.flags.computed => prior.clone(),
                    AttrKind::Nested(Nesting::Single, nested) if !configured.is_null() => {
                        proposed(nested, prior, configured)
                    }
                    _ => configured.clone(),
                };
                (attr.name.to_string(), value)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Attr;

    fn schema() -> ObjectSchema {
        ObjectSchema::new(
            "test",
            vec![
                Attr::string("id").computed().use_state_for_unknown(),
                Attr::string("name").required().requires_replace(),
                Attr::string("mode").default(Value::string("auto")),
                Attr::string("status").computed(),
                Attr::string("note").optional(),
            ],
        )
    }

    fn object(pairs: &[(&str, Value)]) -> Value {
        schema().object(pairs)
    }

    #[test]
    fn create_fills_defaults_and_marks_computed_unknown() {
        let config = object(&[("name", Value::string("a"))]);
        let p = plan(&schema(), &Value::Null, &config, &config);
        assert_eq!(p.planned.attr("mode"), &Value::string("auto"));
        assert!(p.planned.attr("id").is_unknown());
        assert!(p.planned.attr("status").is_unknown());
        assert!(p.requires_replace.is_empty());
    }

    #[test]
    fn no_change_keeps_prior_computed_values() {
        let prior = object(&[
            ("id", Value::string("a")),
            ("name", Value::string("a")),
            ("mode", Value::string("auto")),
            ("status", Value::string("ok")),
        ]);
        let config = object(&[("name", Value::string("a"))]);
        let proposed = object(&[
            ("id", Value::string("a")),
            ("name", Value::string("a")),
            ("status", Value::string("ok")),
        ]);
        let p = plan(&schema(), &prior, &proposed, &config);
        assert_eq!(p.planned, prior);
    }

    #[test]
    fn change_marks_computed_unknown_except_stable_ids_and_flags_replacement() {
        let prior = object(&[
            ("id", Value::string("a")),
            ("name", Value::string("a")),
            ("mode", Value::string("auto")),
            ("status", Value::string("ok")),
        ]);
        let config = object(&[("name", Value::string("b")), ("note", Value::string("n"))]);
        let proposed = object(&[
            ("id", Value::string("a")),
            ("name", Value::string("b")),
            ("status", Value::string("ok")),
            ("note", Value::string("n")),
        ]);
        let p = plan(&schema(), &prior, &proposed, &config);
        assert_eq!(p.planned.attr("id"), &Value::string("a"));
        assert!(p.planned.attr("status").is_unknown());
        assert_eq!(p.requires_replace, vec![AttributePath::attr("name")]);
    }

    fn nested_schema() -> ObjectSchema {
        ObjectSchema::new(
            "test",
            vec![
                Attr::nested(
                    "class",
                    Nesting::Single,
                    vec![
                        Attr::string("group").required().requires_replace(),
                        Attr::string("name").required(),
                        Attr::string("policy").default(Value::string("auto")),
                    ],
                )
                .required(),
            ],
        )
    }

    fn class(group: &str, name: &str, policy: Value) -> Value {
        let inner = [
            ("group", Value::string(group)),
            ("name", Value::string(name)),
            ("policy", policy),
        ];
        Value::Object(
            [(
                "class".to_string(),
                Value::Object(inner.map(|(k, v)| (k.to_string(), v)).into()),
            )]
            .into(),
        )
    }

    #[test]
    fn exact_derived_attributes_plan_null_as_null() {
        let schema = ObjectSchema::new(
            "test",
            vec![
                Attr::string("name").required(),
                Attr::string("maybe").derived_from(&["name"]),
                Attr::string("exactly").derived_from(&["name"]).exact(),
            ],
        );
        let unknown = Value::Object(
            [
                ("name", Value::string("a")),
                ("maybe", Value::UNKNOWN),
                ("exactly", Value::UNKNOWN),
            ]
            .map(|(k, v)| (k.to_string(), v))
            .into(),
        );
        let derived = Value::Object(
            [
                ("name", Value::string("a")),
                ("maybe", Value::Null),
                ("exactly", Value::Null),
            ]
            .map(|(k, v)| (k.to_string(), v))
            .into(),
        );
        let mut planned = unknown.clone();
        derive_planned(&schema, &mut planned, Some(&derived));
        // "Cannot tell before apply" stays unknown; an exact null is null.
        assert!(planned.attr("maybe").is_unknown());
        assert!(planned.attr("exactly").is_null());
        // With its input unknown, even an exact one stays unknown.
        let mut planned = unknown;
        set(&mut planned, "name", Value::UNKNOWN);
        derive_planned(&schema, &mut planned, Some(&derived));
        assert!(planned.attr("exactly").is_unknown());
    }

    #[test]
    fn nested_defaults_and_replacement() {
        let config = class("g", "a", Value::Null);
        let created = plan(&nested_schema(), &Value::Null, &config, &config);
        assert_eq!(created.planned, class("g", "a", Value::string("auto")));

        let prior = class("g", "a", Value::string("auto"));
        let renamed = class("g", "b", Value::Null);
        let p = plan(&nested_schema(), &prior, &renamed, &renamed);
        assert!(p.requires_replace.is_empty());
        let regrouped = class("h", "a", Value::Null);
        let p = plan(&nested_schema(), &prior, &regrouped, &regrouped);
        assert_eq!(p.requires_replace[0].to_string(), "class.group");
    }
}
