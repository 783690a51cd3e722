//! Schema declarations with the framework's behaviour attached: validators,
//! defaults, "requires replace" and "use state for unknown".

use std::sync::Arc;

use crate::protocol::schema::{self as proto_schema, AttributeType, Flags, Nesting};
use crate::protocol::{Type, Value};

/// Checks one known, non-null value; the error text becomes the diagnostic detail.
pub type Validator = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

#[derive(Clone)]
pub enum AttrKind {
    Primitive(Type),
    Nested(Nesting, Vec<Attr>),
}

#[derive(Clone)]
pub struct Attr {
    pub name: &'static str,
    pub kind: AttrKind,
    pub flags: Flags,
    pub description: &'static str,
    pub validators: Vec<Validator>,
    /// A change to this attribute destroys and re-creates the object.
    pub requires_replace: bool,
    /// A computed value that never changes once set (an id): keep it in plans.
    pub use_state_for_unknown: bool,
    /// Value planned when the configuration leaves an optional+computed attribute unset.
    pub default: Option<Value>,
}

impl Attr {
    fn new(name: &'static str, kind: AttrKind) -> Self {
        Self {
            name,
            kind,
            flags: Flags::default(),
            description: "",
            validators: Vec::new(),
            requires_replace: false,
            use_state_for_unknown: false,
            default: None,
        }
    }
    pub fn string(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::String))
    }
    pub fn number(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::Number))
    }
    pub fn bool(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::Bool))
    }
    pub fn string_map(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::map(Type::String)))
    }
    pub fn string_list(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::list(Type::String)))
    }
    pub fn string_set(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::set(Type::String)))
    }
    pub fn nested(name: &'static str, nesting: Nesting, attrs: Vec<Attr>) -> Self {
        Self::new(name, AttrKind::Nested(nesting, attrs))
    }

    pub fn required(mut self) -> Self {
        self.flags.required = true;
        self
    }
    pub fn optional(mut self) -> Self {
        self.flags.optional = true;
        self
    }
    pub fn computed(mut self) -> Self {
        self.flags.computed = true;
        self
    }
    pub fn sensitive(mut self) -> Self {
        self.flags.sensitive = true;
        self
    }
    pub fn describe(mut self, text: &'static str) -> Self {
        self.description = text;
        self
    }
    pub fn validate(mut self, validator: Validator) -> Self {
        self.validators.push(validator);
        self
    }
    pub fn requires_replace(mut self) -> Self {
        self.requires_replace = true;
        self
    }
    pub fn use_state_for_unknown(mut self) -> Self {
        self.use_state_for_unknown = true;
        self
    }
    /// Optional + computed with a default, as Kubernetes defaults the field.
    pub fn default(mut self, value: Value) -> Self {
        self.flags.optional = true;
        self.flags.computed = true;
        self.default = Some(value);
        self
    }

    pub fn to_protocol(&self) -> proto_schema::Attribute {
        proto_schema::Attribute {
            name: self.name.to_string(),
            ty: match &self.kind {
                AttrKind::Primitive(t) => AttributeType::Primitive(t.clone()),
                AttrKind::Nested(n, attrs) => {
                    AttributeType::Nested(*n, attrs.iter().map(Attr::to_protocol).collect())
                }
            },
            flags: self.flags,
            description: self.description.to_string(),
            deprecated: false,
        }
    }
}

#[derive(Clone)]
pub struct ObjectSchema {
    pub version: i64,
    pub description: &'static str,
    pub attrs: Vec<Attr>,
}

impl ObjectSchema {
    pub fn new(description: &'static str, attrs: Vec<Attr>) -> Self {
        Self {
            version: 0,
            description,
            attrs,
        }
    }

    pub fn to_protocol(&self) -> proto_schema::Schema {
        proto_schema::Schema {
            version: self.version,
            description: self.description.to_string(),
            attributes: self.attrs.iter().map(Attr::to_protocol).collect(),
        }
    }

    pub fn value_type(&self) -> Type {
        self.to_protocol().value_type()
    }

    /// An object of this schema with the given attributes set, the rest null.
    pub fn object(&self, set: &[(&str, Value)]) -> Value {
        let mut object: std::collections::BTreeMap<String, Value> = self
            .attrs
            .iter()
            .map(|a| (a.name.to_string(), Value::Null))
            .collect();
        for (name, value) in set {
            object.insert(name.to_string(), value.clone());
        }
        Value::Object(object)
    }
}
