//! A fleet's own GPU sharing (`gpu_sharing`): its key `fleet-NAME` of the
//! device-plugin ConfigMap, the NodePool template labels that select it
//! (and the MIG layout) on every node the fleet provisions, and Karpenter
//! NodeOverlays so that Karpenter plans those nodes with the shared capacity
//! they will advertise (it ignores time-slicing replicas otherwise and
//! launches one node per pod).
//!
//! When the configuration under the fleet's key changes, the device-plugin
//! pods on the fleet's nodes restart (the GPU Operator does not notice a
//! changed ConfigMap); nodes that join later start with it. Removing
//! `gpu_sharing` removes the key and the template labels: Karpenter then
//! replaces the labelled nodes, which have drifted from the NodePool.
//!
//! An overlay's capacity overwrites the instance type's value of a resource
//! rather than adding to it, and overlays select instance types by their
//! requirements, so there is one overlay per number of GPUs a node of the
//! fleet can have: the powers of two within `accelerator_count` (1 to 16
//! when unset) and its bounds.
//!
//! Karpenter matches an overlay's requirements against the NodePool's name,
//! its template labels and the instance type's own requirements; a key it
//! finds on none of them matches nothing. A cloud may carry the GPU count
//! only on its offerings (Karpenter's kwok provider does), so a fleet whose
//! nodes all show the same GPUs gets one overlay selecting the NodePool
//! alone: its requirements already admit only such nodes.
//!
//! Fractional GPUs (`accelerator_count.min = 0`, see `Implied::WholeGpus`)
//! get an overlay too, shared or not: EC2 reports a GPU count of 0 for
//! G6f and Gr6f, so karpenter-provider-aws plans them with no
//! `nvidia.com/gpu` (pkg/providers/instancetype/types.go, nvidiaGPUs) and
//! never launches one for a pod requesting it, while EC2 gives them one GPU
//! device (`LogicalGpuCount` 1: EC2 API Reference, GpuDeviceInfo), which
//! NVIDIA's device plugin advertises as one `nvidia.com/gpu` (× replicas
//! when shared). Their overlay selects the GPU count 0 and gives them that
//! capacity; a fleet of fractional and one-GPU nodes (`max = 1`) has all
//! its nodes show one GPU.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::constraints::GpuCount;
use super::model::{Model, NODEPOOL_LABEL};
use super::resolved::{Models, Resolved};
use crate::catalog::GPU_RESOURCE;
use crate::cluster::FIELD_MANAGER;
use crate::cluster::api::Kind;
use crate::cluster::retry::Deadline;
use crate::framework::PlanChange;
use crate::framework::schema::Attr;
use crate::kit::Cluster;
use crate::protocol::schema::Nesting;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
use crate::resources::sharing::caveats::{self, PolicySeen, Subject};
use crate::resources::sharing::device_plugin::MigStrategy;
use crate::resources::sharing::writes::{ConfigKey, observed_config};
use crate::resources::sharing::{
    self, Advertised, CONFIG_LABEL, DEFAULT_KEY, DEFAULT_OWNER, MIG_CONFIG_LABEL, Settings,
    Strategy, device_plugin, marks_training,
};

/// Karpenter's NodeOverlays.
pub(super) const NODE_OVERLAY: Kind =
    Kind::new("karpenter.sh/v1alpha1", "NodeOverlay", "nodeoverlays");
/// Node GPU counts planned when `accelerator_count` has no maximum.
const DEFAULT_MAX_GPUS: u32 = 16;

type Labels = BTreeMap<String, String>;

/// The fleet's sharing, as state holds it.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct SharingState {
    pub(super) gpu_sharing: Option<Settings>,
    pub(super) gpu_resource: Option<String>,
    pub(super) gpus_per_node_advertised: Option<i64>,
    pub(super) device_plugin_config: Option<String>,
    pub(super) sharing_labels: Option<BTreeMap<String, String>>,
    pub(super) node_overlays: Option<BTreeMap<String, Overlay>>,
}

/// One NodeOverlay: for nodes with `gpus` GPUs, the capacity they advertise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Overlay {
    pub(super) gpus: i64,
    pub(super) capacity: BTreeMap<String, String>,
}

