//! GPU sharing as the three resources declare it: the cluster-wide default
//! (`gpufleet_gpu_sharing`), a fleet's own (`gpu_sharing` on
//! `gpufleet_fleet`) and that of existing nodes (`gpufleet_node_sharing`).
//!
//! Each writes one key of the device-plugin ConfigMap (`default`,
//! `fleet-NAME`, `node-NAME`) with a field manager of its own, and nodes
//! pick a key with the `nvidia.com/device-plugin.config` label (MIG layouts
//! with `nvidia.com/mig.config`). Settings are checked here, at plan time,
//! against every GPU model they will run on (`checks`).
//!
//! - [`device_plugin`]: the configuration file, typed, and how the plugin reads it.
//! - [`writes`]: writing a key and restarting the device-plugin pods it affects.
//! - [`checks`]: the settings checked at plan time against the GPU models they run on.
//! - [`caveats`]: how a fleet's or node's sharing goes with the cluster's MIG strategy.

pub mod caveats;
mod checks;
pub mod cluster_policy;
pub mod device_plugin;
pub mod writes;

pub use caveats::{Refusal, refused_under};
pub use checks::{Models, check};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::catalog::{self, Accelerator, GPU_RESOURCE, MigLayout, shared_resource};
use crate::framework::schema::Attr;
use crate::framework::validators::{Validator, one_of};
use crate::protocol::{AttributePath, Diagnostics, Value};
use device_plugin::{Config, MigStrategy, Replicated, SharedBy};

/// The node label that picks a key of the device-plugin ConfigMap.
pub const CONFIG_LABEL: &str = "nvidia.com/device-plugin.config";
/// The node label that picks the MIG layout mig-manager applies.
pub const MIG_CONFIG_LABEL: &str = "nvidia.com/mig.config";
/// The key nodes without [`CONFIG_LABEL`] use.
pub const DEFAULT_KEY: &str = "default";
/// Who owns [`DEFAULT_KEY`] and the ClusterPolicy fields
/// (`gpufleet_gpu_sharing`).
pub const DEFAULT_OWNER: &str = "sharing-default";
/// Who holds [`DEFAULT_KEY`] with a configuration that shares nothing
/// while a device plugin may read the ConfigMap and no
/// `gpufleet_gpu_sharing` sets it (see [`writes::ConfigKey::release`]).
pub const UNSHARED_OWNER: &str = "unshared-default";

/// The device plugin shares a device at least 2 ways and sets no upper
/// bound (NVIDIA k8s-device-plugin, api/config/v1/replicas.go).
const MIN_REPLICAS: i64 = 2;
/// `replicas`: a whole number of at least [`MIN_REPLICAS`] that fits the
/// state's `u32`.
fn replicas_validator() -> Validator {
    Validator::new(format!("A whole number of at least {MIN_REPLICAS}."), |v| {
        let Some(n) = v.as_number() else {
            return Ok(());
        };
        let text = crate::protocol::value::number_text(n);
        if !n.is_integer() {
            return Err(format!("{text} is not a whole number"));
        }
        match v.as_i64() {
            Some(i) if i < MIN_REPLICAS => Err(format!(
                "{i} is below {MIN_REPLICAS}: the device plugin shares a GPU at least 2 ways"
            )),
            Some(i) if u32::try_from(i).is_ok() => Ok(()),
            _ => Err(format!("{text} is more than {} pods per GPU", u32::MAX)),
        }
    })
}

/// How a GPU is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Dedicated GPUs.
    None,
    /// Time slicing.
    TimeSlicing,
    /// CUDA MPS.
    Mps,
    /// MIG partitions.
    Mig,
}

impl Strategy {
    /// The strategies of the cluster-wide default (the GPU Operator's one
    /// switch has no MIG: MIG is per node).
    pub const CLUSTER: &'static [&'static str] = &["none", "time_slicing", "mps"];
    /// The strategies of fleets and nodes.
    pub const NODES: &'static [&'static str] = &["none", "time_slicing", "mps", "mig"];

    /// Parses one of [`NODES`](Self::NODES).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::None),
            "time_slicing" => Some(Self::TimeSlicing),
            "mps" => Some(Self::Mps),
            "mig" => Some(Self::Mig),
            _ => None,
        }
    }
}

