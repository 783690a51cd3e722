//! Encoding of values on the wire: msgpack (what clients send and what we
//! always answer in) and JSON (stored state, `DynamicValue.json`). Decoding is
//! guided by the schema's type; malformed input is an error, never a panic.

use std::collections::BTreeMap;

use rmpv::Value as Mp;
use serde_json::Value as Json;

use super::types::Type;
use super::value::{Number, Refinements, Value, number_text};

/// msgpack extension code of a plain unknown value.
const EXT_UNKNOWN: i8 = 0;
/// msgpack extension code of an unknown value with refinements.
const EXT_REFINED_UNKNOWN: i8 = 12;
/// Deepest nesting we accept; far beyond any real schema, low enough to keep the stack safe.
const MAX_DEPTH: usize = 256;

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{message} (at {path})")]
pub struct CodecError {
    pub path: String,
    pub message: String,
}

fn err(path: &str, message: impl Into<String>) -> CodecError {
    CodecError {
        path: if path.is_empty() {
            "the value".into()
        } else {
            path.into()
        },
        message: message.into(),
    }
}

// ---------------------------------------------------------------- msgpack in

pub fn decode_msgpack(bytes: &[u8], ty: &Type) -> Result<Value, CodecError> {
    let mut reader = bytes;
    let mp = rmpv::decode::read_value_with_max_depth(&mut reader, MAX_DEPTH)
        .map_err(|e| err("", format!("malformed msgpack: {e}")))?;
    if !reader.is_empty() {
        return Err(err(
            "",
            format!("{} trailing bytes after msgpack value", reader.len()),
        ));
    }
    from_msgpack(&mp, ty, "")
}

fn child(path: &str, step: impl std::fmt::Display) -> String {
    format!("{path}{step}")
}

fn from_msgpack(mp: &Mp, ty: &Type, path: &str) -> Result<Value, CodecError> {
    match mp {
        Mp::Nil => return Ok(Value::Null),
        Mp::Ext(code, payload) => return decode_unknown(*code, payload, path),
        _ => {}
    }
    match ty {
        Type::Bool => match mp {
            Mp::Boolean(b) => Ok(Value::Bool(*b)),
            other => Err(err(path, format!("expected a bool, got {other}"))),
        },
        Type::String => match mp {
            Mp::String(s) => s
                .as_str()
                .map(Value::string)
                .ok_or_else(|| err(path, "string is not valid UTF-8")),
            other => Err(err(path, format!("expected a string, got {other}"))),
        },
        Type::Number => msgpack_number(mp, path).map(Value::Number),
        Type::List(e) | Type::Set(e) => {
            let items = msgpack_array(mp, path)?
                .iter()
                .enumerate()
                .map(|(i, item)| from_msgpack(item, e, &child(path, format_args!("[{i}]"))))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(if matches!(ty, Type::List(_)) {
                Value::List(items)
            } else {
                Value::Set(items)
            })
        }
        Type::Tuple(types) => {
            let items = msgpack_array(mp, path)?;
            if items.len() != types.len() {
                return Err(err(
                    path,
                    format!("tuple needs {} elements, got {}", types.len(), items.len()),
                ));
            }
            items
                .iter()
                .zip(types)
                .enumerate()
                .map(|(i, (item, t))| from_msgpack(item, t, &child(path, format_args!("[{i}]"))))
                .collect::<Result<_, _>>()
                .map(Value::Tuple)
        }
        Type::Map(e) => {
            let mut out = BTreeMap::new();
            for (k, v) in msgpack_map(mp, path)? {
                let p = child(path, format_args!("[{k:?}]"));
                out.insert(k.to_string(), from_msgpack(v, e, &p)?);
            }
            Ok(Value::Map(out))
        }
        Type::Object { attributes, .. } => {
            let mut given = BTreeMap::new();
            for (k, v) in msgpack_map(mp, path)? {
                let p = child(path, format_args!(".{k}"));
                let t = attributes
                    .get(k)
                    .ok_or_else(|| err(&p, "unsupported attribute"))?;
                given.insert(k.to_string(), from_msgpack(v, t, &p)?);
            }
            Ok(complete_object(attributes, given))
        }
        Type::Dynamic => {
            let pair = msgpack_array(mp, path)?;
            let [type_json, inner] = pair else {
                return Err(err(path, "dynamic value must be a [type, value] pair"));
            };
            let type_bytes = match type_json {
                Mp::Binary(b) => b.as_slice(),
                Mp::String(s) => s.as_bytes(),
                other => {
                    return Err(err(
                        path,
                        format!("dynamic type must be JSON bytes, got {other}"),
                    ));
                }
            };
            let json: Json = serde_json::from_slice(type_bytes)
                .map_err(|e| err(path, format!("dynamic type is not JSON: {e}")))?;
            let concrete = Type::from_json(&json).map_err(|e| err(path, e.to_string()))?;
            let value = from_msgpack(inner, &concrete, path)?;
            Ok(Value::Dynamic(Box::new(concrete), Box::new(value)))
        }
    }
}