/// The fleet's sharing attributes.
pub(super) fn attributes() -> Vec<Attr> {
    vec![
        Attr::nested("gpu_sharing", Nesting::Single, sharing::attributes(Strategy::NODES, true))
            .optional()
            .describe("This fleet's own GPU sharing, checked against every model in `accelerators`: written to key `fleet-NAME` of the device-plugin ConfigMap and selected by the NodePool's template labels, so nodes join with it; when it changes, the device-plugin pods on the fleet's nodes restart. Without it, nodes take the cluster-wide `gpufleet_gpu_sharing`; `{ strategy = \"none\" }` keeps them dedicated."),
        Attr::string("gpu_resource")
            .derived_from(&["gpu_sharing", "accelerators"])
            .exact()
            .describe("The resource workloads request on this fleet: `nvidia.com/gpu`, `nvidia.com/gpu.shared` (renamed sharing) or a MIG device such as `nvidia.com/mig-1g.10gb` (the smallest of the layout)."),
        Attr::number("gpus_per_node_advertised")
            .derived_from(&["gpu_sharing", "accelerators", "accelerator_count"])
            .exact()
            .describe("How many `gpu_resource` one node advertises (GPUs × replicas, or × MIG devices); null unless `accelerator_count` fixes the GPUs per node, or lets fractional GPUs in (`min = 0`) with `max = 1`, where every node shows one GPU."),
        Attr::string("device_plugin_config")
            .derived_from(&["name", "gpu_sharing", "accelerators"])
            .observed()
            .describe("The device-plugin configuration (YAML) under key `fleet-NAME`; null without `gpu_sharing`."),
        Attr::string_map("sharing_labels")
            .derived_from(&["name", "gpu_sharing"])
            .observed()
            .describe("The NodePool template labels `gpu_sharing` adds: `nvidia.com/device-plugin.config = fleet-NAME` and, for MIG, `nvidia.com/mig.config`."),
        Attr::nested(
            "node_overlays",
            Nesting::Map,
            vec![
                Attr::number("gpus").computed().describe("GPUs per node the overlay applies to."),
                Attr::string_map("capacity").computed().describe("The capacity Karpenter plans such a node with."),
            ],
        )
        .derived_from(&["name", "gpu_sharing", "accelerators", "accelerator_count"])
        .observed()
        .describe("Karpenter NodeOverlays (by name) that make Karpenter plan shared nodes with the capacity they advertise, one per GPU count, and fractional GPU nodes (`accelerator_count.min = 0`, GPU count 0) with the one GPU their device plugin advertises (× replicas when shared); written when the NodeOverlay CRD is installed. Karpenter matches an overlay only on keys the instance type itself defines, so the per-count overlays need the label scheme's GPU-count label on the cloud's instance types (AWS has `karpenter.k8s.aws/instance-gpu-count` there); a cloud that puts it on offerings only (Karpenter's kwok provider) needs `accelerator_count` with `min = max` (or `min = 0, max = 1`), whose one overlay selects the NodePool alone."),
    ]
}

impl SharingState {
    /// The part of a live NodePool's state that sharing owns: the prior
    /// settings and the sharing labels found.
    pub(super) fn from_live(
        prior: &Model,
        sharing_labels: Option<BTreeMap<String, String>>,
    ) -> Self {
        Self {
            gpu_sharing: prior.sharing.gpu_sharing.clone(),
            sharing_labels,
            ..Default::default()
        }
    }
}

fn key(name: &str) -> ConfigKey {
    ConfigKey {
        key: format!("fleet-{name}"),
        owner: format!("fleet-{name}"),
    }
}

/// The GPUs every node of the fleet has, when `accelerator_count` fixes it.
pub(super) fn fixed_gpus(count: Option<&GpuCount>) -> Option<u32> {
    count.and_then(|c| c.min.filter(|min| Some(*min) == c.max))
}

/// Whether `accelerator_count` lets fractional GPUs in (`min = 0`).
fn admits_fractional(count: Option<&GpuCount>) -> bool {
    count.is_some_and(|c| c.min == Some(0))
}

