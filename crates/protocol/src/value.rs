//! Values in Terraform's type system. A value does not carry its type (the
//! schema does), except inside a `dynamic` attribute.

use std::collections::BTreeMap;
use std::str::FromStr;

use bigdecimal::BigDecimal;
use bigdecimal::ToPrimitive;

use super::types::Type;

/// Arbitrary-precision number: Terraform numbers are big decimals, so
/// `1.5` and `1e30` must survive a round trip exactly.
pub type Number = BigDecimal;

/// Most decimal digits a number may have when written out in full (`1e30`
/// has 31). Terraform keeps about 155 significant digits, so this is far
/// beyond any real value, and it keeps work on what a client sends cheap:
/// converting `1e99999999` to an integer or to text would take minutes and
/// gigabytes.
pub const MAX_NUMBER_DIGITS: u64 = 4096;
/// Longest number text parsed: the digits written out, a sign, a point and
/// an exponent.
const MAX_NUMBER_TEXT: usize = MAX_NUMBER_DIGITS as usize + 32;

/// What Terraform told us about an unknown value (refinements, protocol
/// extension 12). We keep what validation can use.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Refinements {
    /// The value will not be null once known.
    pub not_null: bool,
    /// A string value will start with this prefix.
    pub string_prefix: Option<String>,
}

/// A value of an attribute, block or element, as it travels in requests.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Value {
    /// Not set: absent from configuration, or an object that does not exist.
    #[default]
    Null,
    /// Known only after apply (or later in plan). `None`: no refinements.
    Unknown(Option<Refinements>),
    /// A `bool`.
    Bool(bool),
    /// A `number`, exact.
    Number(Number),
    /// A `string`.
    String(String),
    /// A `list(...)`: elements of one type, in order.
    List(Vec<Value>),
    /// Sets are kept in wire order; equality compares as a multiset.
    Set(Vec<Value>),
    /// A `tuple([...])`: a fixed sequence, each element of its own type.
    Tuple(Vec<Value>),
    /// A `map(...)`: values of one type by string key.
    Map(BTreeMap<String, Value>),
    /// An `object({...})`: each attribute with its own type; all of them present.
    Object(BTreeMap<String, Value>),
    /// A value of a `dynamic` attribute, with the concrete type it had.
    Dynamic(Box<Type>, Box<Value>),
}

impl Value {
    /// An unknown with no refinements.
    pub const UNKNOWN: Value = Value::Unknown(None);

    /// A known string.
    pub fn string(s: impl Into<String>) -> Value {
        Value::String(s.into())
    }

    /// A known whole number.
    pub fn int(i: i64) -> Value {
        Value::Number(Number::from(i))
    }

    /// Null itself; false for an unknown, which may still become null.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Unknown itself; false for a known collection holding unknowns.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown(_))
    }

    /// True when no unknown is anywhere inside.
    pub fn is_wholly_known(&self) -> bool {
        match self {
            Value::Unknown(_) => false,
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => {
                v.iter().all(Value::is_wholly_known)
            }
            Value::Map(m) | Value::Object(m) => m.values().all(Value::is_wholly_known),
            Value::Dynamic(_, v) => v.is_wholly_known(),
            _ => true,
        }
    }

    /// The text of a known string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A known bool.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// A known number that is whole and fits in an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) if n.is_integer() => n.to_i64(),
            _ => None,
        }
    }

    /// A known number, exact.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    /// Elements of a list, set or tuple.
    pub fn elements(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => Some(v),
            _ => None,
        }
    }

    /// Entries of a map or object.
    pub fn entries(&self) -> Option<&BTreeMap<String, Value>> {
        match self {
            Value::Map(m) | Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// Attribute of an object; `Null` when absent or when `self` is not an object.
    pub fn attr(&self, name: &str) -> &Value {
        match self {
            Value::Object(m) => m.get(name).unwrap_or(&Value::Null),
            _ => &Value::Null,
        }
    }

    /// Attribute of an object, to change in place; `None` when absent or not an object.
    pub fn attr_mut(&mut self, name: &str) -> Option<&mut Value> {
        match self {
            Value::Object(m) => m.get_mut(name),
            _ => None,
        }
    }

    /// Parses a decimal number the way Terraform writes them (`1`, `1.5`,
    /// `1e30`); `None` for anything else, including numbers beyond
    /// [`MAX_NUMBER_DIGITS`].
    pub fn parse_number(text: &str) -> Option<Number> {
        let text = text.trim();
        // Parsing costs more than linear time in the length.
        if text.len() > MAX_NUMBER_TEXT {
            return None;
        }
        let n = Number::from_str(text).ok()?.normalized();
        let (_, scale) = n.as_bigint_and_scale();
        (n.digits().saturating_add(scale.unsigned_abs()) <= MAX_NUMBER_DIGITS).then_some(n)
    }

    /// Converts a known value to JSON (numbers stay exact). Unknowns, which
    /// JSON cannot express, become null: callers check `is_wholly_known` first
    /// where that matters.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as Json;
        match self {
            Value::Null | Value::Unknown(_) => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => number_to_json(n),
            Value::String(s) => Json::String(s.clone()),
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => {
                Json::Array(v.iter().map(Value::to_json).collect())
            }
            Value::Map(m) | Value::Object(m) => {
                Json::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
            Value::Dynamic(_, v) => v.to_json(),
        }
    }
}

/// Canonical decimal text of a number (no exponent for integers, no trailing zeros).
pub fn number_text(n: &Number) -> String {
    let n = n.normalized();
    if n.is_integer() {
        n.with_scale(0).to_string()
    } else {
        n.to_plain_string()
    }
}

fn number_to_json(n: &Number) -> serde_json::Value {
    let text = number_text(n);
    serde_json::Value::Number(
        serde_json::Number::from_str(&text).expect("decimal text is a valid JSON number"),
    )
}

fn multiset_eq(a: &[Value], b: &[Value]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut used = vec![false; b.len()];
    a.iter().all(|x| {
        match b
            .iter()
            .enumerate()
            .find(|(i, y)| !used[*i] && x.semantically_eq(y))
        {
            Some((i, _)) => {
                used[i] = true;
                true
            }
            None => false,
        }
    })
}

impl Value {
    /// Equality as Terraform sees it: sets ignore order, numbers compare by value.
    pub fn semantically_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Set(a), Value::Set(b)) => multiset_eq(a, b),
            (Value::List(a), Value::List(b)) | (Value::Tuple(a), Value::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.semantically_eq(y))
            }
            (Value::Map(a), Value::Map(b)) | (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.get(k).is_some_and(|w| v.semantically_eq(w)))
            }
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::Unknown(_), Value::Unknown(_)) => true,
            (Value::Dynamic(ta, a), Value::Dynamic(tb, b)) => ta == tb && a.semantically_eq(b),
            _ => self == other,
        }
    }
}
