//! Schema declarations with the framework's behaviour attached: validators,
//! defaults, "requires replace", "use state for unknown" and values derived
//! from configuration. [`ObjectSchema::check`] rejects contradictory
//! declarations, and the protocol schema carries each attribute's rules in
//! its Markdown description, so documentation shows what validation does.

use std::collections::BTreeMap;

use super::validators::{ObjectValidator, Validator};
use gpufleet_protocol::schema::{self as proto_schema, AttributeType, Flags, Nesting};
use gpufleet_protocol::{AttributePath, Diagnostics, Type, Value};

/// What kind of value an attribute holds.
#[derive(Clone)]
pub enum AttrKind {
    /// A value of one cty type.
    Primitive(Type),
    /// An object, or a list, set or map of objects, with attributes of their own.
    Nested(Nesting, Vec<Attr>),
}

/// One attribute of a resource, data source or provider schema.
#[derive(Clone)]
pub struct Attr {
    /// The name configurations use.
    pub name: &'static str,
    /// Its value's shape.
    pub kind: AttrKind,
    /// Required / optional / computed / sensitive, as the protocol has them.
    pub flags: Flags,
    /// Markdown, shown in docs; the framework appends the attribute's rules.
    pub description: &'static str,
    /// Checks on the attribute's known values.
    pub validators: Vec<Validator>,
    /// Rules across the attributes of a nested object (each element of a
    /// list, set or map of objects).
    pub object_validators: Vec<ObjectValidator>,
    /// A change to this attribute destroys and re-creates the object.
    pub requires_replace: bool,
    /// A computed value that never changes once set: keep it in plans.
    pub use_state_for_unknown: bool,
    /// Value planned when the configuration leaves an optional+computed attribute unset.
    pub default: Option<Value>,
    /// A computed attribute the resource derives from these configured
    /// attributes: planned as soon as they are known.
    pub derived_from: &'static [&'static str],
    /// A derived attribute that reads report as the cluster has it, so that
    /// a change made outside Terraform shows as a planned change.
    pub observed: bool,
    /// A derived attribute that `derive` always decides from its inputs,
    /// so a null it gives is planned as null, not as unknown.
    pub exact: bool,
}

