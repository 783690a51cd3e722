//! Resource identity (protocol 6.9; Terraform 1.12+, OpenTofu 1.12+): what
//! identifies the object a resource manages, apart from its state. A
//! resource declares the identity's attributes, the state attributes it is
//! made of and its version; the framework sends it with every plan, apply,
//! read and import, imports by identity through the resource's import ID
//! (so `import { identity = ... }` and `import { id = ... }` share one path
//! and give the same state), and upgrades identities stored by an older
//! identity version.

use gpufleet_protocol::schema::{IdentityAttribute, IdentitySchema};
use gpufleet_protocol::{AttributePath, Diagnostics, Type, Value};

use super::schema::ObjectSchema;

/// One attribute of an identity.
#[derive(Clone)]
pub struct IdentityAttr {
    /// Its name in `import { identity = {...} }`.
    pub name: &'static str,
    /// Its type.
    pub ty: Type,
    /// An import by identity must give it.
    pub required_for_import: bool,
    /// Markdown, shown by `providers schema -json`.
    pub description: String,
}

impl IdentityAttr {
    /// A string attribute, optional for import.
    pub fn string(name: &'static str) -> Self {
        Self {
            name,
            ty: Type::String,
            required_for_import: false,
            description: String::new(),
        }
    }

    /// An import by identity must give it.
    pub fn required_for_import(mut self) -> Self {
        self.required_for_import = true;
        self
    }

    /// Sets the description.
    pub fn describe(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }
}

/// A resource's identity declaration.
#[derive(Clone)]
pub struct Identity {
    /// Stored with each identity; bump it with an upgrade
    /// ([`super::Resource::upgrade_identity`]).
    pub version: i64,
    /// The identity's attributes.
    pub attrs: Vec<IdentityAttr>,
    /// The state attributes the identity is made of: a plan carries the
    /// identity once they are known.
    pub from: &'static [&'static str],
    /// Whether an in-place update may change the identity. Otherwise every
    /// attribute in `from` must force replacement, so an object keeps its
    /// identity for its lifetime.
    pub mutable: bool,
}

impl Identity {
    /// A version-0 identity made of the state attributes `from`.
    pub fn new(from: &'static [&'static str], attrs: Vec<IdentityAttr>) -> Self {
        Self {
            version: 0,
            attrs,
            from,
            mutable: false,
        }
    }

    /// The identity follows an in-place change of what it is made of.
    pub fn mutable(mut self) -> Self {
        self.mutable = true;
        self
    }

    /// The identity schema as the protocol describes it.
    pub fn to_protocol(&self) -> IdentitySchema {
        IdentitySchema {
            version: self.version,
            attributes: self
                .attrs
                .iter()
                .map(|a| IdentityAttribute {
                    name: a.name.to_string(),
                    ty: a.ty.clone(),
                    required_for_import: a.required_for_import,
                    description: a.description.clone(),
                })
                .collect(),
        }
    }

    /// The type of identity values.
    pub fn value_type(&self) -> Type {
        self.to_protocol().value_type()
    }

    /// Contradictions between the declaration and the resource's `schema`;
    /// empty when sound.
    pub fn check(&self, schema: &ObjectSchema) -> Vec<String> {
        let mut found = Vec::new();
        if self.attrs.is_empty() {
            found.push("identity: no attributes".to_string());
        }
        for (i, attr) in self.attrs.iter().enumerate() {
            if self.attrs[..i].iter().any(|a| a.name == attr.name) {
                found.push(format!("identity.{}: declared twice", attr.name));
            }
            // Terraform refuses these at schema load
            // (hashicorp/terraform, internal/schemarepo/loadschemas/plugins.go).
            if matches!(
                attr.ty,
                Type::Map(_) | Type::Set(_) | Type::Object { .. } | Type::Dynamic
            ) {
                found.push(format!(
                    "identity.{}: a map, set, object or dynamic type is not allowed",
                    attr.name
                ));
            }
        }
        for name in self.from {
            match schema.attrs.iter().find(|a| a.name == *name) {
                None => found.push(format!("identity: made of unknown attribute {name:?}")),
                Some(a) if !self.mutable && !a.requires_replace => found.push(format!(
                    "identity: {name:?} changes in place, so the identity would change: make it force replacement or declare the identity mutable"
                )),
                Some(_) => {}
            }
        }
        found
    }

    /// Errors for identity attributes an import must give but `identity`
    /// leaves null, at their paths.
    pub fn missing_for_import(&self, identity: &Value) -> Diagnostics {
        let mut diagnostics = Diagnostics::default();
        for attr in self.attrs.iter().filter(|a| a.required_for_import) {
            if identity.attr(attr.name).is_null() {
                diagnostics.error_at(
                    AttributePath::attr(attr.name),
                    "Missing identity attribute",
                    format!("An import by identity needs `{}`.", attr.name),
                );
            }
        }
        diagnostics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Attr;

    fn schema() -> ObjectSchema {
        ObjectSchema::new(
            "test",
            vec![
                Attr::string("name").required().requires_replace(),
                Attr::string("node").optional(),
                Attr::string_map("labels").optional(),
            ],
        )
    }

    #[test]
    fn an_identity_made_of_attributes_that_change_in_place_must_say_it_is_mutable() {
        let stable = Identity::new(&["name"], vec![IdentityAttr::string("name")]);
        assert!(stable.check(&schema()).is_empty());
        let moving = Identity::new(&["name", "node"], vec![IdentityAttr::string("node")]);
        let found = moving.check(&schema());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("\"node\" changes in place"), "{found:?}");
        assert!(moving.mutable().check(&schema()).is_empty());
    }

    #[test]
    fn refuses_what_terraform_refuses_and_names_that_do_not_exist() {
        let mut labels = IdentityAttr::string("labels");
        labels.ty = Type::map(Type::String);
        let found = Identity::new(&["nope"], vec![labels.clone(), labels]).check(&schema());
        assert_eq!(
            found,
            [
                "identity.labels: a map, set, object or dynamic type is not allowed",
                "identity.labels: declared twice",
                "identity.labels: a map, set, object or dynamic type is not allowed",
                "identity: made of unknown attribute \"nope\"",
            ]
        );
        assert_eq!(
            Identity::new(&[], vec![]).check(&schema()),
            ["identity: no attributes"]
        );
    }

    #[test]
    fn the_wire_schema_marks_each_attribute_required_or_optional_for_import() {
        let identity = Identity::new(
            &["name"],
            vec![
                IdentityAttr::string("name").required_for_import(),
                IdentityAttr::string("node").describe("The node."),
            ],
        );
        let wire = identity.to_protocol().to_proto();
        assert_eq!(wire.version, 0);
        let [name, node] = &wire.identity_attributes[..] else {
            panic!("{wire:?}")
        };
        assert!(name.required_for_import && !name.optional_for_import);
        assert!(!node.required_for_import && node.optional_for_import);
        assert_eq!(node.r#type, b"\"string\"");
        assert_eq!(node.description, "The node.");
        let missing =
            identity.missing_for_import(&Value::Object([("name".to_string(), Value::Null)].into()));
        assert_eq!(missing.located()[0].0, "name");
    }
}
