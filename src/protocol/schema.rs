//! Schemas as the protocol describes them: attributes with a type or with
//! nested attributes (never both, which Terraform rejects), flags and
//! descriptions. Validators and plan behaviour live in the framework.

use super::proto::tfplugin6 as pb;
use super::types::Type;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nesting {
    Single,
    List,
    Set,
    Map,
}

#[derive(Clone, Debug)]
pub enum AttributeType {
    Primitive(Type),
    Nested(Nesting, Vec<Attribute>),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub required: bool,
    pub optional: bool,
    pub computed: bool,
    pub sensitive: bool,
    pub write_only: bool,
}

#[derive(Clone, Debug)]
pub struct Attribute {
    pub name: String,
    pub ty: AttributeType,
    pub flags: Flags,
    pub description: String,
    pub deprecated: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Schema {
    pub version: i64,
    pub description: String,
    pub attributes: Vec<Attribute>,
}

impl Attribute {
    /// The value type this attribute has in state and config.
    pub fn value_type(&self) -> Type {
        match &self.ty {
            AttributeType::Primitive(t) => t.clone(),
            AttributeType::Nested(nesting, attrs) => {
                let object = object_type(attrs);
                match nesting {
                    Nesting::Single => object,
                    Nesting::List => Type::list(object),
                    Nesting::Set => Type::set(object),
                    Nesting::Map => Type::map(object),
                }
            }
        }
    }

    fn to_proto(&self) -> pb::schema::Attribute {
        let (ty, nested_type) = match &self.ty {
            AttributeType::Primitive(t) => (t.to_json_bytes(), None),
            AttributeType::Nested(nesting, attrs) => (
                Vec::new(),
                Some(pb::schema::Object {
                    attributes: attrs.iter().map(Attribute::to_proto).collect(),
                    nesting: match nesting {
                        Nesting::Single => pb::schema::object::NestingMode::Single,
                        Nesting::List => pb::schema::object::NestingMode::List,
                        Nesting::Set => pb::schema::object::NestingMode::Set,
                        Nesting::Map => pb::schema::object::NestingMode::Map,
                    } as i32,
                }),
            ),
        };
        pb::schema::Attribute {
            name: self.name.clone(),
            r#type: ty,
            nested_type,
            description: self.description.clone(),
            required: self.flags.required,
            optional: self.flags.optional,
            computed: self.flags.computed,
            sensitive: self.flags.sensitive,
            description_kind: pb::StringKind::Markdown as i32,
            deprecated: self.deprecated,
            write_only: self.flags.write_only,
        }
    }
}

/// The object type of a set of attributes, as values of it travel on the
/// wire (Terraform strips optional-attribute markers from implied types).
pub fn object_type(attrs: &[Attribute]) -> Type {
    Type::Object {
        attributes: attrs
            .iter()
            .map(|a| (a.name.clone(), a.value_type()))
            .collect(),
        optional: Default::default(),
    }
}

impl Schema {
    pub fn value_type(&self) -> Type {
        object_type(&self.attributes)
    }

    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    pub fn to_proto(&self) -> pb::Schema {
        pb::Schema {
            version: self.version,
            block: Some(pb::schema::Block {
                version: self.version,
                attributes: self.attributes.iter().map(Attribute::to_proto).collect(),
                block_types: Vec::new(),
                description: self.description.clone(),
                description_kind: pb::StringKind::Markdown as i32,
                deprecated: false,
            }),
        }
    }
}