impl Attr {
    fn new(name: &'static str, kind: AttrKind) -> Self {
        Self {
            name,
            kind,
            flags: Flags::default(),
            description: "",
            validators: Vec::new(),
            object_validators: Vec::new(),
            requires_replace: false,
            use_state_for_unknown: false,
            default: None,
            derived_from: &[],
            observed: false,
            exact: false,
        }
    }
    /// A string attribute.
    pub fn string(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::String))
    }
    /// A number attribute.
    pub fn number(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::Number))
    }
    /// A bool attribute.
    pub fn bool(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::Bool))
    }
    /// A map of numbers.
    pub fn number_map(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::map(Type::Number)))
    }
    /// A map of strings.
    pub fn string_map(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::map(Type::String)))
    }
    /// A list of strings.
    pub fn string_list(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::list(Type::String)))
    }
    /// A set of strings.
    pub fn string_set(name: &'static str) -> Self {
        Self::new(name, AttrKind::Primitive(Type::set(Type::String)))
    }
    /// A nested attribute: one object, or a list, set or map of objects.
    pub fn nested(name: &'static str, nesting: Nesting, attrs: Vec<Attr>) -> Self {
        Self::new(name, AttrKind::Nested(nesting, attrs))
    }

    /// The configuration must set it.
    pub fn required(mut self) -> Self {
        self.flags.required = true;
        self
    }
    /// The configuration may set it.
    pub fn optional(mut self) -> Self {
        self.flags.optional = true;
        self
    }
    /// The provider sets it (alone, or when the configuration leaves it unset).
    pub fn computed(mut self) -> Self {
        self.flags.computed = true;
        self
    }
    /// Terraform hides it in output.
    pub fn sensitive(mut self) -> Self {
        self.flags.sensitive = true;
        self
    }
    /// Markdown documentation of the attribute.
    pub fn describe(mut self, text: &'static str) -> Self {
        self.description = text;
        self
    }
    /// Adds a check on the attribute's value.
    pub fn validate(mut self, validator: Validator) -> Self {
        self.validators.push(validator);
        self
    }
    /// Adds a rule across the attributes of this nested object.
    pub fn validate_object(mut self, validator: ObjectValidator) -> Self {
        self.object_validators.push(validator);
        self
    }
    /// A change destroys and re-creates the object.
    pub fn requires_replace(mut self) -> Self {
        self.requires_replace = true;
        self
    }
    /// Once set, the computed value stays as it is in plans.
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
    /// Computed from `inputs` by the resource's `derive`: known in the plan
    /// once the inputs are.
    pub fn derived_from(mut self, inputs: &'static [&'static str]) -> Self {
        self.flags.computed = true;
        self.derived_from = inputs;
        self
    }

    /// What a derived attribute describes lives in the cluster: plans derive
    /// it from configuration, reads report what is there, so a difference
    /// (drift) is a planned change back.
    pub fn observed(mut self) -> Self {
        self.observed = true;
        self.exact = true;
        self
    }

    /// `derive` decides this derived attribute from its inputs alone: null
    /// is one of its values (not "known only after apply").
    pub fn exact(mut self) -> Self {
        self.exact = true;
        self
    }

    /// The description with the attribute's rules appended: validators,
    /// default, replacement.
    fn documented(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if !self.description.is_empty() {
            parts.push(self.description.to_string());
        }
        parts.extend(
            self.validators
                .iter()
                .map(|v| v.description().to_string())
                .filter(|d| !d.is_empty()),
        );
        parts.extend(
            self.object_validators
                .iter()
                .map(ObjectValidator::description),
        );
        if let Some(default) = &self.default
            && let Some(text) = default_text(default)
        {
            parts.push(format!("Defaults to `{text}`."));
        }
        if self.requires_replace {
            parts.push("Changing it forces replacement.".to_string());
        }
        if self.observed {
            parts.push(
                "Read back from the cluster: a change made there shows in the next plan."
                    .to_string(),
            );
        }
        parts.join(" ")
    }

    /// The attribute as the protocol describes it.
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
            description: self.documented(),
            deprecated: false,
        }
    }

    /// Contradictions in this attribute's declaration, with its path.
    fn problems(&self, path: &str, siblings: &[Attr], found: &mut Vec<String>) {
        let here = if path.is_empty() {
            self.name.to_string()
        } else {
            format!("{path}.{}", self.name)
        };
        let f = self.flags;
        let mut problem = |what: &str| found.push(format!("{here}: {what}"));
        if f.required && (f.optional || f.computed) {
            problem("required cannot be optional or computed");
        }
        if !f.required && !f.optional && !f.computed {
            problem("neither required, optional nor computed");
        }
        if self.default.is_some() && !(f.optional && f.computed) {
            problem("a default needs optional + computed");
        }
        if self.requires_replace && f.computed && !f.optional {
            problem("a computed-only attribute cannot require replacement");
        }
        if self.use_state_for_unknown && !f.computed {
            problem("use_state_for_unknown needs computed");
        }
        if f.computed && !f.optional && !self.validators.is_empty() {
            problem("validators on a computed-only attribute never run");
        }
        for input in self.derived_from {
            if !siblings.iter().any(|a| a.name == *input) {
                problem(&format!("derived from unknown attribute {input:?}"));
            }
        }
        if !self.derived_from.is_empty() && f.optional {
            problem("a derived attribute cannot be configured");
        }
        if self.exact && self.derived_from.is_empty() {
            problem("an exact or observed attribute must be derived");
        }
        match &self.kind {
            AttrKind::Nested(_, nested) => {
                object_problems(nested, &self.object_validators, &here, found);
            }
            AttrKind::Primitive(_) if !self.object_validators.is_empty() => {
                found.push(format!(
                    "{here}: object validators on a primitive attribute"
                ));
            }
            AttrKind::Primitive(_) => {}
        }
    }
}