/// The sharing settings every sharing resource has.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// `none`, `time_slicing`, `mps` or `mig`.
    pub strategy: String,
    /// Pods per GPU (per MIG device with `mig`).
    pub replicas: Option<u32>,
    /// The MIG layout; fleets and nodes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_layout: Option<String>,
    /// Advertise shared devices as `<resource>.shared`.
    pub rename_by_default: Option<bool>,
    /// Refuse requests for more than one shared device.
    pub fail_requests_greater_than_one: Option<bool>,
    /// The MIG strategy the nodes' device plugin runs with: what
    /// `gpufleet_gpu_sharing` sets, and what a fleet or node sharing plans
    /// with (configured, or read from the cluster when the plan is made).
    #[serde(default)]
    pub mig_strategy: Option<String>,
}

/// The sharing attributes: `strategy` (one of `strategies`), `replicas`,
/// `mig_layout` (when `with_mig`), `rename_by_default`,
/// `fail_requests_greater_than_one`.
pub fn attributes(strategies: &'static [&'static str], with_mig: bool) -> Vec<Attr> {
    let mut attrs = vec![
        Attr::string("strategy")
            .required()
            .validate(one_of(strategies))
            .describe(if with_mig {
                "`none` (dedicated GPUs), `time_slicing` (any GPU; no memory isolation), `mps` (memory and compute split evenly, isolated from Volta on) or `mig` (hardware partitions, see `mig_layout`)."
            } else {
                "`none` (dedicated GPUs), `time_slicing` (any GPU; no memory isolation) or `mps` (memory and compute split evenly, isolated from Volta on)."
            }),
        Attr::number("replicas")
            .optional()
            .validate(replicas_validator())
            .describe(if with_mig {
                "Pods per GPU; needed by `time_slicing` and `mps`. With `mig`, time-slices each MIG device this many ways (or, with `all-disabled`, each whole GPU). MPS allows at most 48, and 16 below compute capability 7.5."
            } else {
                "Pods per GPU; needed by `time_slicing` and `mps`. MPS allows at most 48, and 16 below compute capability 7.5."
            }),
    ];
    if with_mig {
        attrs.push(
            Attr::string("mig_layout")
                .optional()
                .validate(Validator::string_with(
                    "A layout mig-manager knows: `all-disabled`, `all-enabled`, `all-balanced` or `all-<profile>` such as `all-1g.10gb` (`+me` spelled `.me`).",
                    |name| {
                        if catalog::is_known_layout(name) {
                            return Ok(());
                        }
                        // A profile or `balanced` without `all-`, or `+me` as the profile
                        // spells it, is one layout's name misspelt.
                        let meant = catalog::single_profile_layout(
                            name.strip_prefix("all-").unwrap_or(name),
                        );
                        if catalog::is_known_layout(&meant) {
                            return Err(format!(
                                "{name:?} is not a MIG layout: did you mean `{meant}`? A layout fills every GPU with one profile (`all-<profile>`), or is all-disabled, all-enabled or all-balanced"
                            ));
                        }
                        Err(format!(
                            "{name:?} is not a MIG layout: use all-disabled, all-enabled, all-balanced or all-<profile> with a profile of the GPU (see `gpufleet_accelerators`)"
                        ))
                    },
                ))
                .describe("The MIG layout with `strategy = \"mig\"`, applied by mig-manager through the `nvidia.com/mig.config` node label. A fleet's layout is checked against its models, and against their parts where mig-manager's default configuration applies a layout to some parts only (`all-1g.35gb` to the H200 SXM, not the H200 NVL)."),
        );
    }
    if with_mig {
        attrs.push(
            Attr::string("mig_strategy")
                .optional()
                .computed()
                .validate(one_of(MigStrategy::NAMES))
                .describe("The MIG strategy the nodes' device plugin runs with (`none`, `single` or `mixed`), which decides what MIG devices are advertised as: under `single` every MIG device as `nvidia.com/gpu`, under `mixed` each profile as its own resource (`nvidia.com/mig-1g.10gb`). Set it to `gpufleet_gpu_sharing.NAME.mig_strategy` when that resource sets the strategy in the same configuration: the plan then uses the strategy the apply sets, and Terraform applies it first. Unset, it is the GPU Operator's ClusterPolicy's (`spec.mig.strategy`; without the operator, or unset there, `mixed`), which apply reads before writing anything (known after apply on create; a change made there shows in the next plan); null without MIG devices. Set, apply checks before writing anything that the cluster runs it."),
        );
    }
    attrs.extend([
        Attr::bool("rename_by_default")
            .default(Value::Bool(false))
            .describe("Advertise shared devices as `<resource>.shared` (e.g. `nvidia.com/gpu.shared`), so pods ask for shared GPUs by name."),
        Attr::bool("fail_requests_greater_than_one")
            .optional()
            .describe("Refuse a pod asking for more than one shared device (it would get no more GPU). Unset: the device plugin's default, off for time slicing and on for MPS."),
    ]);
    attrs
}

