//! Schemas as the protocol describes them: attributes with a type or with
//! nested attributes (never both, which Terraform rejects), flags and
//! descriptions, and the identity schemas of managed resources. Validators
//! and plan behaviour live in the framework.

use super::proto::tfplugin6 as pb;
use super::types::Type;

/// How a nested attribute holds its objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nesting {
    /// One object.
    Single,
    /// An ordered list of objects.
    List,
    /// A set of objects; order does not matter, duplicates collapse.
    Set,
    /// Objects by string key.
    Map,
}

/// What an attribute holds: a value of a type, or nested attributes.
#[derive(Clone, Debug)]
pub enum AttributeType {
    /// A value of this type (sent as `Schema.Attribute.type`).
    Primitive(Type),
    /// Objects of these attributes, nested this way (`nested_type`).
    Nested(Nesting, Vec<Attribute>),
}

/// Who sets an attribute and how Terraform treats its value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// The configuration must set it.
    pub required: bool,
    /// The configuration may set it.
    pub optional: bool,
    /// The provider sets it (when the configuration does not, if also optional).
    pub computed: bool,
    /// Terraform hides its value in plan output and logs.
    pub sensitive: bool,
    /// Set in configuration, never stored in state or plan.
    pub write_only: bool,
}

/// One attribute of a schema or of a nested attribute.
#[derive(Clone, Debug)]
pub struct Attribute {
    /// Its name in configuration and state.
    pub name: String,
    /// Its value type, or the attributes nested in it.
    pub ty: AttributeType,
    /// Required, optional, computed, sensitive, write-only.
    pub flags: Flags,
    /// Markdown shown in the registry documentation and by language servers.
    pub description: String,
    /// Terraform warns when the configuration sets it.
    pub deprecated: bool,
}

/// The schema of the provider block, a resource or a data source.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    /// Recorded with each stored state; `UpgradeResourceState` gets it back.
    pub version: i64,
    /// Markdown describing the whole block, for the registry documentation.
    pub description: String,
    /// The block's attributes (no nested blocks: nested attributes instead).
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
    /// The object type of the block's values in config, plan and state.
    pub fn value_type(&self) -> Type {
        object_type(&self.attributes)
    }

    /// The top-level attribute called `name`.
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    /// The wire form sent in `GetProviderSchema`.
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

/// One attribute of a resource identity.
#[derive(Clone, Debug)]
pub struct IdentityAttribute {
    /// Its name in `import { identity = {...} }` and in state.
    pub name: String,
    /// Its type: a primitive or a list (Terraform refuses maps, sets and
    /// objects in identities).
    pub ty: Type,
    /// An import by identity must give it; otherwise it may.
    pub required_for_import: bool,
    /// Markdown shown by `providers schema -json`.
    pub description: String,
}

/// What identifies objects of a managed resource type (protocol 6.9,
/// Terraform 1.12+): versioned apart from the resource schema, stored next
/// to each state, and accepted by `import` instead of an ID.
#[derive(Clone, Debug, Default)]
pub struct IdentitySchema {
    /// Recorded with each stored identity; `UpgradeResourceIdentity` gets it back.
    pub version: i64,
    /// The identity's attributes.
    pub attributes: Vec<IdentityAttribute>,
}

impl IdentitySchema {
    /// The object type of identity values.
    pub fn value_type(&self) -> Type {
        Type::Object {
            attributes: self
                .attributes
                .iter()
                .map(|a| (a.name.clone(), a.ty.clone()))
                .collect(),
            optional: Default::default(),
        }
    }

    /// The wire form sent in `GetResourceIdentitySchemas`.
    pub fn to_proto(&self) -> pb::ResourceIdentitySchema {
        pb::ResourceIdentitySchema {
            version: self.version,
            identity_attributes: self
                .attributes
                .iter()
                .map(|a| pb::resource_identity_schema::IdentityAttribute {
                    name: a.name.clone(),
                    r#type: a.ty.to_json_bytes(),
                    required_for_import: a.required_for_import,
                    optional_for_import: !a.required_for_import,
                    description: a.description.clone(),
                })
                .collect(),
        }
    }
}
