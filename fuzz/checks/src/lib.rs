//! What the fuzz targets share: the types values are decoded against (the
//! provider's real schemas, and schemas and types made up from fuzz input),
//! values that conform to a type, and the round-trip checks every decoded
//! value must pass.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Result, Unstructured};
use gpufleet::framework::FrameworkProvider;
use gpufleet::protocol::codec::{decode_json, decode_msgpack, encode_msgpack, from_json};
use gpufleet::protocol::handshake::{
    Environment, HandshakeError, MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE,
};
use gpufleet::protocol::proto::tfplugin6::DynamicValue;
use gpufleet::protocol::provider::Provider;
use gpufleet::protocol::schema::{Attribute, AttributeType, Flags, Nesting, Schema};
use gpufleet::protocol::service::decode;
use gpufleet::protocol::{Type, Value};
use prost::Message;

/// Nesting depth of generated types; real schemas are far shallower.
const MAX_TYPE_DEPTH: usize = 5;
/// Dynamic values nested in dynamic values, each with a type of its own:
/// deep enough to exercise nesting, within the decoder's depth limit.
const MAX_DYNAMIC_NESTING: usize = 3;
/// Elements per generated list, set, map or tuple.
const MAX_ELEMENTS: usize = 4;

/// The value types of every schema the provider declares: provider block,
/// resources and data sources, as Terraform encodes their values.
pub fn schema_types() -> &'static [Type] {
    static TYPES: OnceLock<Vec<Type>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let provider = FrameworkProvider::new(gpufleet::provider::Gpufleet);
        let schemas = provider.schemas();
        std::iter::once(&schemas.provider)
            .chain(schemas.resources.iter().map(|(_, s)| s))
            .chain(schemas.data_sources.iter().map(|(_, s)| s))
            .map(Schema::value_type)
            .collect()
    })
}

/// A type to decode against, chosen by `selector`: `dynamic` (the input then
/// carries a type of its own) or one of the provider's schemas.
pub fn chosen_type(selector: u8) -> Type {
    let types = schema_types();
    match usize::from(selector) % (types.len() + 1) {
        0 => Type::Dynamic,
        i => types[i - 1].clone(),
    }
}

fn name(u: &mut Unstructured) -> Result<String> {
    // A small alphabet, so that attribute names collide and repeat.
    const NAMES: &[&str] = &["a", "b", "name", "value", "taints", "x.y", ""];
    Ok(NAMES[u.choose_index(NAMES.len())?].to_string())
}

/// An arbitrary type, `dynamic` included.
pub fn arbitrary_type(u: &mut Unstructured, depth: usize) -> Result<Type> {
    let leaf = depth >= MAX_TYPE_DEPTH;
    Ok(match u.int_in_range(0..=if leaf { 3 } else { 8 })? {
        0 => Type::Bool,
        1 => Type::Number,
        2 => Type::String,
        3 => Type::Dynamic,
        4 => Type::list(arbitrary_type(u, depth + 1)?),
        5 => Type::set(arbitrary_type(u, depth + 1)?),
        6 => Type::map(arbitrary_type(u, depth + 1)?),
        7 => Type::Tuple(
            (0..u.int_in_range(0..=MAX_ELEMENTS)?)
                .map(|_| arbitrary_type(u, depth + 1))
                .collect::<Result<_>>()?,
        ),
        _ => {
            let mut attributes = BTreeMap::new();
            let mut optional = BTreeSet::new();
            for _ in 0..u.int_in_range(0..=MAX_ELEMENTS)? {
                let attr = name(u)?;
                if u.arbitrary()? {
                    optional.insert(attr.clone());
                }
                attributes.insert(attr, arbitrary_type(u, depth + 1)?);
            }
            optional.retain(|a| attributes.contains_key(a));
            Type::Object {
                attributes,
                optional,
            }
        }
    })
}