/// The GPUs every node of the fleet shows, when all show the same:
/// `accelerator_count` fixes them, or admits fractional GPUs (each shown as
/// one GPU, see the module docs) and at most one.
fn uniform_gpus(count: Option<&GpuCount>) -> Option<u32> {
    fixed_gpus(count)
        .or_else(|| (admits_fractional(count) && count.and_then(|c| c.max) == Some(1)).then_some(1))
}

/// The GPU counts a node of the fleet can have that get an overlay; 0 for
/// fractional GPUs.
fn gpu_counts(count: Option<&GpuCount>) -> BTreeSet<u32> {
    if let Some(gpus) = uniform_gpus(count) {
        return BTreeSet::from([gpus]);
    }
    let min = count.and_then(|c| c.min).filter(|&n| n > 0).unwrap_or(1);
    let max = count
        .and_then(|c| c.max)
        .unwrap_or(min.max(DEFAULT_MAX_GPUS));
    let mut counts: BTreeSet<u32> = (0..=10)
        .map(|p| 1u32 << p)
        .filter(|n| (min..=max).contains(n))
        .collect();
    counts.insert(min);
    if count.and_then(|c| c.max).is_some() {
        counts.insert(max);
    }
    if admits_fractional(count) {
        counts.insert(0);
    }
    counts
}

fn overlay_name(fleet: &str, gpus: u32) -> String {
    format!("{fleet}-{gpus}-gpus")
}

/// The overlays the fleet's sharing and fractional GPUs ask for.
fn wanted_overlays(model: &Model, models: &Models) -> BTreeMap<String, Overlay> {
    let count = model.constraints.accelerator_count.as_ref();
    let shared = model
        .sharing
        .gpu_sharing
        .as_ref()
        .map(|s| s.advertised(&models.known, s.key_mig_strategy()))
        .filter(|a| !a.node_capacity(1).is_empty());
    // Dedicated GPUs (no sharing, or `strategy = "none"`) need an overlay
    // only where Karpenter plans none: on fractional nodes.
    let dedicated = shared.is_none();
    let advertised = match shared {
        Some(advertised) => advertised,
        None if admits_fractional(count) => Advertised {
            resource: Some(GPU_RESOURCE.to_string()),
            per_gpu: vec![(GPU_RESOURCE.to_string(), 1)],
            hides_whole_gpus: false,
        },
        None => return BTreeMap::new(),
    };
    let uniform = uniform_gpus(count).is_some();
    gpu_counts(count)
        .into_iter()
        .filter(|&gpus| !dedicated || uniform || gpus == 0)
        .filter_map(|gpus| {
            // A fractional node shows one GPU.
            let capacity = advertised.node_capacity(gpus.max(1));
            (!capacity.is_empty()).then(|| {
                (
                    overlay_name(&model.name, gpus),
                    Overlay {
                        gpus: i64::from(gpus),
                        capacity,
                    },
                )
            })
        })
        .collect()
}

fn config_text(model: &Model, models: &Models) -> Option<String> {
    let settings = model.sharing.gpu_sharing.as_ref()?;
    Some(settings.device_plugin_config(&models.known).to_yaml())
}

fn wanted_labels(model: &Model) -> Option<BTreeMap<String, String>> {
    let settings = model.sharing.gpu_sharing.as_ref()?;
    Some(settings.node_labels(&key(&model.name).key))
}

/// The outputs that follow from configuration. What nodes advertise is
/// what they do under the planned MIG strategy (`gpu_sharing.mig_strategy`,
/// see [`caveats`]); without MIG devices every strategy advertises the same.
pub(super) fn derive(model: &mut Model, models: &Models) {
    let advertised = model
        .sharing
        .gpu_sharing
        .as_ref()
        .map(|s| s.advertised(&models.known, s.key_mig_strategy()));
    let (resource, per_gpu) = match &advertised {
        Some(a) => (a.resource.clone(), a.units_per_gpu()),
        None => (Some(GPU_RESOURCE.to_string()), 1),
    };
    let uniform = uniform_gpus(model.constraints.accelerator_count.as_ref());
    model.sharing.gpu_resource = resource;
    model.sharing.gpus_per_node_advertised = uniform.map(|gpus| i64::from(gpus * per_gpu));
    model.sharing.device_plugin_config = config_text(model, models);
    model.sharing.sharing_labels = wanted_labels(model);
    let overlays = wanted_overlays(model, models);
    model.sharing.node_overlays =
        (model.sharing.gpu_sharing.is_some() || !overlays.is_empty()).then_some(overlays);
}

