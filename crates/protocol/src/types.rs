//! Terraform's type system (cty types) and their JSON form, used in schemas
//! and inside `dynamic` values.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;

/// The type of a value; schemas declare one per attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Type {
    /// `bool`.
    Bool,
    /// `number`: an arbitrary-precision decimal.
    Number,
    /// `string`: UTF-8 text.
    String,
    /// Any type; the value carries its own type on the wire.
    Dynamic,
    /// `list(T)`: elements of one type, in order.
    List(Box<Type>),
    /// `set(T)`: unordered elements of one type, without duplicates.
    Set(Box<Type>),
    /// `map(T)`: values of one type by string key.
    Map(Box<Type>),
    /// `tuple([...])`: a fixed sequence of elements, each with its own type.
    Tuple(Vec<Type>),
    /// `object({...})`: named attributes, each with its own type.
    Object {
        /// Every attribute's name and type.
        attributes: BTreeMap<String, Type>,
        /// Attributes a configuration may leave out (`optional(...)` in a
        /// type constraint); empty on the wire from Terraform.
        optional: BTreeSet<String>,
    },
}

/// A JSON type description that names no type; the string says what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("invalid type description: {0}")]
pub struct TypeError(pub String);

impl Type {
    /// `list(element)`.
    pub fn list(element: Type) -> Type {
        Type::List(Box::new(element))
    }
    /// `set(element)`.
    pub fn set(element: Type) -> Type {
        Type::Set(Box::new(element))
    }
    /// `map(element)`.
    pub fn map(element: Type) -> Type {
        Type::Map(Box::new(element))
    }
    /// `object({...})` of these attributes, none of them optional.
    pub fn object<'a>(attributes: impl IntoIterator<Item = (&'a str, Type)>) -> Type {
        Type::Object {
            attributes: attributes
                .into_iter()
                .map(|(name, ty)| (name.to_string(), ty))
                .collect(),
            optional: BTreeSet::new(),
        }
    }

    /// The JSON form Terraform expects in `Schema.Attribute.type`.
    pub fn to_json(&self) -> Json {
        match self {
            Type::Bool => Json::from("bool"),
            Type::Number => Json::from("number"),
            Type::String => Json::from("string"),
            Type::Dynamic => Json::from("dynamic"),
            Type::List(e) => Json::Array(vec!["list".into(), e.to_json()]),
            Type::Set(e) => Json::Array(vec!["set".into(), e.to_json()]),
            Type::Map(e) => Json::Array(vec!["map".into(), e.to_json()]),
            Type::Tuple(es) => Json::Array(vec![
                "tuple".into(),
                Json::Array(es.iter().map(Type::to_json).collect()),
            ]),
            Type::Object {
                attributes,
                optional,
            } => {
                let attrs = attributes
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect();
                let mut parts = vec!["object".into(), Json::Object(attrs)];
                if !optional.is_empty() {
                    parts.push(Json::Array(
                        optional.iter().map(|s| s.as_str().into()).collect(),
                    ));
                }
                Json::Array(parts)
            }
        }
    }

    /// [`Type::to_json`] serialized, as schemas and `dynamic` values carry it.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_json()).expect("a JSON value always serializes")
    }

    /// Reads a type from its JSON form (`"string"`, `["list","number"]`, ...).
    pub fn from_json(json: &Json) -> Result<Type, TypeError> {
        match json {
            Json::String(s) => match s.as_str() {
                "bool" => Ok(Type::Bool),
                "number" => Ok(Type::Number),
                "string" => Ok(Type::String),
                "dynamic" => Ok(Type::Dynamic),
                other => Err(TypeError(format!("unknown primitive type {other:?}"))),
            },
            Json::Array(parts) => {
                let kind = parts.first().and_then(Json::as_str).unwrap_or_default();
                let arg = parts
                    .get(1)
                    .ok_or_else(|| TypeError(format!("{kind:?} needs an argument")))?;
                match kind {
                    "list" => Ok(Type::list(Type::from_json(arg)?)),
                    "set" => Ok(Type::set(Type::from_json(arg)?)),
                    "map" => Ok(Type::map(Type::from_json(arg)?)),
                    "tuple" => {
                        let elems = arg
                            .as_array()
                            .ok_or_else(|| TypeError("tuple needs an array".into()))?;
                        Ok(Type::Tuple(
                            elems
                                .iter()
                                .map(Type::from_json)
                                .collect::<Result<_, _>>()?,
                        ))
                    }
                    "object" => {
                        let attrs = arg
                            .as_object()
                            .ok_or_else(|| TypeError("object needs a map".into()))?;
                        let attributes = attrs
                            .iter()
                            .map(|(k, v)| Ok((k.clone(), Type::from_json(v)?)))
                            .collect::<Result<_, TypeError>>()?;
                        let optional = match parts.get(2) {
                            Some(Json::Array(names)) => names
                                .iter()
                                .map(|n| {
                                    n.as_str().map(str::to_string).ok_or_else(|| {
                                        TypeError("optional attribute names must be strings".into())
                                    })
                                })
                                .collect::<Result<_, _>>()?,
                            _ => BTreeSet::new(),
                        };
                        Ok(Type::Object {
                            attributes,
                            optional,
                        })
                    }
                    other => Err(TypeError(format!("unknown type constructor {other:?}"))),
                }
            }
            other => Err(TypeError(format!("unexpected {other}"))),
        }
    }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_json())
    }
}
