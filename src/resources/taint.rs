//! Taints as fleets and node taints both declare them: the nested
//! attributes, and the rule that a node holds one taint per key and effect.

use std::collections::BTreeMap;

use crate::cluster::names::{label_value, qualified_name};
use crate::framework::schema::Attr;
use crate::framework::validators::one_of;
use crate::protocol::{AttributePath, Diagnostics, Value};

/// What a taint can do to pods that do not tolerate it.
pub const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// The attributes of one taint: `key`, `value`, `effect`.
pub fn taint_attributes() -> Vec<Attr> {
    vec![
        Attr::string("key")
            .required()
            .validate(qualified_name())
            .describe("e.g. `nvidia.com/gpu` or `workload`."),
        Attr::string("value")
            .optional()
            .validate(label_value())
            .describe("e.g. `training`; may be left out."),
        Attr::string("effect")
            .required()
            .validate(one_of(EFFECTS))
            .describe("What the taint does to pods that do not tolerate it."),
    ]
}

/// Reports a (key, effect) pair that appears twice across the taint lists
/// `lists` of `config`, at the repeating entry.
pub fn check_unique(config: &Value, lists: &[&str], diagnostics: &mut Diagnostics) {
    let mut first: BTreeMap<(&str, &str), String> = BTreeMap::new();
    for list in lists {
        for (index, taint) in config
            .attr(list)
            .elements()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let (Some(key), Some(effect)) =
                (taint.attr("key").as_str(), taint.attr("effect").as_str())
            else {
                continue;
            };
            let here = format!("{list}[{index}]");
            match first.get(&(key, effect)) {
                Some(earlier) => diagnostics.error_at(
                    AttributePath::attr(list).join_index(index),
                    "Duplicate taint",
                    format!(
                        "{here} repeats key {key:?} with effect {effect} from {earlier}: a node holds one taint per key and effect (the same key with another effect is fine)."
                    ),
                ),
                None => {
                    first.insert((key, effect), here);
                }
            }
        }
    }
}
