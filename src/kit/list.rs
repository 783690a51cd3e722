//! What every listable resource shares for `terraform query` (Terraform
//! 1.14+): the `list` block's `label_selector`, and listing by import, where
//! each object is taken as `terraform import` and the read after it take it,
//! so configuration generated from it plans nothing.

use super::Cluster;
use crate::cluster::names;
use crate::framework::schema::{Attr, ObjectSchema};
use crate::framework::{Listing, Private, Resource};
use crate::protocol::{Diagnostic, Diagnostics, Value};

/// The `list` block's schema: `label_selector`, then `extra` filters.
pub fn schema(extra: Vec<Attr>) -> ObjectSchema {
    let mut attrs = vec![
        Attr::string("label_selector")
            .optional()
            .validate(names::label_selector())
            .describe(
                "A Kubernetes label selector, e.g. `team=ml,tier!=batch`; every object when unset.",
            ),
    ];
    attrs.extend(extra);
    ObjectSchema::new("Which objects to list.", attrs)
}

/// The selector a `list` block's `config` (of [`schema`]) asks for.
pub fn label_selector(config: &Value) -> Option<&str> {
    config.attr("label_selector").as_str()
}

/// The warning for `what` (an object, as `api::describe` names it), left
/// out of a list because its state could not be taken, for the reasons
/// `why` gives; the other objects are listed.
pub fn left_out(what: &str, why: Diagnostics) -> Diagnostic {
    let reasons: Vec<String> = why
        .0
        .iter()
        .map(|d| format!("{}: {}", d.summary, d.detail))
        .collect();
    Diagnostic::warning(
        "Object left out of the list",
        format!(
            "{what} is not listed, the other objects are: {}",
            reasons.join("; ")
        ),
    )
}

/// Each of `names` as an import of it and the read after give it, leaving
/// out objects gone in between and those `keep` refuses.
pub async fn by_import<R: Resource<Cluster>>(
    resource: &R,
    cluster: &Cluster,
    names: impl IntoIterator<Item = String>,
    keep: impl Fn(&R::Model) -> bool,
) -> Result<Listing<R::Model>, Diagnostics> {
    let mut found = Vec::new();
    for name in names {
        let skeleton = resource.import(&name)?;
        let read = resource
            .read(cluster, skeleton, &Private::importing())
            .await?;
        if let Some(stored) = read.filter(|s| keep(&s.state)) {
            found.push((name, stored.state));
        }
    }
    Ok(found.into())
}
