//! Encoding of values on the wire: msgpack (what clients send and what we
//! always answer in) and JSON (stored state, `DynamicValue.json`). Decoding is
//! guided by the schema's type; malformed input is an error, never a panic.

use std::collections::BTreeMap;

use rmpv::Value as Mp;
use serde_json::Value as Json;

use super::diagnostics::AttributePath;
use super::types::Type;
use super::value::{MAX_NUMBER_DIGITS, Number, Refinements, Value, number_text};

/// msgpack extension code of a plain unknown value.
const EXT_UNKNOWN: i8 = 0;
/// msgpack extension code of an unknown value with refinements.
const EXT_REFINED_UNKNOWN: i8 = 12;
/// Deepest nesting we accept; far beyond any real schema, low enough to keep the stack safe.
const MAX_DEPTH: usize = 256;

/// What is wrong with a value, and where in it: the path lets a diagnostic
/// point at the attribute's line of configuration.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{message} (at {})", shown_path(path))]
pub struct CodecError {
    /// Where in the value the problem is.
    pub path: AttributePath,
    /// What is wrong there.
    pub message: String,
}

fn shown_path(path: &AttributePath) -> String {
    if path.0.is_empty() {
        "the value".into()
    } else {
        path.to_string()
    }
}

fn err(path: &AttributePath, message: impl Into<String>) -> CodecError {
    CodecError {
        path: path.clone(),
        message: message.into(),
    }
}

// ---------------------------------------------------------------- msgpack in

/// Decodes one msgpack value of type `ty` (a `DynamicValue.msgpack`);
/// trailing bytes are an error.
pub fn decode_msgpack(bytes: &[u8], ty: &Type) -> Result<Value, CodecError> {
    let mut reader = bytes;
    let mp = rmpv::decode::read_value_with_max_depth(&mut reader, MAX_DEPTH)
        .map_err(|e| err(&AttributePath::root(), format!("malformed msgpack: {e}")))?;
    if !reader.is_empty() {
        return Err(err(
            &AttributePath::root(),
            format!("{} trailing bytes after msgpack value", reader.len()),
        ));
    }
    from_msgpack(&mp, ty, &AttributePath::root())
}

fn from_msgpack(mp: &Mp, ty: &Type, path: &AttributePath) -> Result<Value, CodecError> {
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
                .map(|(i, item)| from_msgpack(item, e, &path.join_index(i)))
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
                .map(|(i, (item, t))| from_msgpack(item, t, &path.join_index(i)))
                .collect::<Result<_, _>>()
                .map(Value::Tuple)
        }
        Type::Map(e) => {
            let mut out = BTreeMap::new();
            for (k, v) in msgpack_map(mp, path)? {
                let p = path.join_key(k);
                out.insert(k.to_string(), from_msgpack(v, e, &p)?);
            }
            Ok(Value::Map(out))
        }
        Type::Object { attributes, .. } => {
            let mut given = BTreeMap::new();
            for (k, v) in msgpack_map(mp, path)? {
                let p = path.join_attr(k);
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

fn decode_unknown(code: i8, payload: &[u8], path: &AttributePath) -> Result<Value, CodecError> {
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

fn msgpack_number(mp: &Mp, path: &AttributePath) -> Result<Number, CodecError> {
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
    parsed.ok_or_else(|| invalid_number(path, &mp.to_string()))
}

fn invalid_number(path: &AttributePath, text: &str) -> CodecError {
    // Quote at most the start of a long text.
    let shown: String = text.chars().take(40).collect();
    let more = if shown.len() < text.len() { "..." } else { "" };
    err(
        path,
        format!(
            "invalid number {shown}{more}: not a decimal number of at most {MAX_NUMBER_DIGITS} digits"
        ),
    )
}

fn float_number(f: f64) -> Option<Number> {
    // Rust prints the shortest text that round-trips, so 1.5 stays 1.5.
    f.is_finite()
        .then(|| Value::parse_number(&f.to_string()))
        .flatten()
}

fn msgpack_array<'a>(mp: &'a Mp, path: &AttributePath) -> Result<&'a [Mp], CodecError> {
    match mp {
        Mp::Array(items) => Ok(items),
        other => Err(err(path, format!("expected an array, got {other}"))),
    }
}

fn msgpack_map<'a>(mp: &'a Mp, path: &AttributePath) -> Result<Vec<(&'a str, &'a Mp)>, CodecError> {
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

/// Encodes a value of type `ty` as msgpack, the form of every answer.
pub fn encode_msgpack(value: &Value, ty: &Type) -> Result<Vec<u8>, CodecError> {
    let mp = to_msgpack(value, ty, &AttributePath::root())?;
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &mp)
        .map_err(|e| err(&AttributePath::root(), e.to_string()))?;
    Ok(out)
}

