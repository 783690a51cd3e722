//! The `timeouts` attribute, as terraform-plugin-framework-timeouts offers
//! it: how long each operation of a resource may keep waiting, e.g.
//! `timeouts = { create = "10m" }`, in Go's duration syntax.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::schema::Attr;
use super::validators::Validator;
use gpufleet_protocol::schema::Nesting;

/// An operation that a timeout bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Creating the object (ApplyResourceChange from null).
    Create,
    /// Refreshing it (ReadResource).
    Read,
    /// Changing it in place.
    Update,
    /// Destroying it.
    Delete,
}

impl Operation {
    /// The attribute inside `timeouts` that sets it.
    pub fn attribute(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Read => "read",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }
}

/// The `timeouts` attribute's value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeouts {
    /// How long a create may take, as a duration such as `5m`.
    pub create: Option<String>,
    /// How long a refresh may take.
    pub read: Option<String>,
    /// How long an in-place update may take.
    pub update: Option<String>,
    /// How long a destroy may take.
    pub delete: Option<String>,
}

impl Timeouts {
    /// The configured timeout of `operation`, if any (validation has
    /// checked the syntax of every known value).
    pub fn of(timeouts: Option<&Self>, operation: Operation) -> Option<Duration> {
        let timeouts = timeouts?;
        let text = match operation {
            Operation::Create => &timeouts.create,
            Operation::Read => &timeouts.read,
            Operation::Update => &timeouts.update,
            Operation::Delete => &timeouts.delete,
        };
        parse_duration(text.as_deref()?).ok()
    }
}

/// The attribute, described as `description` (what the operations wait
/// for, and how long they wait when it is not set).
pub fn attribute(description: &'static str) -> Attr {
    let duration = || {
        Validator::string_with("A positive duration such as `90s`, `5m` or `1h30m`.", |s| {
            parse_duration(s).map(|_| ())
        })
    };
    let each = |operation: Operation, description: &'static str| {
        Attr::string(operation.attribute())
            .optional()
            .validate(duration())
            .describe(description)
    };
    Attr::nested(
        "timeouts",
        Nesting::Single,
        vec![
            each(Operation::Create, "How long a create may take."),
            each(Operation::Read, "How long a read (refresh) may take."),
            each(Operation::Update, "How long an update may take."),
            each(Operation::Delete, "How long a delete may take."),
        ],
    )
    .optional()
    .describe(description)
}

/// A duration in Go's syntax: decimal numbers each with a unit (`h`, `m`,
/// `s`, `ms`, `us`, `ns`), e.g. `1h30m` or `1.5s`; it must be positive.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("{text:?} is not a duration such as \"90s\", \"5m\" or \"1h30m\"");
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(invalid()),
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    if total <= 0.0 {
        return Err(format!("{text:?}: a timeout must be longer than zero"));
    }
    Duration::try_from_secs_f64(total).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let secs = |s: &str| parse_duration(s).map(|d| d.as_secs_f64());
        assert_eq!(secs("90s"), Ok(90.0));
        assert_eq!(secs("1h30m"), Ok(5400.0));
        assert_eq!(secs("1.5m"), Ok(90.0));
        assert_eq!(secs("250ms"), Ok(0.25));
        for bad in ["", "10", "m", "5 m", "5d", "1h-5m", "1..5s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_duration("0s")
                .unwrap_err()
                .contains("longer than zero")
        );
    }

    #[test]
    fn only_the_operations_set_have_a_timeout() {
        let timeouts = Timeouts {
            create: Some("10m".into()),
            ..Default::default()
        };
        assert_eq!(
            Timeouts::of(Some(&timeouts), Operation::Create),
            Some(Duration::from_secs(600))
        );
        assert_eq!(Timeouts::of(Some(&timeouts), Operation::Delete), None);
        assert_eq!(Timeouts::of(None, Operation::Create), None);
    }
}