/// A default as documentation shows it; `None` for structured defaults,
/// which the attribute's description spells out.
fn default_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(gpufleet_protocol::value::number_text(n)),
        _ => None,
    }
}

fn object_problems(
    attrs: &[Attr],
    validators: &[ObjectValidator],
    path: &str,
    found: &mut Vec<String>,
) {
    let mut names = BTreeMap::new();
    for attr in attrs {
        if names.insert(attr.name, ()).is_some() {
            found.push(format!("{path}: attribute {:?} declared twice", attr.name));
        }
        attr.problems(path, attrs, found);
    }
    for validator in validators {
        for name in validator.attributes() {
            match attrs.iter().find(|a| a.name == *name) {
                None => found.push(format!(
                    "{path}: object validator names unknown attribute {name:?}"
                )),
                Some(a) if a.flags.required => found.push(format!(
                    "{path}: object validator over required attribute {name:?}"
                )),
                Some(_) => {}
            }
        }
    }
}

/// The schema of a resource, data source or provider block.
#[derive(Clone)]
pub struct ObjectSchema {
    /// Schema version of stored state; bump it with an upgrade.
    pub version: i64,
    /// Markdown, shown in docs.
    pub description: &'static str,
    /// The top-level attributes.
    pub attrs: Vec<Attr>,
    /// Rules across top-level attributes.
    pub validators: Vec<ObjectValidator>,
}

impl ObjectSchema {
    /// A version-0 schema.
    pub fn new(description: &'static str, attrs: Vec<Attr>) -> Self {
        Self {
            version: 0,
            description,
            attrs,
            validators: Vec::new(),
        }
    }

    /// Adds a rule across top-level attributes.
    pub fn validate(mut self, validator: ObjectValidator) -> Self {
        self.validators.push(validator);
        self
    }

    /// The schema as the protocol describes it.
    pub fn to_protocol(&self) -> proto_schema::Schema {
        let mut description = self.description.to_string();
        for rule in &self.validators {
            description.push(' ');
            description.push_str(&rule.description());
        }
        proto_schema::Schema {
            version: self.version,
            description,
            attributes: self.attrs.iter().map(Attr::to_protocol).collect(),
        }
    }

    /// The type of values of this schema.
    pub fn value_type(&self) -> Type {
        self.to_protocol().value_type()
    }

    /// Contradictory declarations (required with a default, validators that
    /// can never run, rules naming missing attributes); empty when sound.
    pub fn check(&self) -> Vec<String> {
        let mut found = Vec::new();
        object_problems(&self.attrs, &self.validators, "", &mut found);
        found
    }

    /// Runs every validator over a configuration: attribute validators, then
    /// object rules, recursing into nested attributes. Unknown values are
    /// skipped (they are checked again at plan).
    pub fn validate_config(&self, config: &Value) -> Diagnostics {
        let mut diagnostics = Diagnostics::default();
        validate_object(
            &self.attrs,
            &self.validators,
            config,
            &AttributePath::root(),
            &mut diagnostics,
        );
        diagnostics
    }

