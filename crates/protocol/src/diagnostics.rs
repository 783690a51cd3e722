//! Diagnostics (errors and warnings shown to the user) and the attribute
//! paths that point them at a line of configuration.

use super::proto::tfplugin6 as pb;

/// One step of an [`AttributePath`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathStep {
    /// Into an attribute of an object, by name.
    Attribute(String),
    /// Into an element of a map, by key.
    Key(String),
    /// Into an element of a list or tuple, by position.
    Index(i64),
}

/// Where in a resource's configuration a value sits, e.g. `taints[0].effect`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttributePath(pub Vec<PathStep>);

impl AttributePath {
    /// The whole configuration block; no step taken.
    pub fn root() -> Self {
        Self::default()
    }
    /// A top-level attribute of the block.
    pub fn attr(name: &str) -> Self {
        Self::root().join_attr(name)
    }
    /// This path, then into the attribute `name` of the object here.
    pub fn join_attr(&self, name: &str) -> Self {
        self.with(PathStep::Attribute(name.to_string()))
    }
    /// This path, then into the element `key` of the map here.
    pub fn join_key(&self, key: &str) -> Self {
        self.with(PathStep::Key(key.to_string()))
    }
    /// This path, then into element `index` of the list here.
    pub fn join_index(&self, index: usize) -> Self {
        self.with(PathStep::Index(index as i64))
    }
    fn with(&self, step: PathStep) -> Self {
        let mut steps = self.0.clone();
        steps.push(step);
        Self(steps)
    }

    /// The longest start of this path the CLIs can point at: up to the
    /// second attribute name.
    pub fn shown_by_clis(&self) -> AttributePath {
        let second = self
            .0
            .iter()
            .enumerate()
            .filter(|(_, step)| matches!(step, PathStep::Attribute(_)))
            .nth(1)
            .map_or(self.0.len(), |(i, _)| i);
        Self(self.0[..second].to_vec())
    }

    /// The wire form, with which Terraform points at the configuration line.
    pub fn to_proto(&self) -> pb::AttributePath {
        use pb::attribute_path::step::Selector;
        pb::AttributePath {
            steps: self
                .0
                .iter()
                .map(|step| pb::attribute_path::Step {
                    selector: Some(match step {
                        PathStep::Attribute(a) => Selector::AttributeName(a.clone()),
                        PathStep::Key(k) => Selector::ElementKeyString(k.clone()),
                        PathStep::Index(i) => Selector::ElementKeyInt(*i),
                    }),
                })
                .collect(),
        }
    }

    /// Reads a path from the wire; steps without a selector are skipped.
    pub fn from_proto(path: &pb::AttributePath) -> Self {
        use pb::attribute_path::step::Selector;
        Self(
            path.steps
                .iter()
                .filter_map(|s| {
                    Some(match s.selector.as_ref()? {
                        Selector::AttributeName(a) => PathStep::Attribute(a.clone()),
                        Selector::ElementKeyString(k) => PathStep::Key(k.clone()),
                        Selector::ElementKeyInt(i) => PathStep::Index(*i),
                    })
                })
                .collect(),
        )
    }
}

impl std::fmt::Display for AttributePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                PathStep::Attribute(a) if i == 0 => write!(f, "{a}")?,
                PathStep::Attribute(a) => write!(f, ".{a}")?,
                PathStep::Key(k) => write!(f, "[{k:?}]")?,
                PathStep::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The operation failed; Terraform stops.
    Error,
    /// Shown to the user; the operation goes on.
    Warning,
}

/// One error or warning, as Terraform prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The headline, printed after `Error:` or `Warning:`.
    pub summary: String,
    /// The explanation printed below the configuration excerpt.
    pub detail: String,
    /// The attribute at fault; Terraform then shows its line of configuration.
    pub path: Option<AttributePath>,
}