impl Settings {
    /// The strategy; `None` for a value no validation let through.
    pub fn strategy(&self) -> Strategy {
        Strategy::parse(&self.strategy).unwrap_or(Strategy::None)
    }

    fn renames(&self) -> bool {
        self.rename_by_default == Some(true)
    }

    /// Whether its configuration key shares devices (time slicing or MPS,
    /// also of MIG devices), which only a device plugin reading the key
    /// does; MIG partitions alone come from mig-manager and the MIG
    /// strategy, whichever key the plugin reads.
    pub fn replicates(&self) -> bool {
        self.strategy() != Strategy::None && self.replicas.is_some()
    }

    /// The planned MIG strategy; `None` when unset or unknown.
    pub fn mig(&self) -> Option<MigStrategy> {
        self.mig_strategy.as_deref().and_then(MigStrategy::parse)
    }

    /// The MIG strategy written to the configuration's `flags.migStrategy`:
    /// the planned one, else `mixed` for MIG (each profile its own
    /// resource, what a node advertises without the GPU Operator) and
    /// `none` otherwise.
    pub fn key_mig_strategy(&self) -> MigStrategy {
        self.mig().unwrap_or(if self.strategy() == Strategy::Mig {
            MigStrategy::Mixed
        } else {
            MigStrategy::None
        })
    }

    /// The layout of `models` (the first that has it), or of any catalog
    /// model when the models are unknown.
    pub fn layout(&self, models: &[&'static Accelerator]) -> Option<MigLayout> {
        let name = self.mig_layout.as_deref()?;
        let candidates: Vec<&'static Accelerator> = if models.is_empty() {
            catalog::all().iter().collect()
        } else {
            models.to_vec()
        };
        candidates.iter().find_map(|m| m.mig_layout(name))
    }

    /// The MIG device resources the layout makes on `models` (any catalog
    /// model with that layout when unknown: the plugin skips the names a
    /// node does not have).
    fn mig_resources(&self, models: &[&'static Accelerator]) -> Vec<String> {
        let Some(name) = self.mig_layout.as_deref() else {
            return Vec::new();
        };
        let candidates: Vec<&'static Accelerator> = if models.is_empty() {
            catalog::all().iter().collect()
        } else {
            models.to_vec()
        };
        let mut names: Vec<String> = Vec::new();
        for layout in candidates.iter().filter_map(|m| m.mig_layout(name)) {
            if !layout.mig_enabled {
                continue;
            }
            for (resource, _) in layout.resources() {
                if !names.contains(&resource) {
                    names.push(resource);
                }
            }
        }
        names
    }