/// Attributes the encoder left out are null, as in Terraform.
fn complete_object(
    attributes: &BTreeMap<String, Type>,
    mut given: BTreeMap<String, Value>,
) -> Value {
    for name in attributes.keys() {
        given.entry(name.clone()).or_insert(Value::Null);
    }
    Value::Object(given)
}

fn decode_unknown(code: i8, payload: &[u8], path: &str) -> Result<Value, CodecError> {
    if code != EXT_REFINED_UNKNOWN {
        // Code 0 is a plain unknown; any other extension is treated the same,
        // as Terraform's own decoder does.
        return Ok(Value::UNKNOWN);
    }
    let mut reader = payload;
    let refinements = rmpv::decode::read_value_with_max_depth(&mut reader, 8)
        .map_err(|e| err(path, format!("malformed refinement: {e}")))?;
    let Mp::Map(entries) = refinements else {
        return Err(err(path, "refinement payload must be a map"));
    };
    let mut out = Refinements::default();
    for (k, v) in &entries {
        match (k.as_i64(), v) {
            (Some(1), Mp::Boolean(null)) => out.not_null = !null,
            (Some(2), Mp::String(prefix)) => {
                out.string_prefix = prefix.as_str().map(str::to_string)
            }
            // Number and length bounds are accepted but not used.
            (Some(_), _) => {}
            (None, _) => return Err(err(path, "refinement keys must be integers")),
        }
    }
    Ok(Value::Unknown(Some(out)))
}

fn msgpack_number(mp: &Mp, path: &str) -> Result<Number, CodecError> {
    let parsed = match mp {
        Mp::Integer(i) => match (i.as_i64(), i.as_u64()) {
            (Some(v), _) => Some(Number::from(v)),
            (None, Some(v)) => Some(Number::from(v)),
            _ => None,
        },
        Mp::F32(f) => float_number(f64::from(*f)),
        Mp::F64(f) => float_number(*f),
        Mp::String(s) => s.as_str().and_then(Value::parse_number),
        other => return Err(err(path, format!("expected a number, got {other}"))),
    };
    parsed.ok_or_else(|| err(path, format!("invalid number {mp}")))
}

fn float_number(f: f64) -> Option<Number> {
    // Rust prints the shortest text that round-trips, so 1.5 stays 1.5.
    f.is_finite()
        .then(|| Value::parse_number(&f.to_string()))
        .flatten()
}

fn msgpack_array<'a>(mp: &'a Mp, path: &str) -> Result<&'a [Mp], CodecError> {
    match mp {
        Mp::Array(items) => Ok(items),
        other => Err(err(path, format!("expected an array, got {other}"))),
    }
}

