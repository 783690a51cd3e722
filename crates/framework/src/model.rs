//! Typed models: resources read plans and state, and write state, as plain
//! serde structs. Values convert through exact JSON against the type the
//! framework caches for each schema.

use serde::Serialize;
use serde::de::DeserializeOwned;

use gpufleet_protocol::codec::from_json;
use gpufleet_protocol::{Diagnostic, Diagnostics, Type, Value};

/// What a resource's state is read as and written from.
pub trait Model: Serialize + DeserializeOwned + Default + Send + Sync + 'static {}

impl<T: Serialize + DeserializeOwned + Default + Send + Sync + 'static> Model for T {}

/// Reads a value as `T`. Unknowns read as null: at apply time only computed
/// attributes can still be unknown, and those are what the resource fills in.
pub fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, Diagnostics> {
    serde_json::from_value(value.to_json()).map_err(|e| bug("Unexpected value shape", e))
}

/// Writes `T` as a value of type `ty`; fields `T` lacks are null.
pub fn encode<T: Serialize>(model: &T, ty: &Type) -> Result<Value, Diagnostics> {
    let json = serde_json::to_value(model).map_err(|e| bug("Cannot encode state", e))?;
    from_json(&json, ty).map_err(|e| bug("Cannot encode state", e))
}

/// `value` with every unknown replaced by a placeholder of its type (an
/// empty string, zero, false, an empty collection, an object of
/// placeholders), so that a model decodes from a plan whose values are
/// partly unknown. Whatever is computed from placeholders must be thrown
/// away, as planning does for derived attributes whose inputs are unknown.
pub fn with_placeholders(value: &Value, ty: &Type) -> Value {
    match (value, ty) {
        (Value::Unknown(_), ty) => placeholder(ty),
        (Value::Object(attrs), Type::Object { attributes, .. }) => Value::Object(
            attrs
                .iter()
                .map(|(name, v)| {
                    let v = match attributes.get(name) {
                        Some(t) => with_placeholders(v, t),
                        None => v.clone(),
                    };
                    (name.clone(), v)
                })
                .collect(),
        ),
        (Value::List(items), Type::List(t)) => {
            Value::List(items.iter().map(|v| with_placeholders(v, t)).collect())
        }
        (Value::Set(items), Type::Set(t)) => {
            Value::Set(items.iter().map(|v| with_placeholders(v, t)).collect())
        }
        (Value::Map(entries), Type::Map(t)) => Value::Map(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), with_placeholders(v, t)))
                .collect(),
        ),
        (value, _) => value.clone(),
    }
}

fn placeholder(ty: &Type) -> Value {
    match ty {
        Type::String => Value::string(""),
        Type::Number => Value::int(0),
        Type::Bool => Value::Bool(false),
        Type::List(_) => Value::List(Vec::new()),
        Type::Set(_) => Value::Set(Vec::new()),
        Type::Map(_) => Value::Map(Default::default()),
        Type::Tuple(types) => Value::Tuple(types.iter().map(placeholder).collect()),
        Type::Object { attributes, .. } => Value::Object(
            attributes
                .iter()
                .map(|(name, t)| (name.clone(), placeholder(t)))
                .collect(),
        ),
        Type::Dynamic => Value::Null,
    }
}

fn bug(summary: &str, error: impl std::fmt::Display) -> Diagnostics {
    Diagnostic::error(
        summary,
        format!("{error}. This is a bug in the provider; please report it."),
    )
    .into()
}

/// A resource's private state: bookkeeping Terraform stores beside the
/// state without showing it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Private {
    /// Set by import for the read that follows it: everything live is taken
    /// into state, not only the fields the prior state manages.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub importing: bool,
    /// What the resource keeps for itself between operations: values it
    /// took over from other writers, to give back on destroy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kept: Option<serde_json::Value>,
}

impl Private {
    /// The private state of a resource being imported.
    pub fn importing() -> Self {
        Self {
            importing: true,
            kept: None,
        }
    }

    /// Private state that keeps `kept`; nothing when it is empty.
    pub fn keeping<T: Serialize>(kept: &[T]) -> Self {
        Self {
            importing: false,
            kept: (!kept.is_empty())
                .then(|| serde_json::to_value(kept).expect("private state encodes")),
        }
    }

    /// What [`Private::keeping`] kept; empty when nothing or unreadable.
    pub fn kept<T: DeserializeOwned>(&self) -> Vec<T> {
        self.kept
            .as_ref()
            .and_then(|k| serde_json::from_value(k.clone()).ok())
            .unwrap_or_default()
    }

    /// What a read passes on: everything but the import flag, which holds
    /// for one read only.
    pub fn carried(&self) -> Self {
        Self {
            importing: false,
            kept: self.kept.clone(),
        }
    }

    /// Decodes stored bytes; anything unreadable counts as empty.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        serde_json::from_slice(bytes).unwrap_or_default()
    }

    /// The bytes Terraform stores; empty when there is nothing to keep.
    pub fn to_bytes(&self) -> Vec<u8> {
        if *self == Self::default() {
            Vec::new()
        } else {
            serde_json::to_vec(self).expect("private state encodes")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_stand_in_for_unknowns_of_every_type() {
        let ty = Type::object([
            ("name", Type::String),
            ("count", Type::Number),
            ("class", Type::object([("kind", Type::String)])),
            ("tags", Type::list(Type::String)),
        ]);
        let value = Value::Object(
            [
                ("name", Value::UNKNOWN),
                ("count", Value::int(3)),
                ("class", Value::UNKNOWN),
                (
                    "tags",
                    Value::List(vec![Value::UNKNOWN, Value::string("a")]),
                ),
            ]
            .map(|(k, v)| (k.to_string(), v))
            .into(),
        );
        let filled = with_placeholders(&value, &ty);
        assert!(filled.is_wholly_known());
        assert_eq!(
            filled.to_json(),
            serde_json::json!({"name": "", "count": 3, "class": {"kind": ""}, "tags": ["", "a"]})
        );
    }

    #[test]
    fn private_state_round_trips_and_tolerates_garbage() {
        assert!(Private::default().to_bytes().is_empty());
        let importing = Private::importing().to_bytes();
        assert!(Private::from_bytes(&importing).importing);
        assert_eq!(Private::from_bytes(b""), Private::default());
        assert_eq!(Private::from_bytes(b"\x00junk"), Private::default());
    }
}