    /// The device-plugin configuration these settings make, with the MIG
    /// strategy of [`key_mig_strategy`](Self::key_mig_strategy). Time-sliced
    /// MIG devices are `nvidia.com/gpu` under `single`, which advertises
    /// them so (NVIDIA k8s-device-plugin, internal/rm/device_map.go).
    pub fn device_plugin_config(&self, models: &[&'static Accelerator]) -> Config {
        let strategy = self.strategy();
        let mig_strategy = self.key_mig_strategy();
        let replicated = |resources: Vec<String>, replicas: u32| {
            Replicated::new(
                resources,
                replicas,
                self.renames(),
                self.fail_requests_greater_than_one,
            )
        };
        let gpu = || vec![GPU_RESOURCE.to_string()];
        let sharing = match (strategy, self.replicas) {
            (Strategy::TimeSlicing, Some(r)) => Some((SharedBy::TimeSlicing, replicated(gpu(), r))),
            (Strategy::Mps, Some(r)) => Some((SharedBy::Mps, replicated(gpu(), r))),
            (Strategy::Mig, Some(r))
                if self.mig_layout.as_deref() == Some(catalog::MIG_DISABLED)
                    || mig_strategy == MigStrategy::Single =>
            {
                Some((SharedBy::TimeSlicing, replicated(gpu(), r)))
            }
            (Strategy::Mig, Some(r)) => {
                let resources = self.mig_resources(models);
                (!resources.is_empty()).then(|| (SharedBy::TimeSlicing, replicated(resources, r)))
            }
            _ => None,
        };
        Config::new(mig_strategy, sharing)
    }

    /// The node labels that select `key` (and the MIG layout).
    pub fn node_labels(&self, key: &str) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([(CONFIG_LABEL.to_string(), key.to_string())]);
        if self.strategy() == Strategy::Mig
            && let Some(layout) = &self.mig_layout
        {
            labels.insert(MIG_CONFIG_LABEL.to_string(), layout.clone());
        }
        labels
    }

    /// What one GPU of `models` advertises with these settings when the
    /// device plugin runs with the MIG strategy `mig` (NVIDIA
    /// k8s-device-plugin, internal/rm/device_map.go and rm.go): MIG devices
    /// each under their profile's name with `mixed`, all as
    /// `nvidia.com/gpu` with `single` (which refuses a layout of several
    /// profiles, see [`refused_under`]), the whole GPU with `none`; shared
    /// × `replicas` when time-sliced.
    pub fn advertised(&self, models: &[&'static Accelerator], mig: MigStrategy) -> Advertised {
        let shared = |resource: String| {
            if self.renames() {
                shared_resource(&resource)
            } else {
                resource
            }
        };
        let whole = Advertised {
            resource: Some(GPU_RESOURCE.to_string()),
            per_gpu: Vec::new(),
            hides_whole_gpus: false,
        };
        let whole_shared = |r: u32| Advertised {
            resource: Some(shared(GPU_RESOURCE.to_string())),
            per_gpu: vec![(shared(GPU_RESOURCE.to_string()), r)],
            hides_whole_gpus: self.renames(),
        };
        match (self.strategy(), self.replicas) {
            (Strategy::TimeSlicing | Strategy::Mps, Some(r)) => whole_shared(r),
            (Strategy::Mig, replicas) => match self.layout(models) {
                Some(layout) if layout.mig_enabled => match mig {
                    MigStrategy::Mixed => {
                        let factor = replicas.unwrap_or(1);
                        let per_gpu: Vec<(String, u32)> = layout
                            .resources()
                            .into_iter()
                            .map(|(r, n)| {
                                let r = if replicas.is_some() { shared(r) } else { r };
                                (r, n * factor)
                            })
                            .collect();
                        Advertised {
                            resource: per_gpu.first().map(|(r, _)| r.clone()),
                            per_gpu,
                            hides_whole_gpus: true,
                        }
                    }
                    MigStrategy::Single => match layout.devices.as_slice() {
                        [(_, count)] => {
                            let resource = match replicas {
                                Some(_) => shared(GPU_RESOURCE.to_string()),
                                None => GPU_RESOURCE.to_string(),
                            };
                            let per_gpu = u32::from(*count) * replicas.unwrap_or(1);
                            Advertised {
                                resource: Some(resource.clone()),
                                per_gpu: vec![(resource, per_gpu)],
                                hides_whole_gpus: replicas.is_some() && self.renames(),
                            }
                        }
                        _ => Advertised {
                            resource: None,
                            per_gpu: Vec::new(),
                            hides_whole_gpus: true,
                        },
                    },
                    MigStrategy::None => whole,
                },
                Some(layout) if !layout.mig_enabled => replicas.map_or(whole, whole_shared),
                _ => whole,
            },
            _ => whole,
        }
    }
}

/// What one physical GPU advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advertised {
    /// The resource workloads ask for: the first (smallest) device kind;
    /// `None` when the GPU advertises nothing (`all-enabled`).
    pub resource: Option<String>,
    /// Each resource and how many of it, where that differs from one whole
    /// `nvidia.com/gpu`; empty when it does not.
    pub per_gpu: Vec<(String, u32)>,
    /// Whether `nvidia.com/gpu` disappears (renamed, or split by MIG).
    pub hides_whole_gpus: bool,
}

