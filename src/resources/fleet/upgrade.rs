//! State written by older schema versions of `gpufleet_fleet`.
//!
//! - 0 → 1: `limits` was an object of `gpus` (a number), `cpu` and
//!   `memory`; it is now a map from resource name (or `gpus`) to quantity.

use crate::protocol::{Diagnostic, Diagnostics};

/// The current schema version.
pub(super) const VERSION: i64 = 1;

/// Stored state of schema `version` in the current shape.
pub(super) fn upgrade(
    version: i64,
    mut state: serde_json::Value,
) -> Result<serde_json::Value, Diagnostics> {
    if version != 0 {
        return Err(Diagnostic::error(
            "Cannot upgrade resource state",
            format!("gpufleet_fleet has no upgrade from schema version {version}."),
        )
        .into());
    }
    if let Some(limits) = state.get_mut("limits")
        && let Some(object) = limits.as_object()
    {
        let map: serde_json::Map<String, serde_json::Value> = object
            .iter()
            .filter(|(_, quantity)| !quantity.is_null())
            .map(|(name, quantity)| {
                let quantity = match quantity {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (name.clone(), serde_json::Value::String(quantity))
            })
            .collect();
        *limits = if map.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::Object(map)
        };
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limits_become_a_map_of_quantities() {
        let old =
            json!({"name": "training", "limits": {"gpus": 64, "cpu": null, "memory": "4000Gi"}});
        assert_eq!(
            upgrade(0, old).unwrap(),
            json!({"name": "training", "limits": {"gpus": "64", "memory": "4000Gi"}})
        );
        let unlimited = json!({"name": "inference", "limits": null});
        assert_eq!(upgrade(0, unlimited.clone()).unwrap(), unlimited);
        assert!(upgrade(2, json!({})).is_err());
    }
}
