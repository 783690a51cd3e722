//! The NVIDIA device plugin's configuration file (`version: v1`): written
//! from a typed model, and read the way the plugin reads it.
//!
//! The plugin's parser ignores keys it does not know (a `renameByDefault`
//! one level too high silently does nothing), so gpufleet never writes the
//! file by hand: [`Config`] has exactly the fields the plugin reads, and
//! serde spells them. Reading ([`parse`], then [`honoured`]) follows the
//! plugin's rules: field names of the file, `flags` and `sharing` match in
//! any case, those inside a `timeSlicing`/`mps` block exactly; `resources`
//! must be non-empty; names gain the `nvidia.com/` prefix and must then be a
//! DNS subdomain of at most 63 characters; `replicas` is a whole number of 2
//! or more; `devices` is `all`, a count or a list of indices and UUIDs. The
//! plugin then ignores `devices` and `rename` (it shares every GPU, and
//! renames only with `renameByDefault`), and MPS fails requests for more than
//! one device unless told otherwise: [`honoured`] is the configuration with
//! those rules applied, so two files that behave alike compare equal.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

const RESOURCE_PREFIX: &str = "nvidia.com/";

/// A device-plugin configuration file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    version: Version,
    flags: Flags,
    #[serde(skip_serializing_if = "Option::is_none")]
    sharing: Option<SharingBlock>,
}

/// The only version the plugin reads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
enum Version {
    #[serde(rename = "v1")]
    V1,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Flags {
    mig_strategy: MigStrategy,
}

/// How the plugin advertises MIG devices: not at all, all alike as
/// `nvidia.com/gpu`, or each profile under its own name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MigStrategy {
    /// MIG devices are not advertised.
    None,
    /// Every GPU of a node has one profile, advertised as `nvidia.com/gpu`.
    Single,
    /// Each profile is its own resource, `nvidia.com/mig-1g.10gb`.
    Mixed,
}

impl MigStrategy {
    /// The spellings, in declaration order.
    pub const NAMES: &'static [&'static str] = &["none", "single", "mixed"];

    /// Parses one of [`NAMES`](Self::NAMES).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::None),
            "single" => Some(Self::Single),
            "mixed" => Some(Self::Mixed),
            _ => None,
        }
    }

    /// The spelling.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// The two ways the plugin shares a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedBy {
    /// Time slicing: `sharing.timeSlicing`.
    TimeSlicing,
    /// CUDA MPS: `sharing.mps`.
    Mps,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct SharingBlock {
    #[serde(skip_serializing_if = "Option::is_none")]
    time_slicing: Option<Replicated>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mps: Option<Replicated>,
}

/// What is shared and how many ways: a `timeSlicing` or `mps` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replicated {
    rename_by_default: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    fail_requests_greater_than_one: Option<bool>,
    resources: Vec<ReplicatedResource>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct ReplicatedResource {
    name: String,
    replicas: u32,
}

impl Replicated {
    /// Every resource in `resources` shared `replicas` ways;
    /// `fail_requests_greater_than_one` unset leaves the plugin's default.
    pub fn new(
        resources: impl IntoIterator<Item = String>,
        replicas: u32,
        rename_by_default: bool,
        fail_requests_greater_than_one: Option<bool>,
    ) -> Self {
        Self {
            rename_by_default,
            fail_requests_greater_than_one,
            resources: resources
                .into_iter()
                .map(|name| ReplicatedResource { name, replicas })
                .collect(),
        }
    }
}

impl Config {
    /// A configuration with MIG strategy `mig_strategy` and, unless
    /// `sharing` is `None`, sharing. There is no "shared once": a file
    /// without sharing is how the plugin is told not to share.
    pub fn new(mig_strategy: MigStrategy, sharing: Option<(SharedBy, Replicated)>) -> Self {
        Self {
            version: Version::V1,
            flags: Flags { mig_strategy },
            sharing: sharing.map(|(by, replicated)| match by {
                SharedBy::TimeSlicing => SharingBlock {
                    time_slicing: Some(replicated),
                    mps: None,
                },
                SharedBy::Mps => SharingBlock {
                    time_slicing: None,
                    mps: Some(replicated),
                },
            }),
        }
    }