/// The NodePool template labels: the configured ones and the sharing ones.
pub(super) fn template_labels(model: &Model) -> Option<BTreeMap<String, String>> {
    match (model.labels.clone(), wanted_labels(model)) {
        (None, None) => None,
        (labels, sharing) => {
            let mut all = labels.unwrap_or_default();
            all.extend(sharing.unwrap_or_default());
            Some(all)
        }
    }
}

/// Splits live template labels into the configured ones and the sharing
/// ones (those of `gpu_sharing` in `prior`, or after an import the ones
/// naming this fleet's key).
pub(super) fn split_labels(
    name: &str,
    live: Option<BTreeMap<String, String>>,
    prior: &Model,
    importing: bool,
) -> (Option<Labels>, Option<Labels>) {
    let Some(mut live) = live else {
        return (
            None,
            prior.sharing.gpu_sharing.as_ref().map(|_| BTreeMap::new()),
        );
    };
    let ours = prior.sharing.gpu_sharing.is_some()
        || (importing && live.get(CONFIG_LABEL) == Some(&key(name).key));
    if !ours {
        return (Some(live), None);
    }
    let sharing: BTreeMap<String, String> = [CONFIG_LABEL, MIG_CONFIG_LABEL]
        .into_iter()
        .filter_map(|k| live.remove_entry(k))
        .collect();
    (
        Some(live).filter(|l| !l.is_empty() || !importing),
        Some(sharing),
    )
}

/// Checks `gpu_sharing` against the fleet's models (when its
/// `accelerators` are known), and that the configured labels leave the
/// sharing labels to it.
pub(super) fn validate(config: &Value, models: Option<&Models>, diagnostics: &mut Diagnostics) {
    let settings = config.attr("gpu_sharing");
    if settings.is_null() || settings.is_unknown() {
        return;
    }
    if let Some(name) = config.attr("name").as_str() {
        sharing::check_key_length(&key(name).key, AttributePath::attr("name"), diagnostics);
    }
    let Some(models) = models else {
        return;
    };
    let path = AttributePath::attr("gpu_sharing");
    sharing::check(
        settings,
        &path,
        Strategy::NODES,
        sharing::Models::Fleet {
            models: &models.known,
            parts: &models.parts,
        },
        diagnostics,
    );
    for label in [CONFIG_LABEL, MIG_CONFIG_LABEL] {
        if config
            .attr("labels")
            .entries()
            .is_some_and(|l| l.contains_key(label))
        {
            diagnostics.error_at(
                AttributePath::attr("labels").join_key(label),
                "Label set by gpu_sharing",
                format!("`{label}` is the label `gpu_sharing` puts on the fleet's nodes; remove it from `labels`."),
            );
        }
    }
}