    /// An object of this schema with the given attributes set, the rest null.
    pub fn object(&self, set: &[(&str, Value)]) -> Value {
        let mut object: BTreeMap<String, Value> = self
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

fn validate_object(
    attrs: &[Attr],
    rules: &[ObjectValidator],
    object: &Value,
    path: &AttributePath,
    diagnostics: &mut Diagnostics,
) {
    for attr in attrs {
        let value = object.attr(attr.name);
        let here = path.join_attr(attr.name);
        if value.is_null() {
            continue;
        }
        let f = attr.flags;
        if f.computed && !f.optional && !f.required {
            // Known or not, a value here is one the provider would ignore.
            diagnostics.error_at(
                here.clone(),
                "Value for a computed attribute",
                format!("`{here}` is set by the provider, never by configuration: remove it."),
            );
            continue;
        }
        if value.is_unknown() {
            continue;
        }
        for validator in &attr.validators {
            if let Err(detail) = validator.check(value) {
                // Terraform cannot point at an attribute inside a list or
                // object expression (it shows the resource), so say which.
                let detail = if here.0.len() > 1 {
                    format!("{here}: {detail}")
                } else {
                    detail
                };
                diagnostics.error_at(here.clone(), "Invalid attribute value", detail);
            }
        }
        if let AttrKind::Nested(nesting, nested) = &attr.kind {
            let rules = &attr.object_validators;
            match nesting {
                Nesting::Single => validate_object(nested, rules, value, &here, diagnostics),
                Nesting::List | Nesting::Set => {
                    for (i, element) in value.elements().into_iter().flatten().enumerate() {
                        let at = here.join_index(i);
                        validate_object(nested, rules, element, &at, diagnostics);
                    }
                }
                Nesting::Map => {
                    for (key, element) in value.entries().into_iter().flatten() {
                        let at = here.join_key(key);
                        validate_object(nested, rules, element, &at, diagnostics);
                    }
                }
            }
        }
    }
    if !object.is_null() && !object.is_unknown() {
        for rule in rules {
            rule.check(object, path, diagnostics);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validators::{exactly_one_of, one_of};

    #[test]
    fn contradictions_are_found() {
        let schema = ObjectSchema::new(
            "t",
            vec![
                Attr::string("both").required().default(Value::string("x")),
                Attr::string("nothing"),
                Attr::string("out").computed().validate(one_of(&["a"])),
                Attr::string("derived").derived_from(&["missing"]),
            ],
        )
        .validate(exactly_one_of(&["both", "ghost"]));
        let found = schema.check();
        for expected in [
            "both: required cannot be optional or computed",
            "nothing: neither required",
            "out: validators on a computed-only attribute never run",
            "derived: derived from unknown attribute \"missing\"",
            "object validator names unknown attribute \"ghost\"",
            "object validator over required attribute \"both\"",
        ] {
            assert!(
                found.iter().any(|f| f.contains(expected)),
                "{expected}: {found:?}"
            );
        }
    }

    #[test]
    fn a_configured_computed_attribute_is_refused_at_its_path() {
        let schema = ObjectSchema::new(
            "t",
            vec![
                Attr::string("id").computed(),
                Attr::string("name").optional(),
                Attr::string("size").default(Value::string("s")),
                Attr::nested(
                    "class",
                    Nesting::Single,
                    vec![
                        Attr::string("kind").optional(),
                        Attr::string("uid").computed(),
                    ],
                )
                .optional(),
            ],
        );
        let config = schema.object(&[
            ("id", Value::UNKNOWN),
            ("name", Value::string("a")),
            ("size", Value::string("m")),
            (
                "class",
                Value::Object(
                    [("kind", Value::string("k")), ("uid", Value::string("u"))]
                        .map(|(k, v)| (k.to_string(), v))
                        .into(),
                ),
            ),
        ]);
        let found = schema.validate_config(&config).located();
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["id", "class.uid"], "{found:?}");
        assert!(
            found[0].1.contains("`id` is set by the provider"),
            "{found:?}"
        );
        let unset = schema.object(&[("name", Value::string("a"))]);
        assert!(schema.validate_config(&unset).0.is_empty());
    }

    #[test]
    fn descriptions_carry_the_rules() {
        let attr = Attr::string("policy")
            .default(Value::string("Auto"))
            .validate(one_of(&["Auto", "Never"]))
            .requires_replace()
            .describe("How.");
        assert_eq!(
            attr.to_protocol().description,
            "How. One of `Auto`, `Never`. Defaults to `Auto`. Changing it forces replacement."
        );
    }
}
