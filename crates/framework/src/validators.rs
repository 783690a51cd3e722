//! Validators as small described values, in the manner of
//! terraform-plugin-framework: an attribute validator checks one known,
//! non-null value; an object validator checks how the attributes of one
//! object go together (`exactly_one_of`, `all_or_none`, ...). Each carries a
//! one-line description that the schema shows in the attribute's
//! documentation, so docs and behaviour cannot drift apart.

use std::sync::Arc;

use gpufleet_protocol::{AttributePath, Diagnostics, Value};

type Check = dyn Fn(&Value) -> Result<(), String> + Send + Sync;

/// Checks one known, non-null value; the error text becomes the diagnostic
/// detail.
#[derive(Clone)]
pub struct Validator {
    description: String,
    check: Arc<Check>,
}

impl Validator {
    /// A validator described as `description` (a sentence fragment such as
    /// "one of `a`, `b`") that runs `check`.
    pub fn new(
        description: impl Into<String>,
        check: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            description: description.into(),
            check: Arc::new(check),
        }
    }

    /// What a valid value is, for documentation.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Checks `value`; `Err` says what is wrong with it.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        (self.check)(value)
    }

    /// A validator from a string predicate; `expected` describes valid values
    /// ("a duration such as `30s`") and follows "is not" in errors.
    pub fn string(expected: &'static str, valid: fn(&str) -> bool) -> Self {
        Self::new(expected, move |v| match v.as_str() {
            Some(s) if !valid(s) => Err(format!("{s:?} is not {expected}")),
            _ => Ok(()),
        })
    }

    /// A validator from a string check that explains its own errors.
    pub fn string_with(
        description: impl Into<String>,
        check: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self::new(description, move |v| v.as_str().map_or(Ok(()), &check))
    }
}

/// One of a fixed set of strings, spelled exactly.
pub fn one_of(allowed: &'static [&'static str]) -> Validator {
    Validator::new(
        format!("One of {}.", code_list(allowed)),
        move |v| match v.as_str() {
            Some(s) if allowed.contains(&s) => Ok(()),
            Some(s) => Err(format!("{s:?} is not one of {}", quoted_list(allowed))),
            None => Ok(()),
        },
    )
}

/// An integer between `min` and `max`, inclusive; `why` explains the bound
/// and is appended to the error.
pub fn integer_between(min: i64, max: i64, why: &'static str) -> Validator {
    Validator::new(format!("A whole number from {min} to {max}."), move |v| {
        let Some(n) = v.as_number() else {
            return Ok(());
        };
        let text = || gpufleet_protocol::value::number_text(n);
        if !n.is_integer() {
            return Err(format!("{} is not a whole number", text()));
        }
        let Some(i) = v.as_i64() else {
            return Err(format!("{} is outside {min}..={max}{why}", text()));
        };
        if (min..=max).contains(&i) {
            Ok(())
        } else {
            Err(format!("{i} is outside {min}..={max}{why}"))
        }
    })
}

/// A string, list, set or map with something in it.
pub fn not_empty() -> Validator {
    Validator::new("Must not be empty.", |v| {
        if v.as_str() == Some("")
            || v.elements().is_some_and(<[_]>::is_empty)
            || v.entries().is_some_and(|m| m.is_empty())
        {
            Err("must not be empty".into())
        } else {
            Ok(())
        }
    })
}

/// Applies `validator` to every known element of a list or set.
pub fn each(validator: Validator) -> Validator {
    let description = format!("Each element: {}", validator.description());
    Validator::new(description, move |v| {
        v.elements()
            .into_iter()
            .flatten()
            .filter(|element| !element.is_null() && !element.is_unknown())
            .try_for_each(|element| validator.check(element))
    })
}

/// A list or set without null elements (Terraform lets `["a", null]`
/// through).
pub fn no_null_elements() -> Validator {
    Validator::new("Elements must not be null.", |v| {
        match v.elements().into_iter().flatten().position(Value::is_null) {
            Some(i) => Err(format!("element {i} is null")),
            None => Ok(()),
        }
    })
}