fn msgpack_map<'a>(mp: &'a Mp, path: &str) -> Result<Vec<(&'a str, &'a Mp)>, CodecError> {
    match mp {
        Mp::Map(entries) => entries
            .iter()
            .map(|(k, v)| match k {
                Mp::String(s) => s
                    .as_str()
                    .map(|s| (s, v))
                    .ok_or_else(|| err(path, "map key is not valid UTF-8")),
                other => Err(err(path, format!("map keys must be strings, got {other}"))),
            })
            .collect(),
        other => Err(err(path, format!("expected a map, got {other}"))),
    }
}

// --------------------------------------------------------------- msgpack out

pub fn encode_msgpack(value: &Value, ty: &Type) -> Result<Vec<u8>, CodecError> {
    let mp = to_msgpack(value, ty, "")?;
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &mp).map_err(|e| err("", e.to_string()))?;
    Ok(out)
}

fn to_msgpack(value: &Value, ty: &Type, path: &str) -> Result<Mp, CodecError> {
    let mismatch = || {
        err(
            path,
            format!("value {value:?} does not conform to type {ty}"),
        )
    };
    match (value, ty) {
        (Value::Null, _) => Ok(Mp::Nil),
        (Value::Unknown(_), _) => Ok(Mp::Ext(EXT_UNKNOWN, vec![0])),
        (Value::Bool(b), Type::Bool) => Ok(Mp::Boolean(*b)),
        (Value::String(s), Type::String) => Ok(Mp::from(s.as_str())),
        (Value::Number(n), Type::Number) => Ok(number_to_msgpack(n)),
        (Value::List(items), Type::List(e)) | (Value::Set(items), Type::Set(e)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| to_msgpack(v, e, &child(path, format_args!("[{i}]"))))
            .collect::<Result<_, _>>()
            .map(Mp::Array),
        (Value::Tuple(items), Type::Tuple(types)) if items.len() == types.len() => items
            .iter()
            .zip(types)
            .enumerate()
            .map(|(i, (v, t))| to_msgpack(v, t, &child(path, format_args!("[{i}]"))))
            .collect::<Result<_, _>>()
            .map(Mp::Array),
        (Value::Map(entries), Type::Map(e)) => entries
            .iter()
            .map(|(k, v)| {
                Ok((
                    Mp::from(k.as_str()),
                    to_msgpack(v, e, &child(path, format_args!("[{k:?}]")))?,
                ))
            })
            .collect::<Result<_, _>>()
            .map(Mp::Map),
        (Value::Object(entries), Type::Object { attributes, .. }) => {
            if let Some(extra) = entries.keys().find(|k| !attributes.contains_key(*k)) {
                return Err(err(
                    &child(path, format_args!(".{extra}")),
                    "not in the schema",
                ));
            }
            attributes
                .iter()
                .map(|(name, t)| {
                    let v = entries.get(name).unwrap_or(&Value::Null);
                    Ok((
                        Mp::from(name.as_str()),
                        to_msgpack(v, t, &child(path, format_args!(".{name}")))?,
                    ))
                })
                .collect::<Result<_, _>>()
                .map(Mp::Map)
        }
        (Value::Dynamic(concrete, inner), Type::Dynamic) => Ok(Mp::Array(vec![
            Mp::Binary(concrete.to_json_bytes()),
            to_msgpack(inner, concrete, path)?,
        ])),
        _ => Err(mismatch()),
    }
}

/// Integers as msgpack ints, exact binary fractions as float64, anything
/// else as decimal text: the same choice Terraform's encoder makes.
fn number_to_msgpack(n: &Number) -> Mp {
    use bigdecimal::ToPrimitive;
    if n.is_integer()
        && let Some(i) = n.to_i64()
    {
        return Mp::from(i);
    }
    let text = number_text(n);
    if let Ok(f) = text.parse::<f64>()
        && f.is_finite()
        && float_number(f).as_ref() == Some(&n.normalized())
    {
        return Mp::F64(f);
    }
    Mp::from(text)
}