/// Plan-time warnings and errors: sharing on a fleet tainted for training,
/// and how the fleet goes with the cluster as it is: the ClusterPolicy's
/// MIG strategy, and the cluster-wide sharing a fleet without `gpu_sharing`
/// takes (see [`caveats`] for why not with what else this run plans).
/// `models` are those of the configuration's `accelerators`, resolved by
/// the fleet's plan once; `changing`: the plan creates or changes the fleet.
pub(super) async fn modify_plan(
    cluster: &Cluster,
    change: &mut PlanChange<'_>,
    models: &Models,
    changing: bool,
    diagnostics: &mut Diagnostics,
) {
    let config = change.config;
    let (Some(name), settings) = (config.attr("name").as_str(), config.attr("gpu_sharing")) else {
        return;
    };
    if !settings.is_wholly_known() || !config.attr("accelerators").is_wholly_known() {
        return;
    }
    if settings.is_null() {
        diagnostics.extend(cluster_wide_sharing(cluster, name).await);
        return;
    }
    let Ok(parsed) = crate::framework::model::decode::<Settings>(settings) else {
        return;
    };
    if parsed.strategy() != Strategy::None {
        let training = config
            .attr("taints")
            .elements()
            .into_iter()
            .flatten()
            .find(|t| {
                t.attr("key")
                    .as_str()
                    .is_some_and(|k| marks_training(k, t.attr("value").as_str()))
            });
        if let Some(taint) = training {
            diagnostics.push(
                Diagnostic::warning(
                    "GPU sharing on a training fleet",
                    format!(
                        "Fleet {name:?} is tainted for training ({}={}) but shares its GPUs ({}): a training job asking for 8 GPUs would get 8 slices, not 8 cards. Training usually wants `strategy = \"none\"`.",
                        taint.attr("key").as_str().unwrap_or_default(),
                        taint.attr("value").as_str().unwrap_or_default(),
                        parsed.strategy
                    ),
                )
                .at(AttributePath::attr("gpu_sharing")),
            );
        }
    }
    let subject = Subject {
        what: format!("Fleet {name:?}"),
        path: AttributePath::attr("gpu_sharing"),
        settings: &parsed,
        models: &models.known,
    };
    let unset = settings.attr("mig_strategy").is_null();
    let prior = change
        .prior
        .attr("gpu_sharing")
        .attr("mig_strategy")
        .as_str();
    let planned = caveats::plan(cluster, &subject, &key(name).key, unset, prior, changing).await;
    diagnostics.extend(planned.diagnostics);
    if let Some(strategy) = planned.mig_strategy
        && let Some(slot) = change
            .planned
            .attr_mut("gpu_sharing")
            .and_then(|s| s.attr_mut("mig_strategy"))
    {
        *slot = strategy;
    }
    let seen = planned.seen;
    // The strategy planned, or else the one the cluster runs now, which
    // apply takes when nothing changes it before.
    let planned = change.planned.attr("gpu_sharing").attr("mig_strategy");
    let strategy = planned.as_str().and_then(MigStrategy::parse).or_else(|| {
        let seen = seen.as_ref().filter(|_| unset)?;
        caveats::effective(seen, parsed.key_mig_strategy())
    });
    if let Some(strategy) = strategy {
        let settings = Settings {
            mig_strategy: Some(strategy.as_str().to_string()),
            ..parsed.clone()
        };
        let from_gpufleet = unset
            && matches!(&seen, Some(PolicySeen::Policy(facts)) if facts.strategy_is_gpufleets);
        let count = config.attr("accelerator_count");
        let (min, max) = (count.attr("min").as_i64(), count.attr("max").as_i64());
        let fixed = min
            .filter(|_| min == max)
            .and_then(|n| u32::try_from(n).ok());
        limits::check_gpu_limit(config, &settings, models, fixed, from_gpufleet, diagnostics);
    }
}

/// The warning for a fleet without `gpu_sharing` whose nodes take a
/// cluster-wide default that shares GPUs (read from the `default` key).
async fn cluster_wide_sharing(cluster: &Cluster, name: &str) -> Diagnostics {
    let default = ConfigKey {
        key: DEFAULT_KEY.to_string(),
        owner: DEFAULT_OWNER.to_string(),
    };
    let Ok(Some(text)) = default.read(cluster, Deadline::at_plan()).await else {
        return Diagnostics::default();
    };
    let Ok(parsed) = device_plugin::parse(&text) else {
        return Diagnostics::default();
    };
    let shared = sharing::settings_from(&parsed, None);
    if shared.strategy() == Strategy::None {
        return Diagnostics::default();
    }
    Diagnostic::warning(
        "Fleet gets the cluster-wide GPU sharing",
        format!(
            "Fleet {name:?} sets no `gpu_sharing`, so its nodes take the cluster-wide default under key `{DEFAULT_KEY}` of {} ({}{}): a pod asking for 8 GPUs there no longer gets 8 dedicated cards. To keep them dedicated (e.g. for training), set `gpu_sharing = {{ strategy = \"none\" }}` on the fleet.",
            cluster.device_plugin_config,
            shared.strategy,
            shared.replicas.map(|r| format!(" × {r}")).unwrap_or_default()
        ),
    )
    .into()
}