fn to_msgpack(value: &Value, ty: &Type, path: &AttributePath) -> Result<Mp, CodecError> {
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
            .map(|(i, v)| to_msgpack(v, e, &path.join_index(i)))
            .collect::<Result<_, _>>()
            .map(Mp::Array),
        (Value::Tuple(items), Type::Tuple(types)) if items.len() == types.len() => items
            .iter()
            .zip(types)
            .enumerate()
            .map(|(i, (v, t))| to_msgpack(v, t, &path.join_index(i)))
            .collect::<Result<_, _>>()
            .map(Mp::Array),
        (Value::Map(entries), Type::Map(e)) => entries
            .iter()
            .map(|(k, v)| Ok((Mp::from(k.as_str()), to_msgpack(v, e, &path.join_key(k))?)))
            .collect::<Result<_, _>>()
            .map(Mp::Map),
        (Value::Object(entries), Type::Object { attributes, .. }) => {
            if let Some(extra) = entries.keys().find(|k| !attributes.contains_key(*k)) {
                return Err(err(&path.join_attr(extra), "not in the schema"));
            }
            attributes
                .iter()
                .map(|(name, t)| {
                    let v = entries.get(name).unwrap_or(&Value::Null);
                    Ok((
                        Mp::from(name.as_str()),
                        to_msgpack(v, t, &path.join_attr(name))?,
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

/// Every number as decimal text, which msgpack allows and which Terraform
/// parses exactly as it parses numbers from state files and configuration
/// (512-bit floats). Terraform 1.10 to 1.14 compare the refreshed state with
/// the stored one field by field, down to the precision of each number: a
/// number sent as a msgpack int decodes with 64 bits, so a refresh that
/// changed nothing still counted as a change there, and
/// `plan -refresh-only -detailed-exitcode` exited 2 while printing
/// "No changes".
fn number_to_msgpack(n: &Number) -> Mp {
    Mp::from(number_text(n))
}

// ------------------------------------------------------------------ JSON in

/// Decodes JSON text as a value of type `ty` (stored state, `DynamicValue.json`).
pub fn decode_json(bytes: &[u8], ty: &Type) -> Result<Value, CodecError> {
    let json: Json = serde_json::from_slice(bytes)
        .map_err(|e| err(&AttributePath::root(), format!("malformed JSON: {e}")))?;
    from_json(&json, ty)
}

/// Converts JSON (stored state, or a typed struct serialized by serde) to a
/// value of the given type. Object attributes absent from the JSON are null.
pub fn from_json(json: &Json, ty: &Type) -> Result<Value, CodecError> {
    json_value(json, ty, &AttributePath::root())
}

fn json_value(json: &Json, ty: &Type, path: &AttributePath) -> Result<Value, CodecError> {
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
                .ok_or_else(|| invalid_number(path, &text))
        }
        Type::List(e) | Type::Set(e) => {
            let items = json
                .as_array()
                .ok_or_else(|| err(path, format!("expected an array, got {json}")))?
                .iter()
                .enumerate()
                .map(|(i, item)| json_value(item, e, &path.join_index(i)))
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
                .map(|(i, (item, t))| json_value(item, t, &path.join_index(i)))
                .collect::<Result<_, _>>()
                .map(Value::Tuple)
        }
        Type::Map(e) => json
            .as_object()
            .ok_or_else(|| err(path, format!("expected an object, got {json}")))?
            .iter()
            .map(|(k, v)| Ok((k.clone(), json_value(v, e, &path.join_key(k))?)))
            .collect::<Result<_, _>>()
            .map(Value::Map),
        Type::Object { attributes, .. } => {
            let object = json
                .as_object()
                .ok_or_else(|| err(path, format!("expected an object, got {json}")))?;
            let mut given = BTreeMap::new();
            for (k, v) in object {
                let p = path.join_attr(k);
                let t = attributes
                    .get(k)
                    .ok_or_else(|| err(&p, "unsupported attribute"))?;
                given.insert(k.clone(), json_value(v, t, &p)?);
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
            let value = json_value(v, &concrete, path)?;
            Ok(Value::Dynamic(Box::new(concrete), Box::new(value)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(text: &str) -> Value {
        Value::Number(Value::parse_number(text).unwrap())
    }

    fn round_trip(value: &Value, ty: &Type) -> Value {
        let bytes = encode_msgpack(value, ty).unwrap();
        decode_msgpack(&bytes, ty).unwrap()
    }

    fn everything_type() -> Type {
        Type::object([
            ("b", Type::Bool),
            ("n", Type::Number),
            ("s", Type::String),
            ("l", Type::list(Type::String)),
            ("set", Type::set(Type::Number)),
            ("m", Type::map(Type::Bool)),
            ("t", Type::Tuple(vec![Type::String, Type::Number])),
            ("o", Type::object([("inner", Type::String)])),
            ("d", Type::Dynamic),
        ])
    }

    fn everything_value() -> Value {
        Value::Object(
            [
                ("b", Value::Bool(true)),
                ("n", num("1.5")),
                ("s", Value::string("héllo")),
                ("l", Value::List(vec![Value::string("a"), Value::Null])),
                ("set", Value::Set(vec![Value::int(1), Value::int(2)])),
                (
                    "m",
                    Value::Map([("k".to_string(), Value::Bool(false))].into()),
                ),
                ("t", Value::Tuple(vec![Value::string("x"), Value::int(-7)])),
                (
                    "o",
                    Value::Object([("inner".to_string(), Value::UNKNOWN)].into()),
                ),
                (
                    "d",
                    Value::Dynamic(
                        Box::new(Type::list(Type::Number)),
                        Box::new(Value::List(vec![num("1e30")])),
                    ),
                ),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        )
    }

    #[test]
    fn every_type_round_trips_through_msgpack() {
        let (ty, value) = (everything_type(), everything_value());
        assert_eq!(round_trip(&value, &ty), value);
    }

    #[test]
    fn null_and_unknown_at_any_level() {
        let ty = everything_type();
        assert_eq!(round_trip(&Value::Null, &ty), Value::Null);
        assert_eq!(round_trip(&Value::UNKNOWN, &ty), Value::UNKNOWN);
        assert_eq!(round_trip(&Value::UNKNOWN, &Type::Dynamic), Value::UNKNOWN);
        // Unknown is msgpack extension 0.
        assert_eq!(
            encode_msgpack(&Value::UNKNOWN, &Type::String).unwrap(),
            vec![0xd4, 0, 0]
        );
    }

    #[test]
    fn refined_unknowns_are_unknown_with_their_refinements() {
        // ext 12 with payload {1: false (not null), 2: "ab"}
        let mut payload = Vec::new();
        rmpv::encode::write_value(
            &mut payload,
            &Mp::Map(vec![
                (Mp::from(1), Mp::Boolean(false)),
                (Mp::from(2), Mp::from("ab")),
            ]),
        )
        .unwrap();
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &Mp::Ext(12, payload)).unwrap();
        let v = decode_msgpack(&bytes, &Type::String).unwrap();
        assert_eq!(
            v,
            Value::Unknown(Some(Refinements {
                not_null: true,
                string_prefix: Some("ab".into())
            }))
        );
        // We always answer with a plain unknown.
        assert_eq!(encode_msgpack(&v, &Type::String).unwrap(), vec![0xd4, 0, 0]);
        // A refinement that is not a map is malformed.
        let mut bad = Vec::new();
        rmpv::encode::write_value(&mut bad, &Mp::Ext(12, vec![0xc3])).unwrap();
        assert!(decode_msgpack(&bad, &Type::String).is_err());
    }

    #[test]
    fn numbers_keep_arbitrary_precision() {
        for text in [
            "0",
            "-1",
            "1.5",
            "0.1",
            "1e30",
            "123456789012345678901234567890.000000001",
            "18446744073709551617",
            "-9223372036854775808",
            "3.141592653589793238462643383279",
        ] {
            let v = num(text);
            assert_eq!(round_trip(&v, &Type::Number), v, "{text}");
            let json = format!("{{\"n\":{text}}}");
            let decoded =
                decode_json(json.as_bytes(), &Type::object([("n", Type::Number)])).unwrap();
            assert_eq!(decoded.attr("n"), &v, "{text} from JSON");
        }
        // Numbers go out as the decimal text Terraform writes in state
        // files; all three msgpack forms come in.
        for (value, text) in [
            (Value::int(42), "42"),
            (num("1.5"), "1.5"),
            (num("0.1"), "0.1"),
            (num("-7"), "-7"),
            (num("1e30"), "1000000000000000000000000000000"),
        ] {
            let mut expected = Vec::new();
            rmpv::encode::write_value(&mut expected, &Mp::from(text)).unwrap();
            assert_eq!(
                encode_msgpack(&value, &Type::Number).unwrap(),
                expected,
                "{text}"
            );
        }
        for wire in [Mp::from(42), Mp::F64(42.0), Mp::from("42")] {
            let mut bytes = Vec::new();
            rmpv::encode::write_value(&mut bytes, &wire).unwrap();
            assert_eq!(
                decode_msgpack(&bytes, &Type::Number).unwrap(),
                Value::int(42),
                "{wire}"
            );
        }
        assert_eq!(
            num("1e30").to_json().to_string(),
            "1000000000000000000000000000000"
        );
    }

    #[test]
    fn numbers_beyond_the_digit_bound_are_errors_not_hangs() {
        // Found by fuzzing: 1e99999999 decoded, then converting it to an
        // integer (validators, the encoder) computed 10^99999999.
        let ty = Type::object([("n", Type::Number)]);
        let started = std::time::Instant::now();
        for text in [
            "1e99999999",
            "-1e-99999999",
            "1e-9223372036854775808",
            "1e9223372036854775807",
        ] {
            let json = format!("{{\"n\":{text}}}");
            let e = decode_json(json.as_bytes(), &ty).unwrap_err();
            assert!(e.message.contains("at most 4096 digits"), "{text}: {e}");
            let mut msgpack = Vec::new();
            rmpv::encode::write_value(&mut msgpack, &Mp::from(text)).unwrap();
            assert!(decode_msgpack(&msgpack, &Type::Number).is_err(), "{text}");
        }
        let long = "9".repeat(5000);
        assert!(
            decode_json(format!("{{\"n\":{long}}}").as_bytes(), &ty)
                .unwrap_err()
                .message
                .contains("9999...")
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // The largest accepted numbers still round-trip, as text.
        for text in [
            format!("1e{}", MAX_NUMBER_DIGITS - 1),
            format!("1e-{}", MAX_NUMBER_DIGITS - 1),
        ] {
            let v = num(&text);
            assert_eq!(round_trip(&v, &Type::Number), v, "{text}");
        }
    }

    #[test]
    fn sets_compare_without_order() {
        let a = Value::Set(vec![Value::int(1), Value::int(2)]);
        let b = Value::Set(vec![Value::int(2), Value::int(1)]);
        assert!(a.semantically_eq(&b));
        assert!(!a.semantically_eq(&Value::Set(vec![Value::int(1), Value::int(1)])));
    }

    #[test]
    fn json_decoding_handles_dynamic_missing_attributes_and_nulls() {
        let ty = Type::object([
            ("a", Type::String),
            ("b", Type::Dynamic),
            ("c", Type::list(Type::Number)),
        ]);
        let v = decode_json(br#"{"a":"x","b":{"type":"string","value":"y"}}"#, &ty).unwrap();
        assert_eq!(v.attr("a"), &Value::string("x"));
        assert_eq!(
            v.attr("b"),
            &Value::Dynamic(Box::new(Type::String), Box::new(Value::string("y")))
        );
        assert_eq!(v.attr("c"), &Value::Null);
        assert!(decode_json(br#"{"zzz":1}"#, &ty).unwrap_err().path == AttributePath::attr("zzz"));
    }

    #[test]
    fn malformed_input_is_an_error_with_a_path() {
        let ty = everything_type();
        let good = encode_msgpack(&everything_value(), &ty).unwrap();
        // Every truncation fails cleanly.
        for cut in 0..good.len() {
            assert!(
                decode_msgpack(&good[..cut], &ty).is_err(),
                "truncated at {cut}"
            );
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(decode_msgpack(&trailing, &ty).is_err());
        // Wrong types name the attribute.
        let mut wrong = Vec::new();
        rmpv::encode::write_value(
            &mut wrong,
            &Mp::Map(vec![(Mp::from("n"), Mp::from("not a number"))]),
        )
        .unwrap();
        let e = decode_msgpack(&wrong, &ty).unwrap_err();
        assert_eq!(e.path, AttributePath::attr("n"));
        assert!(e.to_string().ends_with("(at n)"), "{e}");
        // Invalid UTF-8 in a string.
        assert!(decode_msgpack(&[0xa2, 0xff, 0xfe], &Type::String).is_err());
        // Absurd nesting does not overflow the stack.
        let deep: Vec<u8> = std::iter::repeat_n(0x91, 100_000).chain([0xc0]).collect();
        assert!(decode_msgpack(&deep, &Type::Dynamic).is_err());
        assert!(decode_json(b"{", &ty).is_err());
        assert!(decode_json(br#"{"n": "abc"}"#, &ty).is_err());
    }

    #[test]
    fn random_bytes_never_panic() {
        // A fixed xorshift sequence: the same 20,000 inputs every run.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let ty = everything_type();
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 24) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|i| (state >> ((i % 8) * 8)) as u8 ^ i as u8)
                .collect();
            let _ = decode_msgpack(&bytes, &ty);
            let _ = decode_msgpack(&bytes, &Type::Dynamic);
            let _ = decode_json(&bytes, &ty);
        }
    }

    #[test]
    fn type_json_round_trips() {
        let ty = everything_type();
        assert_eq!(Type::from_json(&ty.to_json()).unwrap(), ty);
        let with_optional: Json =
            serde_json::from_str(r#"["object",{"a":"string"},["a"]]"#).unwrap();
        assert!(
            matches!(Type::from_json(&with_optional).unwrap(), Type::Object { optional, .. } if optional.contains("a"))
        );
        assert!(Type::from_json(&serde_json::json!("int")).is_err());
    }
}
