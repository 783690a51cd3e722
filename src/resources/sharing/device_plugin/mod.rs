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

mod reading;

pub use reading::{honoured, parse, same_behaviour};

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

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

    /// The sharing the device plugin's README documents: ten replicas of
    /// `nvidia.com/gpu` by time slicing or MPS, each with and without
    /// `renameByDefault`, written as we read the README. gpufleet's file for
    /// the same settings behaves exactly like each, and like no other.
    #[test]
    fn behaves_like_the_documented_examples() {
        let ten_gpus = json!([{"name": "nvidia.com/gpu", "replicas": 10}]);
        let documented = [
            (
                json!({"version": "v1", "sharing": {"timeSlicing": {"resources": ten_gpus}}}),
                gpu_shared(SharedBy::TimeSlicing, 10, false),
            ),
            (
                json!({"version": "v1", "sharing": {"timeSlicing": {
                    "renameByDefault": true, "resources": ten_gpus}}}),
                gpu_shared(SharedBy::TimeSlicing, 10, true),
            ),
            (
                json!({"version": "v1", "sharing": {"mps": {"resources": ten_gpus}}}),
                gpu_shared(SharedBy::Mps, 10, false),
            ),
            (
                json!({"version": "v1", "sharing": {"mps": {
                    "renameByDefault": true, "resources": ten_gpus}}}),
                gpu_shared(SharedBy::Mps, 10, true),
            ),
        ];
        for (i, (example, _)) in documented.iter().enumerate() {
            // JSON is YAML, and the plugin reads either.
            let example = example.to_string();
            for (j, (_, ours)) in documented.iter().enumerate() {
                assert_eq!(
                    same_behaviour(&example, &ours.to_yaml()),
                    i == j,
                    "{example}\nvs\n{}",
                    ours.to_yaml()
                );
            }
        }
        // What the plugin makes of the last one: every GPU shared, renamed,
        // and MPS refusing requests for more than one device.
        assert_eq!(
            honoured(&parse(&documented[3].0.to_string()).unwrap()),
            json!({
                "version": "v1",
                "flags": {"migStrategy": "none"},
                "sharing": {"mps": {
                    "renameByDefault": true,
                    "resources": [{
                        "name": "nvidia.com/gpu",
                        "devices": "all",
                        "replicas": 10,
                        "rename": "nvidia.com/gpu.shared",
                    }],
                    "failRequestsGreaterThanOne": true,
                }},
            })
        );
    }
}
