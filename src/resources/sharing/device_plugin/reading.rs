//! A configuration file read the way the plugin reads it (see the
//! module above for the rules).

use serde_json::{Map, Value, json};

const RESOURCE_PREFIX: &str = "nvidia.com/";

/// A configuration file as the plugin parses it, with its defaults
/// explicit: the version, resource names with their prefix, `devices`,
/// `renameByDefault`. Errors are the plugin's reasons to refuse the file.
pub fn parse(text: &str) -> Result<Value, String> {
    let value: Value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_saphyr::from_str(text).map_err(|e| format!("not YAML: {e}"))?
    };
    parse_value(&value)
}

/// [`parse`] of a value already read from YAML or JSON.
fn parse_value(value: &Value) -> Result<Value, String> {
    let empty = Map::new();
    let fields = match value {
        Value::Null => &empty,
        Value::Object(fields) => fields,
        other => return Err(format!("the configuration is not a mapping: {other}")),
    };
    let mut parsed = Map::new();
    match field(fields, "version") {
        None | Some(Value::Null) => {}
        Some(Value::String(v)) if v.is_empty() || v == "v1" => {}
        Some(other) => return Err(format!("unknown version: {}", plain(other))),
    }
    parsed.insert("version".into(), json!("v1"));
    match field(fields, "flags") {
        None | Some(Value::Null) => {}
        Some(Value::Object(flags)) => {
            parsed.insert("flags".into(), Value::Object(flags.clone()));
        }
        Some(other) => return Err(format!("flags is not a mapping: {other}")),
    }
    match field(fields, "sharing") {
        None | Some(Value::Null) => {}
        Some(Value::Object(sharing)) => {
            let mut blocks = Map::new();
            for name in ["timeSlicing", "mps"] {
                if let Some(block) = field(sharing, name).filter(|b| !b.is_null()) {
                    let parsed =
                        parse_replicated(block).map_err(|e| format!("sharing.{name}: {e}"))?;
                    blocks.insert(name.into(), parsed);
                }
            }
            parsed.insert("sharing".into(), Value::Object(blocks));
        }
        Some(other) => return Err(format!("sharing is not a mapping: {other}")),
    }
    Ok(Value::Object(parsed))
}

/// A `timeSlicing` or `mps` block as the plugin parses it.
fn parse_replicated(value: &Value) -> Result<Value, String> {
    let block = value
        .as_object()
        .ok_or_else(|| format!("not a mapping: {value}"))?;
    let rename_by_default = match block.get("renameByDefault") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("renameByDefault is not a boolean: {other}")),
    };
    let mut parsed = Map::new();
    parsed.insert("renameByDefault".into(), json!(rename_by_default));
    match block.get("failRequestsGreaterThanOne") {
        None => {}
        Some(Value::Bool(b)) => {
            parsed.insert("failRequestsGreaterThanOne".into(), json!(b));
        }
        Some(other) => {
            return Err(format!(
                "failRequestsGreaterThanOne is not a boolean: {other}"
            ));
        }
    }
    let resources = match block.get("resources") {
        Some(Value::Array(resources)) if !resources.is_empty() => resources,
        _ => return Err("no resources specified".into()),
    };
    let resources = resources
        .iter()
        .map(|r| {
            let mut resource = parse_resource(r)?;
            if rename_by_default && resource.get("rename").is_none() {
                let renamed = format!(
                    "{}{}",
                    resource["name"].as_str().unwrap_or_default(),
                    crate::catalog::SHARED_SUFFIX
                );
                resource["rename"] = json!(renamed);
            }
            Ok(resource)
        })
        .collect::<Result<Vec<_>, String>>()?;
    parsed.insert("resources".into(), Value::Array(resources));
    Ok(Value::Object(parsed))
}