/// An arbitrary schema, nested attributes of every nesting mode included,
/// so that decoding runs against types derived the way real schemas derive them.
pub fn arbitrary_schema(u: &mut Unstructured) -> Result<Schema> {
    Ok(Schema {
        version: 0,
        description: String::new(),
        attributes: arbitrary_attributes(u, 0)?,
    })
}

fn arbitrary_attributes(u: &mut Unstructured, depth: usize) -> Result<Vec<Attribute>> {
    (0..u.int_in_range(0..=MAX_ELEMENTS)?)
        .map(|_| {
            let nested = depth < MAX_TYPE_DEPTH && u.ratio(1, 3)?;
            let ty = if nested {
                let nesting =
                    *u.choose(&[Nesting::Single, Nesting::List, Nesting::Set, Nesting::Map])?;
                AttributeType::Nested(nesting, arbitrary_attributes(u, depth + 1)?)
            } else {
                AttributeType::Primitive(arbitrary_type(u, depth + 1)?)
            };
            Ok(Attribute {
                name: name(u)?,
                ty,
                flags: Flags::default(),
                description: String::new(),
                deprecated: false,
            })
        })
        .collect()
}

fn arbitrary_number(u: &mut Unstructured) -> Result<Value> {
    let text = match u.int_in_range(0..=2)? {
        0 => u.arbitrary::<i64>()?.to_string(),
        1 => {
            let f = u.arbitrary::<f64>()?;
            if !f.is_finite() {
                return Ok(Value::int(0));
            }
            f.to_string()
        }
        // Decimals beyond float64: many digits and a wide exponent.
        _ => format!(
            "{}.{}e{}",
            u.arbitrary::<u64>()?,
            u.arbitrary::<u64>()?,
            u.int_in_range(-400..=400)?
        ),
    };
    Ok(Value::Number(
        Value::parse_number(&text).expect("generated number text parses"),
    ))
}

/// An arbitrary value that conforms to `ty`: null and unknown anywhere.
pub fn arbitrary_value(u: &mut Unstructured, ty: &Type) -> Result<Value> {
    value_nested(u, ty, 0)
}

/// `dynamic_depth`: how many dynamic values enclose this one.
fn value_nested(u: &mut Unstructured, ty: &Type, dynamic_depth: usize) -> Result<Value> {
    match u.int_in_range(0u8..=15)? {
        0 => return Ok(Value::Null),
        1 => return Ok(Value::UNKNOWN),
        _ => {}
    }
    let elements = |u: &mut Unstructured, ty: &Type| -> Result<Vec<Value>> {
        (0..u.int_in_range(0..=MAX_ELEMENTS)?)
            .map(|_| value_nested(u, ty, dynamic_depth))
            .collect()
    };
    Ok(match ty {
        Type::Bool => Value::Bool(u.arbitrary()?),
        Type::Number => arbitrary_number(u)?,
        Type::String => Value::String(u.arbitrary()?),
        Type::List(e) => Value::List(elements(u, e)?),
        Type::Set(e) => Value::Set(elements(u, e)?),
        Type::Map(e) => Value::Map(
            (0..u.int_in_range(0..=MAX_ELEMENTS)?)
                .map(|_| Ok((u.arbitrary()?, value_nested(u, e, dynamic_depth)?)))
                .collect::<Result<_>>()?,
        ),
        Type::Tuple(types) => Value::Tuple(
            types
                .iter()
                .map(|t| value_nested(u, t, dynamic_depth))
                .collect::<Result<_>>()?,
        ),
        Type::Object { attributes, .. } => Value::Object(
            attributes
                .iter()
                .map(|(k, t)| Ok((k.clone(), value_nested(u, t, dynamic_depth)?)))
                .collect::<Result<_>>()?,
        ),
        Type::Dynamic => {
            // A known value has a concrete type, never `dynamic` itself (as
            // in Terraform's type system); deeper down, only primitives.
            let concrete = match arbitrary_type(u, MAX_TYPE_DEPTH - 1)? {
                _ if dynamic_depth >= MAX_DYNAMIC_NESTING => Type::String,
                Type::Dynamic => Type::Number,
                concrete => concrete,
            };
            let inner = value_nested(u, &concrete, dynamic_depth + 1)?;
            Value::Dynamic(Box::new(concrete), Box::new(inner))
        }
    })
}