// ------------------------------------------------------------------ JSON in

pub fn decode_json(bytes: &[u8], ty: &Type) -> Result<Value, CodecError> {
    let json: Json =
        serde_json::from_slice(bytes).map_err(|e| err("", format!("malformed JSON: {e}")))?;
    from_json(&json, ty, "")
}

/// Converts JSON (stored state, or a typed struct serialized by serde) to a
/// value of the given type. Object attributes absent from the JSON are null.
pub fn from_json(json: &Json, ty: &Type, path: &str) -> Result<Value, CodecError> {
    if json.is_null() {
        return Ok(Value::Null);
    }
    match ty {
        Type::Bool => json
            .as_bool()
            .map(Value::Bool)
            .ok_or_else(|| err(path, format!("expected a bool, got {json}"))),
        Type::String => match json {
            Json::String(s) => Ok(Value::string(s.clone())),
            // Terraform converts primitives to strings the same way.
            Json::Number(n) => Ok(Value::string(n.to_string())),
            Json::Bool(b) => Ok(Value::string(b.to_string())),
            other => Err(err(path, format!("expected a string, got {other}"))),
        },
        Type::Number => {
            let text = match json {
                Json::Number(n) => n.to_string(),
                Json::String(s) => s.clone(),
                other => return Err(err(path, format!("expected a number, got {other}"))),
            };
            Value::parse_number(&text)
                .map(Value::Number)
                .ok_or_else(|| err(path, format!("invalid number {text:?}")))
        }
        Type::List(e) | Type::Set(e) => {
            let items = json
                .as_array()
                .ok_or_else(|| err(path, format!("expected an array, got {json}")))?
                .iter()
                .enumerate()
                .map(|(i, item)| from_json(item, e, &child(path, format_args!("[{i}]"))))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(if matches!(ty, Type::List(_)) {
                Value::List(items)
            } else {
                Value::Set(items)
            })
        }
        Type::Tuple(types) => {
            let items = json
                .as_array()
                .filter(|items| items.len() == types.len())
                .ok_or_else(|| {
                    err(
                        path,
                        format!("expected a tuple of {} elements", types.len()),
                    )
                })?;
            items
                .iter()
                .zip(types)
                .enumerate()
                .map(|(i, (item, t))| from_json(item, t, &child(path, format_args!("[{i}]"))))
                .collect::<Result<_, _>>()
                .map(Value::Tuple)
        }
        Type::Map(e) => json
            .as_object()
            .ok_or_else(|| err(path, format!("expected an object, got {json}")))?
            .iter()
            .map(|(k, v)| {
                Ok((
                    k.clone(),
                    from_json(v, e, &child(path, format_args!("[{k:?}]")))?,
                ))
            })
            .collect::<Result<_, _>>()
            .map(Value::Map),
        Type::Object { attributes, .. } => {
            let object = json
                .as_object()
                .ok_or_else(|| err(path, format!("expected an object, got {json}")))?;
            let mut given = BTreeMap::new();
            for (k, v) in object {
                let p = child(path, format_args!(".{k}"));
                let t = attributes
                    .get(k)
                    .ok_or_else(|| err(&p, "unsupported attribute"))?;
                given.insert(k.clone(), from_json(v, t, &p)?);
            }
            Ok(complete_object(attributes, given))
        }
        Type::Dynamic => {
            let (Some(t), Some(v)) = (json.get("type"), json.get("value")) else {
                return Err(err(
                    path,
                    "dynamic value must be {\"type\": ..., \"value\": ...}",
                ));
            };
            let concrete = Type::from_json(t).map_err(|e| err(path, e.to_string()))?;
            let value = from_json(v, &concrete, path)?;
            Ok(Value::Dynamic(Box::new(concrete), Box::new(value)))
        }
    }
}