/// One entry of a block's `resources` as the plugin parses it.
fn parse_resource(value: &Value) -> Result<Value, String> {
    let resource = value
        .as_object()
        .ok_or_else(|| format!("not a mapping: {value}"))?;
    let name = match resource.get("name") {
        Some(Value::String(name)) => resource_name(name)?,
        Some(other) => return Err(format!("the resource name is not a string: {other}")),
        None => return Err("no resource name specified".into()),
    };
    let devices = match resource.get("devices") {
        None => json!("all"),
        Some(devices) => parse_devices(devices)?,
    };
    let replicas = match resource.get("replicas") {
        None => return Err("no replicas specified".into()),
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| format!("replicas is not a whole number: {n}"))?,
        Some(other) => return Err(format!("replicas is not a number: {other}")),
    };
    if replicas < 2 {
        return Err("number of replicas must be >= 2".into());
    }
    let mut parsed = Map::new();
    parsed.insert("name".into(), json!(name));
    parsed.insert("devices".into(), devices);
    parsed.insert("replicas".into(), json!(replicas));
    match resource.get("rename") {
        None => {}
        Some(Value::String(rename)) => {
            parsed.insert("rename".into(), json!(resource_name(rename)?));
        }
        Some(other) => return Err(format!("rename is not a string: {other}")),
    }
    Ok(Value::Object(parsed))
}

/// A resource's `devices` as the plugin parses it: `all`, a count, or a
/// list of GPU indices, MIG indices (`0:1`) and GPU or MIG UUIDs.
fn parse_devices(value: &Value) -> Result<Value, String> {
    match value {
        Value::String(s) if s == "all" => Ok(json!("all")),
        Value::Number(n) => match n.as_i64() {
            Some(count) if count > 0 => Ok(json!({ "count": count })),
            _ => Err(format!("devices: {n} is not a count of one or more")),
        },
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Number(n) => n
                    .as_u64()
                    .map(|i| json!(i.to_string()))
                    .ok_or_else(|| format!("devices: {n} is not a GPU index")),
                Value::String(s) if is_device_id(s) => Ok(json!(s)),
                other => Err(format!("devices: {other} is not a GPU index or UUID")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|list| json!({ "list": list })),
        other => Err(format!(
            "devices: {other} is not \"all\", a count or a list"
        )),
    }
}

/// A GPU index (`0`), a MIG index (`0:1`), `GPU-<uuid>`, `MIG-<uuid>` or
/// `MIG-GPU-<uuid>/<gi>/<ci>`.
fn is_device_id(s: &str) -> bool {
    let index = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if index(s) {
        return true;
    }
    if let Some((gpu, mig)) = s.split_once(':') {
        return index(gpu) && index(mig);
    }
    if let Some(rest) = s.strip_prefix("MIG-GPU-") {
        let mut parts = rest.split('/');
        let uuid = parts.next().is_some_and(is_uuid);
        let tail: Vec<&str> = parts.collect();
        return uuid && tail.len() == 2 && tail.iter().all(|t| index(t));
    }
    s.strip_prefix("GPU-")
        .or_else(|| s.strip_prefix("MIG-"))
        .is_some_and(is_uuid)
}

/// `8-4-4-4-12` hexadecimal digits.
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The plugin's resource name: prefixed with `nvidia.com/` unless it is,
/// the rest a DNS subdomain, the whole at most 63 characters.
fn resource_name(name: &str) -> Result<String, String> {
    let full = if name.starts_with(RESOURCE_PREFIX) {
        name.to_string()
    } else {
        format!("{RESOURCE_PREFIX}{name}")
    };
    let rest = &full[RESOURCE_PREFIX.len()..];
    if full.len() > 63 {
        return Err(format!(
            "resource name {full:?} is longer than 63 characters"
        ));
    }
    crate::cluster::names::check_dns1123_subdomain(rest)
        .map_err(|_| format!("incorrect format for resource name {full:?}"))?;
    Ok(full)
}

/// The field `name` of a mapping the plugin reads into a struct, matched
/// in any case as Go's JSON decoding does.
fn field<'a>(fields: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    fields.get(name).or_else(|| {
        fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