/// What an [`ObjectValidator`] requires of its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    ExactlyOneOf,
    AtLeastOneOf,
    AllOrNone,
    ConflictsWith,
}

/// A rule over several attributes of one object (the resource, or one
/// nested object), checked where all of them are known.
#[derive(Clone, Debug)]
pub struct ObjectValidator {
    rule: Rule,
    attributes: Vec<&'static str>,
}

/// Exactly one of `attributes` is set.
pub fn exactly_one_of(attributes: &[&'static str]) -> ObjectValidator {
    ObjectValidator::new(Rule::ExactlyOneOf, attributes)
}

/// At least one of `attributes` is set.
pub fn at_least_one_of(attributes: &[&'static str]) -> ObjectValidator {
    ObjectValidator::new(Rule::AtLeastOneOf, attributes)
}

/// `attributes` are set together or not at all.
pub fn all_or_none(attributes: &[&'static str]) -> ObjectValidator {
    ObjectValidator::new(Rule::AllOrNone, attributes)
}

/// At most one of `attributes` is set.
pub fn conflicts_with(attributes: &[&'static str]) -> ObjectValidator {
    ObjectValidator::new(Rule::ConflictsWith, attributes)
}

impl ObjectValidator {
    fn new(rule: Rule, attributes: &[&'static str]) -> Self {
        assert!(
            attributes.len() >= 2,
            "{rule:?} needs two attributes or more"
        );
        Self {
            rule,
            attributes: attributes.to_vec(),
        }
    }

    /// The attributes the rule is about.
    pub fn attributes(&self) -> &[&'static str] {
        &self.attributes
    }

    /// The rule in words, for documentation.
    pub fn description(&self) -> String {
        let names = or_list(&self.attributes);
        match self.rule {
            Rule::ExactlyOneOf => format!("Exactly one of {names} must be set."),
            Rule::AtLeastOneOf => format!("At least one of {names} must be set."),
            Rule::AllOrNone => format!("{} go together.", and_list(&self.attributes)),
            Rule::ConflictsWith => format!("Only one of {names} may be set."),
        }
    }

    /// Checks `object` at `path`. Nothing is judged while one of the
    /// attributes is still unknown.
    pub fn check(&self, object: &Value, path: &AttributePath, diagnostics: &mut Diagnostics) {
        let values: Vec<&Value> = self.attributes.iter().map(|a| object.attr(a)).collect();
        if values.iter().any(|v| v.is_unknown()) {
            return;
        }
        let set: Vec<&str> = self
            .attributes
            .iter()
            .zip(&values)
            .filter(|(_, v)| !v.is_null())
            .map(|(a, _)| *a)
            .collect();
        let names = or_list(&self.attributes);
        let whose = if path.0.is_empty() {
            String::new()
        } else {
            format!("{path}: ")
        };
        let (at, summary, detail) = match self.rule {
            Rule::ExactlyOneOf | Rule::ConflictsWith if set.len() > 1 => (
                set[1],
                "Conflicting attributes",
                format!("{whose}Set either {}, not both.", or_list(&set)),
            ),
            Rule::ExactlyOneOf | Rule::AtLeastOneOf if set.is_empty() => (
                self.attributes[0],
                "Missing attribute",
                format!(
                    "{whose}Set {} of {names}.",
                    if self.rule == Rule::ExactlyOneOf {
                        "exactly one"
                    } else {
                        "at least one"
                    }
                ),
            ),
            Rule::AllOrNone if !set.is_empty() && set.len() < self.attributes.len() => {
                let missing = self
                    .attributes
                    .iter()
                    .find(|a| !set.contains(a))
                    .expect("one is missing");
                (
                    *missing,
                    "Incomplete attributes",
                    format!(
                        "{whose}{} go together; set all or none.",
                        and_list(&self.attributes)
                    ),
                )
            }
            _ => return,
        };
        // An unset attribute has no line of its own; Terraform then shows
        // the enclosing object.
        diagnostics.error_at(path.join_attr(at), summary, detail);
    }
}

/// `"a", "b", "c"`: values as a user would type them.
pub fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `` `a`, `b`, `c` ``: values for Markdown documentation.
pub fn code_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn joined(items: &[&str], word: &str) -> String {
    let names: Vec<String> = items.iter().map(|i| format!("`{i}`")).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} {word} {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

fn or_list(items: &[&str]) -> String {
    joined(items, "or")
}

fn and_list(items: &[&str]) -> String {
    joined(items, "and")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Attr, ObjectSchema};
    use gpufleet_protocol::Value;

    #[test]
    fn collections() {
        let set = |items: &[&str]| Value::Set(items.iter().map(|s| Value::string(*s)).collect());
        assert!(not_empty().check(&set(&[])).is_err());
        assert!(not_empty().check(&set(&["a"])).is_ok());
        let choices = each(one_of(&["spot", "on-demand"]));
        assert!(choices.check(&set(&["spot"])).is_ok());
        assert!(
            choices
                .check(&set(&["spot", "cheap"]))
                .unwrap_err()
                .contains("cheap")
        );
        assert_eq!(
            choices.description(),
            "Each element: One of `spot`, `on-demand`."
        );
    }

    #[test]
    fn integers_and_choices() {
        let v = integer_between(0, 10, "");
        assert!(v.check(&Value::int(10)).is_ok());
        assert!(v.check(&Value::int(11)).unwrap_err().contains("outside"));
        let frac = Value::Number(Value::parse_number("1.5").unwrap());
        assert!(v.check(&frac).unwrap_err().contains("whole number"));
        // Beyond 64 bits is still a whole number, out of range.
        let huge = Value::Number(Value::parse_number("1e30").unwrap());
        assert_eq!(
            v.check(&huge).unwrap_err(),
            "1000000000000000000000000000000 is outside 0..=10"
        );
        let c = one_of(&["Never"]);
        assert!(c.check(&Value::string("Never")).is_ok());
        assert!(c.check(&Value::string("never")).is_err());
    }

    fn object(pairs: &[(&str, Value)]) -> Value {
        let attrs = ["a", "b", "c"].map(|name| Attr::string(name).optional());
        ObjectSchema::new("t", attrs.into()).object(pairs)
    }

    fn located(validator: &ObjectValidator, object: &Value) -> Vec<(String, String)> {
        let mut d = Diagnostics::default();
        validator.check(object, &AttributePath::attr("outer"), &mut d);
        d.located()
    }

    #[test]
    fn object_rules_point_at_the_attribute_to_change() {
        let one = exactly_one_of(&["a", "b"]);
        let (x, unknown) = (Value::string("x"), Value::UNKNOWN);
        let both = located(&one, &object(&[("a", x.clone()), ("b", x.clone())]));
        assert_eq!(both[0].0, "outer.b");
        assert!(
            both[0].1.contains("Set either `a` or `b`, not both"),
            "{both:?}"
        );
        let neither = located(&one, &object(&[]));
        assert_eq!(neither[0].0, "outer.a");
        assert!(
            neither[0]
                .1
                .starts_with("outer: Set exactly one of `a` or `b`")
        );
        assert!(located(&one, &object(&[("b", x.clone())])).is_empty());
        assert!(located(&one, &object(&[("a", unknown.clone())])).is_empty());

        let together = all_or_none(&["a", "b", "c"]);
        let partial = located(&together, &object(&[("a", x.clone())]));
        assert_eq!(partial[0].0, "outer.b");
        assert!(partial[0].1.contains("`a`, `b` and `c` go together"));
        assert!(located(&together, &object(&[])).is_empty());

        let some = at_least_one_of(&["a", "b"]);
        assert_eq!(located(&some, &object(&[]))[0].0, "outer.a");
        assert!(located(&some, &object(&[("a", x.clone()), ("b", x.clone())])).is_empty());

        let apart = conflicts_with(&["a", "c"]);
        assert!(located(&apart, &object(&[])).is_empty());
        assert_eq!(
            located(&apart, &object(&[("a", x.clone()), ("c", x)]))[0].0,
            "outer.c"
        );
        assert_eq!(together.description(), "`a`, `b` and `c` go together.");
    }
}