/// What a value looks like after a trip through our encoder: we always
/// answer unknowns without refinements.
pub fn without_refinements(value: &Value) -> Value {
    let each = |items: &[Value]| items.iter().map(without_refinements).collect();
    let entries = |m: &BTreeMap<String, Value>| {
        m.iter()
            .map(|(k, v)| (k.clone(), without_refinements(v)))
            .collect()
    };
    match value {
        Value::Unknown(_) => Value::UNKNOWN,
        Value::List(v) => Value::List(each(v)),
        Value::Set(v) => Value::Set(each(v)),
        Value::Tuple(v) => Value::Tuple(each(v)),
        Value::Map(m) => Value::Map(entries(m)),
        Value::Object(m) => Value::Object(entries(m)),
        Value::Dynamic(t, v) => Value::Dynamic(t.clone(), Box::new(without_refinements(v))),
        other => other.clone(),
    }
}

/// Every value we decoded must be one we can send back (plans echo
/// configuration), and must read back as itself.
pub fn assert_msgpack_round_trip(value: &Value, ty: &Type) {
    let bytes = encode_msgpack(value, ty)
        .unwrap_or_else(|e| panic!("decoded {value:?} but cannot encode it as {ty}: {e}"));
    let again = decode_msgpack(&bytes, ty)
        .unwrap_or_else(|e| panic!("cannot decode our own encoding of {value:?} as {ty}: {e}"));
    assert_eq!(
        again,
        without_refinements(value),
        "msgpack round trip as {ty}"
    );
}

// ------------------------------------------------------------- the targets
// Each fuzz target is one of these, so `tests/offline/fuzz_corpus.rs` in the
// provider replays the committed corpus through exactly the same checks.

/// Raw bytes as msgpack, the encoding Terraform sends every value in, decoded
/// against `dynamic` (the bytes then carry their own type) or one of the
/// provider's schemas. Decoding may fail, never panic; what decodes must
/// encode back to itself.
pub fn msgpack_decode(input: &[u8]) {
    let Some((&selector, bytes)) = input.split_first() else {
        return;
    };
    let ty = chosen_type(selector);
    if let Ok(value) = decode_msgpack(bytes, &ty) {
        assert_msgpack_round_trip(&value, &ty);
    }
}

/// Raw bytes as JSON, the encoding of stored state and of `DynamicValue.json`,
/// decoded against `dynamic` or one of the provider's schemas. Decoding may
/// fail, never panic; a value read from state must be one we can send to
/// Terraform in msgpack, and it must convert back to JSON.
pub fn json_decode(input: &[u8]) {
    let Some((&selector, bytes)) = input.split_first() else {
        return;
    };
    let ty = chosen_type(selector);
    if let Ok(value) = decode_json(bytes, &ty) {
        assert_msgpack_round_trip(&value, &ty);
        let _ = value.to_json();
    }
}

/// A `DynamicValue` message as it arrives over gRPC (protobuf bytes holding
/// msgpack or JSON), decoded the way every request's values are, against a
/// schema: the provider's own, or one made up from the input with nested
/// attributes of every nesting mode, so types derive the way real schemas
/// derive them.
pub fn dynamic_value(input: &[u8]) {
    let mut u = Unstructured::new(input);
    let ty = match u8::arbitrary(&mut u) {
        Ok(i) if usize::from(i) < schema_types().len() => schema_types()[usize::from(i)].clone(),
        _ => match arbitrary_schema(&mut u) {
            Ok(schema) => schema.value_type(),
            Err(_) => return,
        },
    };
    let Ok(message) = DynamicValue::decode(u.take_rest()) else {
        return;
    };
    if let Ok(value) = decode(Some(&message), &ty, "configuration") {
        assert_msgpack_round_trip(&value, &ty);
    }
}