impl Advertised {
    /// How many of [`resource`](Self::resource) one GPU advertises.
    pub fn units_per_gpu(&self) -> u32 {
        match &self.resource {
            None => 0,
            Some(r) => self
                .per_gpu
                .iter()
                .find(|(name, _)| name == r)
                .map_or(1, |(_, n)| *n),
        }
    }

    /// The capacity a node with `gpus` GPUs advertises, for Karpenter to
    /// plan with; empty when it is the plain `nvidia.com/gpu` count.
    pub fn node_capacity(&self, gpus: u32) -> BTreeMap<String, String> {
        let mut capacity: BTreeMap<String, String> = self
            .per_gpu
            .iter()
            .map(|(r, n)| (r.clone(), (n * gpus).to_string()))
            .collect();
        if self.hides_whole_gpus {
            capacity
                .entry(GPU_RESOURCE.to_string())
                .or_insert_with(|| "0".into());
        }
        capacity
    }
}

/// Checks that `key`, the ConfigMap key a resource named at `path` writes,
/// can also be the value of [`CONFIG_LABEL`] on its nodes (Kubernetes label
/// values hold at most 63 characters).
pub fn check_key_length(key: &str, path: AttributePath, diagnostics: &mut Diagnostics) {
    const LABEL_VALUE_MAX: usize = 63;
    if key.len() > LABEL_VALUE_MAX {
        let prefix = key.len() - key.split_once('-').map_or(key, |(_, n)| n).len();
        diagnostics.error_at(
            path,
            "Name too long for the sharing label",
            format!(
                "The device-plugin configuration key `{key}` ({} characters) is also the value of the `{CONFIG_LABEL}` label that selects it on the nodes, and label values hold at most {LABEL_VALUE_MAX} characters: the name may have at most {}.",
                key.len(),
                LABEL_VALUE_MAX - prefix
            ),
        );
    }
}

/// The field manager of a key owner: `gpufleet-fleet-inference`.
pub fn field_manager(owner: &str) -> String {
    format!("{}-{owner}", crate::cluster::FIELD_MANAGER)
}

/// Settings read back from a configuration the plugin accepts (as
/// [`device_plugin::parse`] gives it) and the node's MIG layout label, for
/// an import: the attributes that write such a configuration. Whatever they
/// cannot express shows as a difference in `device_plugin_config`.
pub fn settings_from(parsed: &Json, mig_layout: Option<String>) -> Settings {
    let sharing = &parsed["sharing"];
    let (block, by) = if sharing["mps"].is_object() {
        (&sharing["mps"], "mps")
    } else if sharing["timeSlicing"].is_object() {
        (&sharing["timeSlicing"], "time_slicing")
    } else {
        (&Json::Null, "none")
    };
    let strategy = if mig_layout.is_some() { "mig" } else { by };
    let replicas = block["resources"][0]["replicas"]
        .as_u64()
        .and_then(|r| u32::try_from(r).ok());
    Settings {
        strategy: strategy.to_string(),
        replicas,
        mig_layout,
        rename_by_default: Some(block["renameByDefault"].as_bool().unwrap_or(false)),
        fail_requests_greater_than_one: block["failRequestsGreaterThanOne"].as_bool(),
        mig_strategy: None,
    }
}

/// Whether a taint says its nodes are for training (`workload=training`).
pub fn marks_training(key: &str, value: Option<&str>) -> bool {
    let training = |s: &str| s.to_ascii_lowercase().contains("train");
    training(key) || value.is_some_and(training)
}

#[cfg(test)]
mod tests;
