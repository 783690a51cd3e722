//! Stands in for the NVIDIA device plugin (with the GPU Operator's config
//! manager and mig-manager) on kwok's nodes, which have no GPUs and no
//! kubelet: for every node that carries a GPU count label it picks the
//! node's key of the device-plugin ConfigMap, reads it as the plugin does,
//! and writes what the plugin would advertise into the node's status
//! capacity and allocatable. Each rule names the NVIDIA source it follows;
//! testbed/README.md says what it does not do.
//!
//!   simulated-device-plugin KUBECONFIG [NAMESPACE [CONFIGMAP]]
//!
//! NAMESPACE/CONFIGMAP default to the provider's: gpu-operator/gpufleet-device-plugin.
//! Started and stopped by `cluster.sh up --karpenter` / `down`.
//!
//! It must be quick: until a new node advertises its shares, Karpenter sees
//! room for one pod there and may launch nodes for the others. So nodes,
//! ConfigMaps and ClusterPolicies are watched and kept here, and a node
//! event costs one PATCH at most.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{StreamExt, TryStreamExt};
use gpufleet::catalog::{self, Accelerator, GPU_RESOURCE, LabelScheme};
use gpufleet::resources::sharing::{CONFIG_LABEL, MIG_CONFIG_LABEL};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, WatchEvent, WatchParams,
};
use kube::{Client, Resource, ResourceExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;

fn log(message: &str) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        % 86_400;
    println!(
        "[simulated-device-plugin {:02}:{:02}:{:02}] {message}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
}

// ------------------------------------------------------------ the config file

/// The parts of the plugin's configuration file this stand-in acts on
/// (NVIDIA k8s-device-plugin, api/config/v1/config.go, flags.go,
/// sharing.go, replicas.go). Unknown fields are ignored, as the plugin's
/// sigs.k8s.io/yaml.Unmarshal does.
#[derive(Debug, Default, Deserialize)]
struct Config {
    #[serde(default)]
    version: String,
    #[serde(default)]
    flags: Flags,
    #[serde(default)]
    sharing: Sharing,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Flags {
    mig_strategy: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sharing {
    time_slicing: Option<Replicated>,
    mps: Option<Replicated>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Replicated {
    #[serde(default)]
    rename_by_default: bool,
    #[serde(default)]
    resources: Vec<ReplicatedResource>,
}

#[derive(Debug, Deserialize)]
struct ReplicatedResource {
    name: String,
    replicas: i64,
}

impl Config {
    /// api/config/v1/config.go (parseConfigFrom: an empty version is v1,
    /// another is refused) and replicas.go (UnmarshalJSON: resources must
    /// be non-empty, replicas at least 2; names gain `nvidia.com/`).
    fn parse(text: &str) -> Result<Self, String> {
        let mut config: Config = if text.trim().is_empty() {
            Config::default()
        } else {
            serde_saphyr::from_str(text).map_err(|e| format!("unmarshal error: {e}"))?
        };
        if !config.version.is_empty() && config.version != "v1" {
            return Err(format!("unknown version: {}", config.version));
        }
        for block in [&mut config.sharing.time_slicing, &mut config.sharing.mps]
            .into_iter()
            .flatten()
        {
            if block.resources.is_empty() {
                return Err("no resources specified".into());
            }
            for resource in &mut block.resources {
                if resource.replicas < 2 {
                    return Err("number of replicas must be >= 2".into());
                }
                if !resource.name.starts_with("nvidia.com/") {
                    resource.name = format!("nvidia.com/{}", resource.name);
                }
            }
        }
        Ok(config)
    }

    /// The block the plugin shares by: MPS whenever it is there
    /// (api/config/v1/sharing.go, ReplicatedResources), and whether that
    /// is MPS (SharingStrategy: an MPS resource with replicas > 1).
    fn replicated(&self) -> Option<(&Replicated, bool)> {
        match (&self.sharing.mps, &self.sharing.time_slicing) {
            (Some(mps), _) => Some((mps, mps.resources.iter().any(|r| r.replicas > 1))),
            (None, Some(ts)) => Some((ts, false)),
            (None, None) => None,
        }
    }
}

// ------------------------------------------------------------ what a node has

/// How the plugin is deployed, as far as it matters here.
#[derive(Debug, Default, Clone)]
struct Operator {
    /// The ConfigMap mounted into the plugin.
    config_map: Option<String>,
    /// The config manager's DEFAULT_CONFIG.
    default_key: Option<String>,
    /// The config manager's FALLBACK_STRATEGIES.
    fallbacks: &'static [&'static str],
    /// The plugin's MIG_STRATEGY environment variable.
    mig_strategy: Option<String>,
}

impl Operator {
    /// NVIDIA gpu-operator, controllers/object_controls.go:
    /// handleDevicePluginConfig mounts `spec.devicePlugin.config.name` and
    /// gives the config manager DEFAULT_CONFIG from `.default` and
    /// FALLBACK_STRATEGIES=empty; applyMIGConfiguration sets MIG_STRATEGY
    /// from `spec.mig.strategy` only when that is set.
    fn from_policy(policy: &DynamicObject) -> Self {
        let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let spec = &policy.data["spec"];
        Self {
            config_map: text(&spec["devicePlugin"]["config"]["name"]),
            default_key: text(&spec["devicePlugin"]["config"]["default"]),
            fallbacks: &["empty"],
            mig_strategy: text(&spec["mig"]["strategy"]),
        }
    }

    /// Without the operator: the standalone Helm chart installed as
    /// `gpufleet_gpu_sharing`'s warning says, `config.name` set to gpufleet's
    /// ConfigMap and `config.default=default` (NVIDIA k8s-device-plugin,
    /// deployments/helm/nvidia-device-plugin, daemonset-device-plugin.yml:
    /// DEFAULT_CONFIG from `config.default`, FALLBACK_STRATEGIES from
    /// `config.fallbackStrategies`, `named,single` in values.yaml, never
    /// reached with a default); no MIG_STRATEGY.
    fn standalone(config_map: &str) -> Self {
        Self {
            config_map: Some(config_map.to_string()),
            default_key: Some("default".into()),
            fallbacks: &["named", "single"],
            mig_strategy: None,
        }
    }

    /// The key the node's plugin reads, `None` for no file. NVIDIA
    /// k8s-device-plugin, cmd/config-manager/main.go (updateConfigName): an
    /// empty map is an error; then the node label's key, else
    /// DEFAULT_CONFIG, else the fallbacks in order (`named`: the key
    /// `default`; `single`: the only key; `empty`: no file); a key named
    /// but missing is an error (whose text names the label's value, empty
    /// for a missing DEFAULT_CONFIG).
    fn key<'a>(
        &self,
        label: Option<&'a String>,
        files: &'a BTreeMap<String, String>,
    ) -> Result<Option<&'a String>, String> {
        if files.is_empty() {
            return Err("no configuration files available".into());
        }
        let label = label.filter(|k| !k.is_empty());
        if let Some(key) = label.or(self.default_key.as_ref()) {
            return files
                .get_key_value(key)
                .map(|(k, _)| Some(k))
                .ok_or_else(|| {
                    format!(
                        "specified config {} does not exist",
                        label.map_or("", String::as_str)
                    )
                });
        }
        for fallback in self.fallbacks {
            match *fallback {
                "named" if files.contains_key("default") => {
                    return Ok(files.get_key_value("default").map(|(k, _)| k));
                }
                "single" if files.len() == 1 => return Ok(files.keys().next()),
                "empty" => return Ok(None),
                _ => {}
            }
        }
        Err("no config was set, no default was provided, and all fallbacks failed".into())
    }
}

/// The node's GPU count and model from the first label scheme whose count
/// label it carries (src/catalog/labels.rs); the model is `None` unless
/// the name (and memory) labels select exactly one catalog entry.
///
/// A fractional GPU (a GPU count of 0 with a GPU named, where the scheme's
/// cloud sells them: EC2's G6f and Gr6f) is one GPU here: EC2's
/// DescribeInstanceTypes gives each such type `Count` 0 but
/// `LogicalGpuCount` 1, the GPU devices the instance has (EC2 API
/// Reference, GpuDeviceInfo; moto's copy of the data has it), and NVIDIA's
/// device plugin advertises the devices NVML lists (internal/rm/nvml_devices.go).
fn gpus_of(labels: &BTreeMap<String, String>) -> Option<(u32, Option<&'static Accelerator>)> {
    LabelScheme::ALL.into_iter().find_map(|scheme| {
        let keys = scheme.label_keys();
        let name = labels.get(keys.name);
        let count: u32 = match labels.get(keys.count)?.parse().ok()? {
            0 if scheme.sells_fractional_gpus() && name.is_some() => 1,
            0 => return None,
            n => n,
        };
        let memory = keys
            .memory
            .and_then(|m| Some((m.unit, labels.get(m.key)?.parse::<u32>().ok()?)));
        let mut models = catalog::all().iter().filter(|a| {
            name.is_some_and(|n| a.label_value(scheme) == Some(n.as_str()))
                && memory.is_none_or(|(unit, size)| a.memory_in(unit) == size)
        });
        let model = models.next().filter(|_| models.next().is_none());
        Some((count, model))
    })
}

/// What the node advertises: resource → count, or the error with which the
/// real plugin (or its config manager) refuses to start.
fn advertised(
    labels: &BTreeMap<String, String>,
    operator: &Operator,
    maps: &BTreeMap<String, BTreeMap<String, String>>,
) -> Option<Result<BTreeMap<String, u32>, String>> {
    let (gpus, model) = gpus_of(labels)?;
    Some(advertised_by(gpus, model, labels, operator, maps))
}

fn advertised_by(
    gpus: u32,
    model: Option<&'static Accelerator>,
    labels: &BTreeMap<String, String>,
    operator: &Operator,
    maps: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<BTreeMap<String, u32>, String> {
    // No ConfigMap configured: the plugin runs without a file (and without
    // the config manager). One configured is a volume of the plugin's pod,
    // not optional (gpu-operator, controllers/object_controls.go,
    // createConfigMapVolume; the chart's daemonset-device-plugin.yml), so
    // while it is absent the kubelet cannot mount it and the pod never starts.
    let text = match &operator.config_map {
        None => "",
        Some(name) => {
            let files = maps.get(name).ok_or_else(|| {
                format!("configmap \"{name}\" not found: the plugin's pod cannot mount it")
            })?;
            match operator.key(labels.get(CONFIG_LABEL), files)? {
                Some(key) => files[key].as_str(),
                None => "",
            }
        }
    };
    let config = Config::parse(text).map_err(|e| format!("unable to parse config file: {e}"))?;
    // api/config/v1/config.go (NewConfig) and flags.go (updateFromCLIFlag):
    // a flag or environment variable wins over the file; the default is none.
    let strategy = operator
        .mig_strategy
        .clone()
        .or(config.flags.mig_strategy.clone())
        .unwrap_or_else(|| "none".into());
    let replicated = config.replicated();
    let mps = replicated.is_some_and(|(_, mps)| mps);
    // cmd/nvidia-device-plugin/main.go (validateFlags).
    if mps && strategy == "mixed" {
        return Err("using --mig-strategy=mixed is not supported with MPS".into());
    }
    if !["none", "single", "mixed"].contains(&strategy.as_str()) {
        return Err(format!("unknown MIG strategy: {strategy}"));
    }

    // The MIG devices of one GPU: mig-manager applies the node's
    // nvidia.com/mig.config layout (NVIDIA mig-parted); layouts are the
    // catalog's. No label: MIG stays off, as GPUs ship.
    // A layout the model lacks fails in mig-manager and leaves MIG off.
    let layout = match (labels.get(MIG_CONFIG_LABEL), model) {
        (None, _) => None,
        (Some(name), _) if name == catalog::MIG_DISABLED => None,
        (Some(name), Some(model)) => model.mig_layout(name),
        (Some(name), None) => {
            return Err(format!(
                "cannot tell the GPU model from the node's labels, so MIG layout {name} is not simulated"
            ));
        }
    }
    .filter(|l| l.mig_enabled);

    // internal/rm/rm.go (AddDefaultResourcesToConfig) and device_map.go
    // (buildDeviceMapFromConfigResources): whole GPUs are nvidia.com/gpu;
    // with MIG on, strategy none still shows the whole GPU, single shows
    // every MIG device as nvidia.com/gpu and needs them uniform and
    // present, mixed names each profile mig-<profile> (`+` as `.`).
    let mut per_gpu: BTreeMap<String, u32> = BTreeMap::new();
    let mut mig_devices = false;
    match (&layout, strategy.as_str()) {
        (None, _) | (Some(_), "none") => {
            per_gpu.insert(GPU_RESOURCE.into(), 1);
        }
        (Some(layout), "single") => {
            if layout.devices.is_empty() {
                return Err("error building device map from config.resources: invalid MIG configuration: at least one device with migEnabled=true was not configured correctly: device 0 has no MIG devices configured".into());
            }
            if layout.devices.len() > 1 {
                return Err("error building device map from config.resources: invalid MIG configuration: more than one MIG device type present on node".into());
            }
            per_gpu.insert(GPU_RESOURCE.into(), u32::from(layout.devices[0].1));
            mig_devices = true;
        }
        // A MIG-enabled GPU without devices is only a warning here.
        (Some(layout), _) => {
            for (profile, count) in &layout.devices {
                per_gpu.insert(catalog::mig_resource(profile.name), u32::from(*count));
            }
            mig_devices = true;
        }
    }
    // internal/plugin/mps.go (getMPSOptions).
    if mps && mig_devices {
        return Err("sharing using MPS is not supported for MIG devices".into());
    }

    // internal/rm/device_map.go (updateDeviceMapWithReplicas): every device
    // of a listed resource `replicas` times, under `<name>.shared` with
    // renameByDefault (api/config/v1/config.go, DisableResourceNamingInConfig:
    // no other renaming); resources the node lacks are skipped.
    let mut advertised: BTreeMap<String, u32> = BTreeMap::new();
    let replicas: BTreeMap<&str, (u32, bool)> = replicated
        .map(|(block, _)| {
            block
                .resources
                .iter()
                .map(|r| {
                    let n = u32::try_from(r.replicas).unwrap_or(u32::MAX);
                    (r.name.as_str(), (n, block.rename_by_default))
                })
                .collect()
        })
        .unwrap_or_default();
    for (resource, count) in per_gpu {
        let devices = count * gpus;
        match replicas.get(resource.as_str()) {
            Some(&(n, rename)) => {
                let name = if rename {
                    catalog::shared_resource(&resource)
                } else {
                    resource
                };
                *advertised.entry(name).or_default() += devices.saturating_mul(n);
            }
            None => *advertised.entry(resource).or_default() += devices,
        }
    }
    Ok(advertised)
}

// ------------------------------------------------------------ the loop

enum Event {
    Node(Box<Node>),
    NodeGone(String),
    Map(String, BTreeMap<String, String>),
    MapGone(String),
    Policy(Box<DynamicObject>),
    PolicyGone(String),
}

/// Forwards `api`'s watch events, restarting the watch whenever it ends.
async fn watch<K>(api: Api<K>, tx: mpsc::Sender<Event>, wrap: fn(WatchEvent<K>) -> Option<Event>)
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    loop {
        let started = tokio::time::Instant::now();
        match api.watch(&WatchParams::default().timeout(290), "0").await {
            Ok(stream) => {
                let mut stream = stream.boxed();
                while let Ok(Some(event)) = stream.try_next().await {
                    if let Some(event) = wrap(event)
                        && tx.send(event).await.is_err()
                    {
                        return;
                    }
                }
            }
            Err(e) => log(&format!("watch failed: {e}")),
        }
        if started.elapsed() < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
}

fn node_event(event: WatchEvent<Node>) -> Option<Event> {
    match event {
        WatchEvent::Added(n) | WatchEvent::Modified(n) => Some(Event::Node(Box::new(n))),
        WatchEvent::Deleted(n) => Some(Event::NodeGone(n.name_any())),
        _ => None,
    }
}

fn map_event(event: WatchEvent<ConfigMap>) -> Option<Event> {
    match event {
        WatchEvent::Added(m) | WatchEvent::Modified(m) => {
            let data = m.data.clone().unwrap_or_default();
            Some(Event::Map(m.name_any(), data))
        }
        WatchEvent::Deleted(m) => Some(Event::MapGone(m.name_any())),
        _ => None,
    }
}

fn policy_event(event: WatchEvent<DynamicObject>) -> Option<Event> {
    match event {
        WatchEvent::Added(p) | WatchEvent::Modified(p) => Some(Event::Policy(Box::new(p))),
        WatchEvent::Deleted(p) => Some(Event::PolicyGone(p.name_any())),
        _ => None,
    }
}

#[derive(Default)]
struct State {
    nodes: BTreeMap<String, Node>,
    maps: BTreeMap<String, BTreeMap<String, String>>,
    policies: BTreeMap<String, DynamicObject>,
    /// What was last said about each node, so the log tells changes only.
    said: BTreeMap<String, String>,
}

impl State {
    /// The ClusterPolicy the operator runs from (the first by name), or the
    /// standalone chart without one.
    fn operator(&self, config_map: &str) -> Operator {
        self.policies
            .values()
            .next()
            .map_or_else(|| Operator::standalone(config_map), Operator::from_policy)
    }
}

/// Patches `node`'s status to what it advertises; resources of nvidia.com
/// it no longer advertises (or all of them, when the plugin would refuse to
/// start) become 0, as the kubelet reports a plugin's resources that are
/// gone.
async fn reconcile(nodes: &Api<Node>, state: &mut State, config_map: &str, name: &str) {
    let Some(node) = state.nodes.get(name) else {
        return;
    };
    let operator = state.operator(config_map);
    let Some(outcome) = advertised(node.labels(), &operator, &state.maps) else {
        return;
    };
    let status = node.status.clone().unwrap_or_default();
    let current: BTreeMap<String, String> = [status.capacity, status.allocatable]
        .into_iter()
        .flatten()
        .flatten()
        .filter(|(k, _)| k.starts_with("nvidia.com/"))
        .map(|(k, v)| (k, v.0))
        .collect();
    let (wanted, said) = match &outcome {
        Ok(advertised) => {
            let text = advertised
                .iter()
                .map(|(r, n)| format!("{r} = {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            (advertised.clone(), text)
        }
        Err(e) => (BTreeMap::new(), format!("advertising nothing: {e}")),
    };
    let mut patch: BTreeMap<String, String> =
        current.keys().map(|k| (k.clone(), "0".into())).collect();
    patch.extend(wanted.iter().map(|(k, v)| (k.clone(), v.to_string())));
    if state.said.get(name) != Some(&said) {
        log(&format!("{name}: {said}"));
        state.said.insert(name.to_string(), said);
    }
    let in_status = |field: &Option<
        BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >| {
        patch.iter().all(|(k, v)| {
            field
                .as_ref()
                .and_then(|f| f.get(k))
                .is_some_and(|q| &q.0 == v)
        })
    };
    let status = node.status.clone().unwrap_or_default();
    if in_status(&status.capacity) && in_status(&status.allocatable) {
        return;
    }
    let body = json!({"status": {"capacity": patch, "allocatable": patch}});
    if let Err(e) = nodes
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
        .await
    {
        log(&format!("{name}: patching its status failed: {e}"));
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(kubeconfig) = args.first() else {
        eprintln!("usage: simulated-device-plugin KUBECONFIG [NAMESPACE [CONFIGMAP]]");
        std::process::exit(2);
    };
    let namespace = args.get(1).map_or("gpu-operator", String::as_str);
    let config_map = args.get(2).map_or("gpufleet-device-plugin", String::as_str);
    gpufleet::protocol::tls::install_crypto_provider();
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("a kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a usable kubeconfig");
    let client = Client::try_from(config).expect("a client");
    let nodes: Api<Node> = Api::all(client.clone());
    let policies = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("nvidia.com", "v1", "ClusterPolicy"),
        "clusterpolicies",
    );
    log(&format!(
        "watching GPU nodes; configuration from ConfigMaps in {namespace} (without a ClusterPolicy: {config_map}, default key default)"
    ));
    let (tx, mut rx) = mpsc::channel(256);
    tokio::spawn(watch(
        Api::<ConfigMap>::namespaced(client.clone(), namespace),
        tx.clone(),
        map_event,
    ));
    tokio::spawn(watch(
        Api::<DynamicObject>::all_with(client.clone(), &policies),
        tx.clone(),
        policy_event,
    ));
    // The configuration first, so a node is never judged without it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    tokio::spawn(watch(nodes.clone(), tx, node_event));

    let mut state = State::default();
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM");
    loop {
        let event = tokio::select! {
            event = rx.recv() => event,
            _ = terminate.recv() => None,
        };
        let Some(event) = event else {
            return;
        };
        let only = match event {
            Event::Node(node) => {
                let name = node.name_any();
                state.nodes.insert(name.clone(), *node);
                Some(name)
            }
            Event::NodeGone(name) => {
                state.nodes.remove(&name);
                state.said.remove(&name);
                continue;
            }
            Event::Map(name, data) => {
                state.maps.insert(name, data);
                None
            }
            Event::MapGone(name) => {
                state.maps.remove(&name);
                None
            }
            Event::Policy(policy) => {
                state.policies.insert(policy.name_any(), *policy);
                None
            }
            Event::PolicyGone(name) => {
                state.policies.remove(&name);
                None
            }
        };
        let names: Vec<String> = match only {
            Some(name) => vec![name],
            None => state.nodes.keys().cloned().collect(),
        };
        for name in names {
            reconcile(&nodes, &mut state, config_map, &name).await;
        }
    }
}