fn has_dynamic(ty: &Type) -> bool {
    match ty {
        Type::Dynamic => true,
        Type::List(e) | Type::Set(e) | Type::Map(e) => has_dynamic(e),
        Type::Tuple(types) => types.iter().any(has_dynamic),
        Type::Object { attributes, .. } => attributes.values().any(has_dynamic),
        Type::Bool | Type::Number | Type::String => false,
    }
}

/// Any type, any value of it (unknowns and nulls anywhere, `dynamic` values
/// carrying their own types, numbers beyond float64): msgpack must carry it
/// to the decoder and back unchanged, and a wholly known value must survive
/// JSON (stored state) as well.
pub fn value_round_trip(input: &[u8]) {
    let mut u = Unstructured::new(input);
    let Ok(ty) = arbitrary_type(&mut u, 0) else {
        return;
    };
    let Ok(value) = arbitrary_value(&mut u, &ty) else {
        return;
    };
    assert_msgpack_round_trip(&value, &ty);
    // State JSON holds no unknowns, and `Value::to_json` writes a dynamic
    // value's inner value only (Terraform stores its type beside it).
    if value.is_wholly_known() && !has_dynamic(&ty) {
        let json = value.to_json();
        let back = from_json(&json, &ty)
            .unwrap_or_else(|e| panic!("cannot read back {json} as {ty}: {e}"));
        assert_eq!(back, value, "JSON round trip as {ty}");
    }
}

/// The environment variables go-plugin starts a plugin with, as the fuzzer
/// chooses them.
#[derive(Arbitrary, Debug)]
struct Vars {
    /// Most inputs should get past the cookie check to reach the rest.
    right_cookie: bool,
    cookie: Option<String>,
    protocol_versions: Option<String>,
    min_port: Option<String>,
    max_port: Option<String>,
    client_cert: Option<String>,
}

/// The go-plugin start-up contract read from arbitrary environment values:
/// every outcome is an environment or an error, never a panic, and an
/// accepted environment is usable (a port range that is not empty, a
/// certificate that is not blank).
pub fn handshake_env(input: &[u8]) {
    let Ok(vars) = Vars::arbitrary_take_rest(Unstructured::new(input)) else {
        return;
    };
    let lookup = |name: &str| -> Option<String> {
        match name {
            MAGIC_COOKIE_KEY if vars.right_cookie => Some(MAGIC_COOKIE_VALUE.to_string()),
            MAGIC_COOKIE_KEY => vars.cookie.clone(),
            "PLUGIN_PROTOCOL_VERSIONS" => vars.protocol_versions.clone(),
            "PLUGIN_MIN_PORT" => vars.min_port.clone(),
            "PLUGIN_MAX_PORT" => vars.max_port.clone(),
            "PLUGIN_CLIENT_CERT" => vars.client_cert.clone(),
            _ => None,
        }
    };
    let cookie_ok = vars.right_cookie || vars.cookie.as_deref() == Some(MAGIC_COOKIE_VALUE);
    match Environment::from_vars(lookup) {
        Ok(env) => {
            assert!(cookie_ok, "started without the magic cookie");
            assert!(env.min_port <= env.max_port, "{env:?}");
            assert!(
                env.client_cert
                    .as_deref()
                    .is_none_or(|c| !c.trim().is_empty()),
                "{env:?}"
            );
        }
        Err(HandshakeError::NotAPlugin) => assert!(!cookie_ok, "refused the right cookie"),
        Err(e) => assert!(cookie_ok && !e.to_string().is_empty(), "{e:?}"),
    }
}