/// Before a fleet with `gpu_sharing` writes anything, its NodePool
/// included: the checks of the plan against the cluster now (see
/// [`caveats`]), and the MIG strategy its nodes run with, which the plan may
/// not have known, into `state` with what follows from it.
pub(super) async fn prepare(
    cluster: &Cluster,
    state: &mut Model,
    resolved: &Resolved,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let models = &resolved.models;
    let Some(settings) = &state.sharing.gpu_sharing else {
        return Ok(());
    };
    let subject = Subject {
        what: format!("Fleet {:?}", state.name),
        path: AttributePath::attr("gpu_sharing"),
        settings,
        models: &models.known,
    };
    let strategy = caveats::check_before_write(
        cluster,
        &resolved.cluster_policy,
        &subject,
        &key(&state.name).key,
        deadline,
    )
    .await?;
    if let Some(settings) = state.sharing.gpu_sharing.as_mut() {
        settings.mig_strategy = strategy;
    }
    derive(state, models);
    Ok(())
}

/// The overlay's requirements: the fleet's NodePool and, unless every node
/// of the fleet shows the same GPUs, the GPU count (see the module docs).
fn overlay_object(model: &Model, name: &str, overlay: &Overlay, count_key: &str) -> DynamicObject {
    let mut requirements =
        vec![json!({"key": NODEPOOL_LABEL, "operator": "In", "values": [model.name]})];
    if uniform_gpus(model.constraints.accelerator_count.as_ref()).is_none() {
        requirements.push(
            json!({"key": count_key, "operator": "In", "values": [overlay.gpus.to_string()]}),
        );
    }
    let mut object = DynamicObject::new(name, &NODE_OVERLAY.api_resource());
    object.data = json!({"spec": {"requirements": requirements, "capacity": overlay.capacity}});
    object
}

/// Writes the key and the overlays `state` asks for (releasing those
/// `prior` had and `state` does not), and restarts the device plugin on the
/// fleet's nodes when their configuration changed.
pub(super) async fn write(
    cluster: &Cluster,
    prior: Option<&Model>,
    state: &mut Model,
    resolved: &Resolved,
    deadline: Deadline,
) -> Result<Vec<Diagnostic>, Diagnostics> {
    let mut warnings = Vec::new();
    let key = key(&state.name);
    match config_text(state, &resolved.models) {
        Some(text)
            if key
                .write(cluster, &resolved.cluster_policy, &text, deadline)
                .await? =>
        {
            key.restart_readers(cluster, deadline).await?;
        }
        Some(_) => {}
        None if prior.is_some_and(|p| p.sharing.gpu_sharing.is_some()) => {
            key.release(cluster, deadline).await?;
        }
        None => {}
    }
    let wanted = wanted_overlays(state, &resolved.models);
    let before: BTreeSet<String> = prior
        .and_then(|p| p.sharing.node_overlays.clone())
        .unwrap_or_default()
        .into_keys()
        .collect();
    if wanted.is_empty() && before.is_empty() {
        return Ok(warnings);
    }
    let overlays = cluster.kubernetes.custom(NODE_OVERLAY).await?;
    let count_key = resolved.scheme.label_keys().count;
    for (name, overlay) in &wanted {
        let object = overlay_object(state, name, overlay, count_key);
        match overlays
            .named(name)
            .apply(&object, FIELD_MANAGER, deadline)
            .await
        {
            Ok(_) => {}
            // A warning, as at plan: the NodePool written is of use
            // without its overlays (see `prerequisites`).
            Err(gave_up) if gave_up.not_installed => {
                warnings.push(Diagnostic::warning(
                    "NodeOverlay not installed",
                    format!(
                        "Karpenter's {NODE_OVERLAY} CRD is not installed (or its NodeOverlay feature gate is off), so Karpenter plans fleet {:?} by the GPUs its cloud reports: more nodes than shared GPUs need, and no fractional GPU node for a pod requesting `nvidia.com/gpu`. Install the CRD and enable the gate, then apply again.",
                        state.name
                    ),
                ));
                return Ok(warnings);
            }
            Err(gave_up) => return Err(gave_up.into()),
        }
    }
    for name in before.iter().filter(|n| !wanted.contains_key(*n)) {
        overlays.named(name).delete(deadline).await?;
    }
    Ok(warnings)
}