fn plain(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

/// What the plugin does with a [`parse`]d configuration: `flags.migStrategy`
/// defaults to `none`; in each sharing block `devices` is always `all`, a
/// resource is renamed exactly when `renameByDefault` says so, and MPS fails
/// requests for more than one device unless the file says `false`.
pub fn honoured(parsed: &Value) -> Value {
    let mut honoured = parsed.clone();
    let flags = honoured["flags"].as_object().cloned().unwrap_or_default();
    let mut flags = flags;
    if field(&flags, "migStrategy").is_none() {
        flags.insert("migStrategy".into(), json!("none"));
    }
    honoured["flags"] = Value::Object(flags);
    if let Some(sharing) = honoured.get_mut("sharing").and_then(Value::as_object_mut) {
        for (name, block) in sharing.iter_mut() {
            let rename = block["renameByDefault"].as_bool().unwrap_or(false);
            if block.get("failRequestsGreaterThanOne").is_none() {
                block["failRequestsGreaterThanOne"] = json!(name == "mps");
            }
            for resource in block["resources"].as_array_mut().into_iter().flatten() {
                resource["devices"] = json!("all");
                let object = resource
                    .as_object_mut()
                    .expect("parsed resources are mappings");
                if rename {
                    let renamed = format!(
                        "{}{}",
                        object["name"].as_str().unwrap_or_default(),
                        crate::catalog::SHARED_SUFFIX
                    );
                    object.insert("rename".into(), json!(renamed));
                } else {
                    object.remove("rename");
                }
            }
        }
        if sharing.is_empty() {
            honoured
                .as_object_mut()
                .expect("a mapping")
                .remove("sharing");
        }
    }
    honoured
}

/// Whether two configuration texts make the plugin behave alike; a text the
/// plugin refuses is like no other.
pub fn same_behaviour(a: &str, b: &str) -> bool {
    match (parse(a), parse(b)) {
        (Ok(a), Ok(b)) => honoured(&a) == honoured(&b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The part of a configuration file a case is decoded as.
    #[derive(Debug, Clone, Copy)]
    enum Part {
        /// One entry of a block's `resources`.
        Resource,
        /// A whole `timeSlicing` or `mps` block.
        Block,
        /// A resource's `devices`.
        Devices,
    }

    /// Accepted, decoded to this value; or refused, with an error saying
    /// this.
    enum Outcome {
        Decodes(Value),
        Refused(&'static str),
    }
    use Outcome::{Decodes, Refused};

    /// Not JSON at all.
    const EMPTY: &str = "EOF while parsing";
    /// A comma before the closing brace: Go's decoder refuses these
    /// before any rule of the plugin sees them.
    const TRAILING_COMMA: &str = "trailing comma";
    const BAD_NAME: &str = "incorrect format for resource name";
    const NO_RESOURCES: &str = "no resources specified";

    /// The cases of the device plugin's own unit tests for decoding sharing
    /// settings (NVIDIA/k8s-device-plugin v0.20.0, api/config/v1/replicas_test.go),
    /// one row each: the part, the JSON it is given, the outcome the plugin
    /// asserts.
    fn plugin_cases() -> Vec<(Part, &'static str, Outcome)> {
        use Part::{Block, Devices, Resource};
        let gpu_uuid = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c";
        let listed = |ids: &[&str]| Decodes(json!({ "list": ids }));
        let one = |name: &str| json!({"name": name, "devices": "all", "replicas": 2});
        let renamed = json!({
            "name": "nvidia.com/valid", "devices": "all", "replicas": 2,
            "rename": "nvidia.com/valid-shared",
        });
        vec![
            (Resource, "", Refused(EMPTY)),
            (Resource, "{}", Refused("no resource name specified")),
            (Resource, r#"{"name": "valid",}"#, Refused(TRAILING_COMMA)),
            (
                Resource,
                r#"{"name": "valid", "devices": "all",}"#,
                Refused(TRAILING_COMMA),
            ),
            (
                Resource,
                r#"{"name": "valid", "devices": "all", "rename": "valid-shared",}"#,
                Refused(TRAILING_COMMA),
            ),
            (
                Resource,
                r#"{"name": "valid", "devices": "all", "replicas": 2}"#,
                Decodes(one("nvidia.com/valid")),
            ),
            (
                Resource,
                r#"{"name": "valid", "devices": "all", "replicas": 2, "rename": "valid-shared"}"#,
                Decodes(renamed.clone()),
            ),
            (
                Resource,
                r#"{"name": "valid", "replicas": -1,}"#,
                Refused(TRAILING_COMMA),
            ),
            (
                Resource,
                r#"{"name": "valid", "replicas": 0,}"#,
                Refused(TRAILING_COMMA),
            ),
            (
                Resource,
                r#"{"name": "valid", "replicas": 2}"#,
                Decodes(one("nvidia.com/valid")),
            ),
            (
                Resource,
                r#"{"name": "valid", "replicas": 2, "rename": "valid-shared"}"#,
                Decodes(renamed),
            ),
            (
                Resource,
                r#"{"name": "$invalid$", "replicas": 2, "rename": "valid-shared"}"#,
                Refused(BAD_NAME),
            ),
            (
                Resource,
                r#"{"name": "valid", "replicas": 2, "rename": "$invalid$"}"#,
                Refused(BAD_NAME),
            ),
            (Block, "", Refused(EMPTY)),
            (Block, "{}", Refused(NO_RESOURCES)),
            (Block, r#"{"resources": []}"#, Refused(NO_RESOURCES)),
            (
                Block,
                r#"{"resources": [{"name": "valid", "replicas": 2}]}"#,
                Decodes(json!({
                    "renameByDefault": false,
                    "resources": [one("nvidia.com/valid")],
                })),
            ),
            (
                Block,
                r#"{"resources": [{"name": "valid1", "replicas": 2}, {"name": "valid2", "replicas": 2}]}"#,
                Decodes(json!({
                    "renameByDefault": false,
                    "resources": [one("nvidia.com/valid1"), one("nvidia.com/valid2")],
                })),
            ),
            (
                Block,
                r#"{"resources": [{"name": "$invalid$", "replicas": 2}]}"#,
                Refused(BAD_NAME),
            ),
            (Devices, "", Refused(EMPTY)),
            (
                Devices,
                r#""not-all""#,
                Refused("is not \"all\", a count or a list"),
            ),
            (Devices, "-2", Refused("is not a count of one or more")),
            (Devices, "2.0", Refused("is not a count of one or more")),
            (Devices, "[-1]", Refused("devices: -1 is not a GPU index")),
            (Devices, r#"["-1"]"#, Refused("is not a GPU index or UUID")),
            (
                Devices,
                r#"["invalid-UUID"]"#,
                Refused("is not a GPU index or UUID"),
            ),
            (
                Devices,
                r#"["GPU-UUID"]"#,
                Refused("is not a GPU index or UUID"),
            ),
            (
                Devices,
                r#"["MIG-UUID"]"#,
                Refused("is not a GPU index or UUID"),
            ),
            // A MIG-GPU- UUID names a MIG device only with its GI and CI.
            (
                Devices,
                r#"["MIG-GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"]"#,
                Refused("is not a GPU index or UUID"),
            ),
            (Devices, r#""all""#, Decodes(json!("all"))),
            (Devices, "2", Decodes(json!({"count": 2}))),
            (Devices, "[0]", listed(&["0"])),
            (Devices, r#"["0"]"#, listed(&["0"])),
            (Devices, r#"["0:0"]"#, listed(&["0:0"])),
            (
                Devices,
                r#"["GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"]"#,
                listed(&[gpu_uuid]),
            ),
            (
                Devices,
                r#"["MIG-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"]"#,
                listed(&["MIG-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"]),
            ),
            (
                Devices,
                r#"["MIG-GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c/0/0"]"#,
                listed(&["MIG-GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c/0/0"]),
            ),
            (
                Devices,
                r#"[0, "0:0", "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"]"#,
                listed(&["0", "0:0", gpu_uuid]),
            ),
            (
                Devices,
                r#"["0", "0:0", "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"]"#,
                listed(&["0", "0:0", gpu_uuid]),
            ),
        ]
    }

    /// Every case of the plugin's own unit tests is accepted or refused as
    /// the plugin does, accepted ones decode to what it decodes, refused
    /// ones for the reason it has.
    #[test]
    fn classifies_the_plugins_test_cases_alike() {
        let cases = plugin_cases();
        for (part, input, expected) in &cases {
            // The plugin's unit tests feed these to Go's JSON decoder.
            let outcome = serde_json::from_str::<Value>(input)
                .map_err(|e| e.to_string())
                .and_then(|v| match part {
                    Part::Resource => parse_resource(&v),
                    Part::Block => parse_replicated(&v),
                    Part::Devices => parse_devices(&v),
                });
            match (expected, outcome) {
                (Decodes(value), Ok(decoded)) => assert_eq!(&decoded, value, "{part:?} {input}"),
                (Refused(why), Err(e)) => assert!(e.contains(why), "{part:?} {input}: {e}"),
                (Decodes(_), Err(e)) => panic!("{part:?} {input} refused: {e}"),
                (Refused(_), Ok(v)) => panic!("{part:?} {input} accepted: {v}"),
            }
        }
        let count = |p: fn(&Part) -> bool| cases.iter().filter(|(part, ..)| p(part)).count();
        assert_eq!(
            (
                count(|p| matches!(p, Part::Resource)),
                count(|p| matches!(p, Part::Block)),
                count(|p| matches!(p, Part::Devices)),
            ),
            (13, 6, 20),
            "one row per upstream case"
        );
    }

    /// The two whole files of the plugin's config_test.go (same release):
    /// MPS refuses requests for more than one device unless the file says
    /// `failRequestsGreaterThanOne: false`.
    #[test]
    fn mps_fails_larger_requests_unless_told_not_to() {
        for (setting, fails) in [("", true), ("failRequestsGreaterThanOne: false, ", false)] {
            let file = format!(
                "version: v1\nsharing:\n  mps: {{{setting}resources: [{{name: nvidia.com/gpu, replicas: 2}}]}}\n"
            );
            let read = honoured(&parse(&file).unwrap());
            assert_eq!(
                read["sharing"]["mps"]["failRequestsGreaterThanOne"],
                json!(fails),
                "{file}"
            );
        }
    }

    /// The rules the trailing-comma cases above were meant to reach.
    #[test]
    fn replicas_are_required_and_two_or_more() {
        for (replicas, why) in [
            ("", "no replicas specified"),
            (r#", "replicas": -1"#, "must be >= 2"),
            (r#", "replicas": 0"#, "must be >= 2"),
            (r#", "replicas": 1"#, "must be >= 2"),
        ] {
            let input: Value =
                serde_json::from_str(&format!(r#"{{"name": "valid"{replicas}}}"#)).unwrap();
            let e = parse_resource(&input).unwrap_err();
            assert!(e.contains(why), "{input}: {e}");
        }
    }

    #[test]
    fn reading_follows_the_plugin() {
        // Unknown keys are ignored, known ones match in any case at the top.
        assert!(same_behaviour(
            "version: v1\nSharing:\n  TimeSlicing:\n    resources: [{name: gpu, replicas: 2}]\n    extra: 1\n",
            "sharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 2, devices: [0]}]\n",
        ));
        assert!(
            parse("version: v2")
                .unwrap_err()
                .contains("unknown version")
        );
        assert!(parse("sharing: {mps: {Resources: [{name: gpu, replicas: 2}]}}").is_err());
        assert!(parse("sharing: {mps: {resources: [{name: gpu, replicas: 1}]}}").is_err());
        assert!(parse("[1, 2]").is_err());
        assert_eq!(
            honoured(&parse("").unwrap()),
            json!({"version": "v1", "flags": {"migStrategy": "none"}})
        );
        // An explicit failRequestsGreaterThanOne: false is kept for MPS.
        assert!(!same_behaviour(
            "sharing: {mps: {resources: [{name: gpu, replicas: 2}]}}",
            "sharing: {mps: {failRequestsGreaterThanOne: false, resources: [{name: gpu, replicas: 2}]}}",
        ));
        assert!(!same_behaviour("not: [valid", "not: [valid"));
    }
}