    /// The file as YAML.
    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(self).expect("the configuration model serializes")
    }
}

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
pub fn parse_value(value: &Value) -> Result<Value, String> {
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
pub fn parse_replicated(value: &Value) -> Result<Value, String> {
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
pub fn parse_resource(value: &Value) -> Result<Value, String> {
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
pub fn parse_devices(value: &Value) -> Result<Value, String> {
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

    fn gpu_shared(by: SharedBy, replicas: u32, rename: bool) -> Config {
        Config::new(
            MigStrategy::None,
            Some((
                by,
                Replicated::new(["nvidia.com/gpu".to_string()], replicas, rename, None),
            )),
        )
    }

    #[test]
    fn writes_exactly_the_fields_the_plugin_reads() {
        let yaml = gpu_shared(SharedBy::TimeSlicing, 4, true).to_yaml();
        let value: Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(
            value,
            json!({
                "version": "v1",
                "flags": {"migStrategy": "none"},
                "sharing": {"timeSlicing": {
                    "renameByDefault": true,
                    "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
                }},
            })
        );
        let unshared: Value =
            serde_saphyr::from_str(&Config::new(MigStrategy::Mixed, None).to_yaml()).unwrap();
        assert_eq!(
            unshared,
            json!({"version": "v1", "flags": {"migStrategy": "mixed"}})
        );
    }

    /// NVIDIA's own examples behave exactly like the configuration gpufleet
    /// writes for the same settings.
    #[test]
    fn equals_nvidias_examples() {
        let fixtures = [
            (
                include_str!("../../../tests/fixtures/nvidia/readme-time-slicing.yaml"),
                gpu_shared(SharedBy::TimeSlicing, 10, false),
            ),
            (
                include_str!("../../../tests/fixtures/nvidia/readme-time-slicing-rename.yaml"),
                gpu_shared(SharedBy::TimeSlicing, 10, true),
            ),
            (
                include_str!("../../../tests/fixtures/nvidia/readme-mps.yaml"),
                gpu_shared(SharedBy::Mps, 10, false),
            ),
            (
                include_str!("../../../tests/fixtures/nvidia/readme-mps-rename.yaml"),
                gpu_shared(SharedBy::Mps, 10, true),
            ),
            (
                include_str!("../../../tests/fixtures/nvidia/time-slicing-plugin-config.yaml"),
                gpu_shared(SharedBy::TimeSlicing, 10, false),
            ),
        ];
        for (example, ours) in fixtures {
            assert!(
                same_behaviour(example, &ours.to_yaml()),
                "{example}\nvs\n{}",
                ours.to_yaml()
            );
        }
        assert!(!same_behaviour(
            include_str!("../../../tests/fixtures/nvidia/readme-mps.yaml"),
            &gpu_shared(SharedBy::TimeSlicing, 10, false).to_yaml()
        ));
    }

    /// Every valid and invalid case of the plugin's own unit tests is
    /// classified as the plugin classifies it, and valid ones decode to
    /// what the plugin decodes.
    #[test]
    fn classifies_the_plugins_test_cases_alike() {
        let cases: Value = serde_saphyr::from_str(include_str!(
            "../../../tests/fixtures/nvidia/testcases-sharing.yaml"
        ))
        .unwrap();
        type Parser = fn(&Value) -> Result<Value, String>;
        let groups: [(&str, Parser); 3] = [
            ("replicated_resource", parse_resource),
            ("replicated_resources", parse_replicated),
            ("replicated_devices", parse_devices),
        ];
        let mut checked = 0;
        for (group, parse_one) in groups {
            for case in cases[group].as_array().unwrap() {
                let input = case["input"].as_str().unwrap();
                // The plugin's unit tests feed these to Go's JSON decoder.
                let outcome = serde_json::from_str::<Value>(input)
                    .map_err(|e| e.to_string())
                    .and_then(|v| parse_one(&v));
                let line = &case["line"];
                match case["expect"].as_str().unwrap() {
                    "ok" => {
                        let decoded =
                            outcome.unwrap_or_else(|e| panic!("{group} line {line}: {e}"));
                        // The upstream assertion leaves out the default `false`.
                        let mut expected = case["decoded"].clone();
                        if group == "replicated_resources" {
                            expected["renameByDefault"] = json!(false);
                        }
                        assert_eq!(decoded, expected, "{group} line {line}");
                    }
                    _ => assert!(
                        outcome.is_err(),
                        "{group} line {line} accepted: {outcome:?}"
                    ),
                }
                checked += 1;
            }
        }
        for case in cases["full_config_files"].as_array().unwrap() {
            let parsed = honoured(&parse(case["input"].as_str().unwrap()).unwrap());
            let asserted = &case["asserted"]["sharing"]["mps"]["failRequestsGreaterThanOne"];
            assert_eq!(
                &parsed["sharing"]["mps"]["failRequestsGreaterThanOne"],
                asserted
            );
            checked += 1;
        }
        assert_eq!(checked, 41);
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