/// Reads the key and the overlays into `state`; after an import, also the
/// `gpu_sharing` they imply. The overlays of fractional GPUs are read
/// whether or not the fleet shares its GPUs.
pub(super) async fn read(
    cluster: &Cluster,
    state: &mut Model,
    prior: &Model,
    importing: bool,
    models: &Models,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let key = key(&state.name);
    let managed =
        prior.sharing.gpu_sharing.is_some() || prior.sharing.device_plugin_config.is_some();
    if managed || importing {
        let live = key.read(cluster, deadline).await?;
        if importing
            && state.sharing.sharing_labels.is_some()
            && let Some(text) = &live
            && let Ok(parsed) = device_plugin::parse(text)
        {
            let layout = state
                .sharing
                .sharing_labels
                .as_ref()
                .and_then(|l| l.get(MIG_CONFIG_LABEL).cloned());
            state.sharing.gpu_sharing = Some(sharing::settings_from(&parsed, layout));
        }
        read_mig_strategy(cluster, state, models, deadline).await;
        let expected = config_text(state, models);
        state.sharing.device_plugin_config = observed_config(live, expected.as_deref());
    }
    let wanted = wanted_overlays(state, models);
    let mut names: BTreeSet<String> = wanted.keys().cloned().collect();
    names.extend(
        prior
            .sharing
            .node_overlays
            .iter()
            .flatten()
            .map(|(n, _)| n.clone()),
    );
    if names.is_empty() {
        state.sharing.node_overlays = state.sharing.gpu_sharing.as_ref().map(|_| BTreeMap::new());
        return Ok(());
    }
    let overlays = cluster.kubernetes.custom(NODE_OVERLAY).await?;
    let uniform = uniform_gpus(state.constraints.accelerator_count.as_ref());
    let mut found = BTreeMap::new();
    for name in names {
        let live = overlays.named(&name).get_if_installed(deadline).await?;
        let Some(live) = live else {
            // Nothing to compare with: the overlays could not be written.
            state.sharing.node_overlays = Some(wanted);
            return Ok(());
        };
        let Some(live) = live else { continue };
        let spec = &live.data["spec"];
        let gpus = spec["requirements"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["key"] != NODEPOOL_LABEL)
            .and_then(|r| r["values"][0].as_str())
            .and_then(|v| v.parse().ok())
            .or(uniform.map(i64::from))
            .unwrap_or(0);
        let capacity = spec["capacity"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), str::to_string),
                )
            })
            .collect();
        found.insert(name, Overlay { gpus, capacity });
    }
    state.sharing.node_overlays =
        Some(found).filter(|f| !f.is_empty() || state.sharing.gpu_sharing.is_some());
    Ok(())
}

/// The MIG strategy the fleet's nodes run with now, where it matters: a
/// change made outside Terraform (a `helm upgrade` of the ClusterPolicy)
/// shows in the next plan. Kept as it was when the cluster cannot say.
async fn read_mig_strategy(
    cluster: &Cluster,
    state: &mut Model,
    models: &Models,
    deadline: Deadline,
) {
    let Some(settings) = state.sharing.gpu_sharing.as_mut() else {
        return;
    };
    let subject = Subject {
        what: String::new(),
        path: AttributePath::root(),
        settings: &settings.clone(),
        models: &models.known,
    };
    if !subject.depends_on_mig_strategy() {
        return;
    }
    let seen = caveats::look(cluster, deadline).await;
    if let Some(strategy) = caveats::effective(&seen, settings.key_mig_strategy()) {
        settings.mig_strategy = Some(strategy.as_str().to_string());
    }
}

/// Removes the key and the overlays `prior` wrote.
pub(super) async fn delete(
    cluster: &Cluster,
    prior: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if prior.sharing.gpu_sharing.is_some() || prior.sharing.device_plugin_config.is_some() {
        key(&prior.name).release(cluster, deadline).await?;
    }
    let names: Vec<&String> = prior
        .sharing
        .node_overlays
        .iter()
        .flatten()
        .map(|(n, _)| n)
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let overlays = cluster.kubernetes.custom(NODE_OVERLAY).await?;
    for name in names {
        match overlays.named(name).delete(deadline).await {
            Err(gave_up) if gave_up.not_installed => return Ok(()),
            other => other?,
        };
    }
    Ok(())
}

mod limits;
#[cfg(test)]
mod tests;