impl Diagnostic {
    /// An error not tied to an attribute.
    pub fn error(summary: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            summary: summary.into(),
            detail: detail.into(),
            path: None,
        }
    }
    /// A warning not tied to an attribute.
    pub fn warning(summary: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(summary, detail)
        }
    }
    /// The same diagnostic, pointed at the attribute `path`.
    pub fn at(mut self, path: AttributePath) -> Self {
        self.path = Some(path);
        self
    }

    /// The diagnostic as the CLIs get it. They follow a path into an
    /// attribute's list elements and map items but not into a nested
    /// object's attributes (they look those up among the block's own, and
    /// would quote an unrelated line), so the path sent stops at the nested
    /// object or element holding the attribute, and the detail names the
    /// full path.
    pub fn to_proto(&self) -> pb::Diagnostic {
        let (attribute, detail) = match &self.path {
            Some(path) => {
                let shown = path.shown_by_clis();
                let full = path.to_string();
                let named =
                    self.detail.contains(&full) || self.detail.starts_with(&shown.to_string());
                let detail = if shown.0.len() < path.0.len() && !named {
                    format!("{full}: {}", self.detail)
                } else {
                    self.detail.clone()
                };
                (Some(shown.to_proto()), detail)
            }
            None => (None, self.detail.clone()),
        };
        pb::Diagnostic {
            severity: match self.severity {
                Severity::Error => pb::diagnostic::Severity::Error,
                Severity::Warning => pb::diagnostic::Severity::Warning,
            } as i32,
            summary: self.summary.clone(),
            detail,
            attribute,
        }
    }
}

/// The diagnostics an operation collects; it failed if any is an error.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Adds one diagnostic.
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }
    /// Adds an error not tied to an attribute.
    pub fn error(&mut self, summary: impl Into<String>, detail: impl Into<String>) {
        self.push(Diagnostic::error(summary, detail));
    }
    /// Adds an error pointed at the attribute `path`.
    pub fn error_at(
        &mut self,
        path: AttributePath,
        summary: impl Into<String>,
        detail: impl Into<String>,
    ) {
        self.push(Diagnostic::error(summary, detail).at(path));
    }
    /// Adds all of `other`'s diagnostics, in order.
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }
    /// Whether the operation failed: any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }
    /// The wire form, in order.
    pub fn to_proto(&self) -> Vec<pb::Diagnostic> {
        self.0.iter().map(Diagnostic::to_proto).collect()
    }

    /// (attribute path, detail) of each diagnostic: what a user sees, in a
    /// form tests can compare.
    pub fn located(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|d| {
                (
                    d.path.as_ref().map(ToString::to_string).unwrap_or_default(),
                    d.detail.clone(),
                )
            })
            .collect()
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Self(vec![d])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clis_get_the_nearest_path_they_can_show_and_the_full_one_in_words() {
        let nested = AttributePath::attr("node_class").join_attr("name");
        let element = AttributePath::attr("taints").join_index(0).join_attr("key");
        let item = AttributePath::attr("labels").join_key("a/b");
        assert_eq!(nested.shown_by_clis(), AttributePath::attr("node_class"));
        assert_eq!(
            element.shown_by_clis(),
            AttributePath::attr("taints").join_index(0)
        );
        assert_eq!(item.shown_by_clis(), item);
        let sent = Diagnostic::error("Invalid", "must not be empty")
            .at(nested)
            .to_proto();
        assert_eq!(
            sent.attribute,
            Some(AttributePath::attr("node_class").to_proto())
        );
        assert_eq!(sent.detail, "node_class.name: must not be empty");
        // A detail that already names the path is left as it is.
        let sent = Diagnostic::error("Invalid", "taints[0].key: empty")
            .at(element)
            .to_proto();
        assert_eq!(sent.detail, "taints[0].key: empty");
        let sent = Diagnostic::error("Missing", "node_class: set `name`.")
            .at(AttributePath::attr("node_class").join_attr("name"))
            .to_proto();
        assert_eq!(sent.detail, "node_class: set `name`.");
        let sent = Diagnostic::error("Invalid", "bad key").at(item).to_proto();
        assert_eq!(sent.detail, "bad key");
    }
}
