//! How a fleet's or node sharing's configuration goes with the cluster it
//! runs on: the MIG strategy the nodes' device plugin runs with, and
//! whether the device plugin reads gpufleet's ConfigMap at all.
//!
//! The MIG strategy decides what a node advertises (under `single` every
//! MIG device as `nvidia.com/gpu`, under `mixed` each profile as its own
//! resource) and what NVIDIA's device plugin refuses. Its source is
//! explicit: the resource's own `mig_strategy`, which a configuration sets
//! to `gpufleet_gpu_sharing.NAME.mig_strategy` when that resource sets the
//! strategy in the same run (the reference also orders the apply), or else
//! the GPU Operator's ClusterPolicy as the plan reads it. Terraform plans a
//! run's resources in no fixed order and each answer is final
//! (hashicorp/terraform, internal/terraform/graph_walk_context.go), so a
//! plan never learns what another resource of the run plans except through
//! such a reference. An apply checks the cluster again before writing
//! anything: a strategy that differs from the plan's, or one NVIDIA
//! refuses, fails it with nothing written.
//!
//! A plan-time error that comes from the cluster's state would also block
//! `terraform destroy`, whose refresh is a normal plan of the whole
//! configuration (hashicorp/terraform, internal/terraform/context_plan.go,
//! destroyPlan): when gpufleet itself set the ClusterPolicy's MIG strategy,
//! what it refuses is a plan-time warning and an apply-time error.

use kube::api::DynamicObject;

use super::cluster_policy::{self, CONFIG_NAME, FoundOnce, MIG_STRATEGY};
use super::device_plugin::MigStrategy;
use super::{DEFAULT_KEY, DEFAULT_OWNER, Settings, Strategy, field_manager};
use crate::catalog::Accelerator;
use crate::cluster::retry::Deadline;
use crate::kit::Cluster;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// The GPU Operator's ClusterPolicy as a check sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicySeen {
    /// The cluster could not be read: why.
    Unreachable(String),
    /// No GPU Operator: the device plugin takes the MIG strategy from the
    /// node's own configuration.
    NoOperator,
    /// The operator's ClusterPolicy.
    Policy(PolicyFacts),
}

/// What matters of a ClusterPolicy for sharing.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyFacts {
    /// Its name.
    pub name: String,
    /// `spec.mig.strategy`; unset, the operator sets no `MIG_STRATEGY`.
    pub mig_strategy: Option<String>,
    /// Whether `gpufleet_gpu_sharing` holds `spec.mig.strategy`.
    pub strategy_is_gpufleets: bool,
    /// `spec.devicePlugin.config.name`: the ConfigMap its device plugin
    /// reads; `None` when it reads none.
    pub config_map: Option<String>,
    /// Whether that is gpufleet's ConfigMap, whose keys the nodes' labels
    /// then select.
    pub reads_ours: bool,
}

impl PolicyFacts {
    /// The facts of a live ClusterPolicy.
    pub fn of(cluster: &Cluster, policy: &DynamicObject) -> Self {
        let ours = field_manager(DEFAULT_OWNER);
        let spec = &policy.data["spec"];
        Self {
            name: kube::ResourceExt::name_any(policy),
            mig_strategy: spec["mig"]["strategy"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            strategy_is_gpufleets: cluster_policy::owned_by(policy, MIG_STRATEGY, &ours),
            config_map: CONFIG_NAME
                .iter()
                .fold(spec, |v, segment| &v[*segment])
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            reads_ours: cluster_policy::mounts_ours(cluster, policy),
        }
    }
}

/// Reads the ClusterPolicy for a check at plan (briefly: a plan must not
/// need the cluster) or at apply.
pub async fn look(cluster: &Cluster, deadline: Deadline) -> PolicySeen {
    match cluster_policy::find(cluster, deadline).await {
        Ok(found) => seen(cluster, found),
        Err(gave_up) => PolicySeen::Unreachable(
            gave_up
                .diagnostics
                .0
                .first()
                .map(|d| d.detail.clone())
                .unwrap_or_default(),
        ),
    }
}

/// The GPU Operator's ClusterPolicy `found`, as a check sees it.
fn seen(cluster: &Cluster, found: Option<DynamicObject>) -> PolicySeen {
    match found {
        None => PolicySeen::NoOperator,
        Some(policy) => PolicySeen::Policy(PolicyFacts::of(cluster, &policy)),
    }
}

/// The MIG strategy a node's device plugin runs with: the operator's
/// `MIG_STRATEGY` from `spec.mig.strategy` when set (NVIDIA gpu-operator,
/// controllers/object_controls.go, applyMIGConfiguration), which wins over
/// `flags.migStrategy` of the node's configuration, `key_strategy` (NVIDIA
/// k8s-device-plugin, api/config/v1/flags.go, updateFromCLIFlag: a flag or
/// its environment variable replaces the file's value).
pub fn effective(seen: &PolicySeen, key_strategy: MigStrategy) -> Option<MigStrategy> {
    match seen {
        PolicySeen::Unreachable(_) => None,
        PolicySeen::NoOperator => Some(key_strategy),
        PolicySeen::Policy(facts) => match facts.mig_strategy.as_deref() {
            None => Some(key_strategy),
            Some(name) => MigStrategy::parse(name),
        },
    }
}

/// What NVIDIA's device plugin refuses: the attribute to blame, the
/// summary and NVIDIA's reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// `strategy` or `mig_layout`.
    pub attribute: &'static str,
    /// The diagnostic's summary.
    pub summary: &'static str,
    /// NVIDIA's reason, with its source.
    pub reason: String,
}

/// What `settings` on `models` (any catalog model when empty) make a
/// node's device plugin refuse under `strategy`.
pub fn refused_under(
    strategy: MigStrategy,
    settings: &Settings,
    models: &[&'static Accelerator],
) -> Option<Refusal> {
    match (strategy, settings.strategy()) {
        // NVIDIA k8s-device-plugin, cmd/nvidia-device-plugin/main.go (validateFlags).
        (MigStrategy::Mixed, Strategy::Mps) => Some(Refusal {
            attribute: "strategy",
            summary: "MPS with the mixed MIG strategy",
            reason: "NVIDIA's device plugin refuses to start with MPS under the mixed MIG strategy: \"using --mig-strategy=mixed is not supported with MPS\" (k8s-device-plugin, cmd/nvidia-device-plugin/main.go)".into(),
        }),
        // NVIDIA k8s-device-plugin, internal/rm/device_map.go
        // (buildDeviceMapFromConfigResources): `single` requires every MIG
        // device of a node to be of one type.
        (MigStrategy::Single, Strategy::Mig) => {
            let layout = settings.layout(models)?;
            (layout.mig_enabled && layout.devices.len() > 1).then(|| Refusal {
                attribute: "mig_layout",
                summary: "MIG layout refused under the single MIG strategy",
                reason: format!(
                    "layout `{}` makes MIG devices of {} types on one GPU, and NVIDIA's device plugin refuses to start under the single MIG strategy unless all MIG devices of a node are of one type: \"invalid MIG configuration\" (k8s-device-plugin, internal/rm/device_map.go, buildDeviceMapFromConfigResources). Use a layout of one profile, such as `all-1g.10gb`, or the mixed strategy",
                    layout.name,
                    layout.devices.len()
                ),
            })
        }
        _ => None,
    }
}

/// What a check is about: `Fleet "x"` or `gpufleet_node_sharing "x"`, and
/// the path of its sharing attributes (`gpu_sharing` or the root).
pub struct Subject<'a> {
    /// How messages name it.
    pub what: String,
    /// Where its `strategy`, `mig_layout` and `mig_strategy` are.
    pub path: AttributePath,
    /// Its sharing.
    pub settings: &'a Settings,
    /// Its GPU models (empty when unknown).
    pub models: &'a [&'static Accelerator],
}

impl Subject<'_> {
    fn at(&self, attribute: &str) -> AttributePath {
        self.path.join_attr(attribute)
    }

    /// Whether what it makes the nodes advertise depends on the MIG
    /// strategy: it has MIG devices. Its `mig_strategy` is planned then.
    pub fn depends_on_mig_strategy(&self) -> bool {
        self.settings.strategy() == Strategy::Mig
            && self
                .settings
                .layout(self.models)
                .is_some_and(|l| l.mig_enabled)
    }

    /// Whether NVIDIA may refuse it under some MIG strategy: MIG devices,
    /// or MPS.
    pub fn checked_against_mig_strategy(&self) -> bool {
        self.depends_on_mig_strategy() || self.settings.strategy() == Strategy::Mps
    }

    /// What to plan for `mig_strategy`, unset in configuration, with the
    /// cluster running `strategy` (`None`: it could not be read): the
    /// state's where the cluster agrees or cannot say, else unknown. Apply
    /// decides it before writing anything; a plan that took the cluster's
    /// value for a known one would fail Terraform's check of the final plan
    /// should the cluster change in between (Terraform plans each resource
    /// again during apply, internal/terraform/node_resource_apply_instance.go).
    fn planned(&self, strategy: Option<MigStrategy>, prior: Option<&str>) -> Value {
        if !self.depends_on_mig_strategy() {
            return Value::Null;
        }
        match (strategy, prior) {
            (Some(strategy), Some(prior)) if strategy.as_str() != prior => Value::UNKNOWN,
            (_, Some(prior)) => Value::string(prior),
            (_, None) => Value::UNKNOWN,
        }
    }

    /// The strategy its own configuration key gives the device plugin
    /// where nothing overrides it.
    fn key_strategy(&self) -> MigStrategy {
        self.settings.key_mig_strategy()
    }

    fn refusal(&self, strategy: MigStrategy) -> Option<Refusal> {
        refused_under(strategy, self.settings, self.models)
    }
}

/// What a plan of a fleet's or node sharing's settings learns of the
/// cluster.
pub struct Planned {
    /// The GPU Operator's ClusterPolicy, read when it matters.
    pub seen: Option<PolicySeen>,
    /// The `mig_strategy` to plan where the configuration leaves it unset.
    pub mig_strategy: Option<Value>,
    /// Sharing no device plugin reads, and what [`plan_unset`] says.
    pub diagnostics: Diagnostics,
}

/// Plans `subject`, whose configuration key is `key` and whose
/// `mig_strategy` is `unset` in configuration (`prior` in state), against
/// the cluster as it is: read briefly, only when the sharing must be read
/// by the device plugin or the MIG strategy decides something. When the
/// plan creates or changes it (`changing`), also whether any device plugin
/// is there to read the key.
pub async fn plan(
    cluster: &Cluster,
    subject: &Subject<'_>,
    key: &str,
    unset: bool,
    prior: Option<&str>,
    changing: bool,
) -> Planned {
    let shares = subject.settings.replicates();
    let seen = if shares || (unset && subject.checked_against_mig_strategy()) {
        Some(look(cluster, Deadline::at_plan()).await)
    } else {
        None
    };
    let mut diagnostics = Diagnostics::default();
    if let Some(seen) = seen.as_ref().filter(|_| shares)
        && let Some(detail) = not_read(
            cluster,
            seen,
            subject,
            key,
            "the apply fails before writing anything rather than tell Karpenter otherwise",
        )
    {
        diagnostics.push(Diagnostic::warning(NOT_READ, detail).at(subject.at("strategy")));
    }
    if shares && changing && seen == Some(PolicySeen::NoOperator) {
        diagnostics.extend(no_reader(cluster, subject, key).await);
    }
    let mig_strategy = unset.then(|| match &seen {
        Some(seen) => {
            let (planned, found) = plan_unset(seen, subject, prior);
            diagnostics.extend(found);
            planned
        }
        None => Value::Null,
    });
    Planned {
        seen,
        mig_strategy,
        diagnostics,
    }
}

/// Before a fleet or node sharing whose configuration key is `key` writes
/// anything: the checks of its plan against the cluster now. The
/// `mig_strategy` to keep in state (decided here when the plan could not
/// know it), or why nothing may be written.
pub async fn check_before_write(
    cluster: &Cluster,
    policy: &FoundOnce,
    subject: &Subject<'_>,
    key: &str,
    deadline: Deadline,
) -> Result<Option<String>, Diagnostics> {
    let shares = subject.settings.replicates();
    if !shares && !subject.checked_against_mig_strategy() {
        return Ok(subject.settings.mig_strategy.clone());
    }
    // Read as any write's read: what keeps it from the cluster (a missing
    // permission, say) is said as such.
    let seen = seen(cluster, policy.get(cluster, deadline).await?.cloned());
    let strategy = check_at_apply(&seen, subject)?;
    if shares && let Some(detail) = not_read(cluster, &seen, subject, key, "so nothing was written")
    {
        return Err(Diagnostic::error(NOT_READ, detail)
            .at(subject.at("strategy"))
            .into());
    }
    Ok(strategy.map(|s| s.as_str().to_string()))
}

/// The planned `mig_strategy` of a fleet or node sharing whose
/// configuration leaves it unset, and the plan's diagnostics: what the
/// cluster runs (`prior` kept when it cannot be read), NVIDIA's refusals
/// under it, and MIG devices that `none` leaves unadvertised.
fn plan_unset(
    seen: &PolicySeen,
    subject: &Subject<'_>,
    prior: Option<&str>,
) -> (Value, Diagnostics) {
    let mut diagnostics = Diagnostics::default();
    if !subject.checked_against_mig_strategy() {
        return (Value::Null, diagnostics);
    }
    let Some(strategy) = effective(seen, subject.key_strategy()) else {
        let why = match seen {
            PolicySeen::Unreachable(why) => why.as_str(),
            _ => "",
        };
        diagnostics.push(
            Diagnostic::warning(
                "MIG strategy checked at apply",
                format!(
                    "The GPU Operator's ClusterPolicy could not be read at plan ({why}). What NVIDIA's device plugin refuses{} depends on the MIG strategy the nodes of {} run with: before writing anything, apply reads it from the ClusterPolicy and fails if the device plugin would refuse the configuration.",
                    if subject.depends_on_mig_strategy() { ", and what it advertises," } else { "" },
                    subject.what
                ),
            )
            .at(subject.at(if subject.depends_on_mig_strategy() { "mig_strategy" } else { "strategy" })),
        );
        return (subject.planned(None, prior), diagnostics);
    };
    if let Some(refusal) = subject.refusal(strategy) {
        let detail = format!(
            "{} {}; {}. {}",
            subject.what,
            runs(seen, strategy),
            refusal.reason,
            fix(seen)
        );
        // MPS is refused by the strategy alone, which is only in the
        // cluster here: refused at apply (see `check_at_apply`). The same
        // when gpufleet_gpu_sharing set it: the run that declares it may be
        // changing it. An error at plan would block that run's destroy.
        let gpufleets = matches!(seen, PolicySeen::Policy(f) if f.strategy_is_gpufleets);
        if gpufleets || subject.settings.strategy() == Strategy::Mps {
            diagnostics.push(
                Diagnostic::warning(
                    refusal.summary,
                    format!("{detail} Apply checks again before writing anything."),
                )
                .at(subject.at(refusal.attribute)),
            );
        } else {
            diagnostics.error_at(subject.at(refusal.attribute), refusal.summary, detail);
        }
    }
    diagnostics.extend(unadvertised(subject, strategy));
    (subject.planned(Some(strategy), prior), diagnostics)
}

/// MIG devices that the `none` strategy does not advertise.
fn unadvertised(subject: &Subject<'_>, strategy: MigStrategy) -> Diagnostics {
    if strategy != MigStrategy::None || subject.settings.strategy() != Strategy::Mig {
        return Diagnostics::default();
    }
    Diagnostic::warning(
        "MIG devices not advertised",
        format!(
            "{} partitions its GPUs with MIG, but its nodes' device plugin runs with the MIG strategy `none`, under which it advertises each GPU whole as `nvidia.com/gpu` and none of its MIG devices (k8s-device-plugin, internal/rm/device_map.go). Use `single` or `mixed`.",
            subject.what
        ),
    )
    .at(subject.at("mig_strategy"))
    .into()
}

/// "runs every node's device plugin with ..." for a message.
fn runs(seen: &PolicySeen, strategy: MigStrategy) -> String {
    match seen {
        PolicySeen::Policy(facts) if facts.mig_strategy.is_some() => format!(
            "runs on nodes whose device plugin ClusterPolicy {:?} runs with `spec.mig.strategy = \"{}\"`",
            facts.name,
            strategy.as_str()
        ),
        _ => format!(
            "gives its nodes' device plugin the MIG strategy `{}`",
            strategy.as_str()
        ),
    }
}

/// How to change the strategy.
fn fix(seen: &PolicySeen) -> &'static str {
    match seen {
        PolicySeen::Policy(facts) if facts.strategy_is_gpufleets => {
            "Change `mig_strategy` of the gpufleet_gpu_sharing that sets it."
        }
        PolicySeen::Policy(_) => {
            "To change the strategy, declare a gpufleet_gpu_sharing with `mig_strategy` and set this resource's `mig_strategy` to `gpufleet_gpu_sharing.NAME.mig_strategy`, or set the ClusterPolicy's `spec.mig.strategy` yourself (GPU Operator Helm chart: `--set mig.strategy=...`)."
        }
        _ => "Set `mig_strategy` to a strategy under which it works.",
    }
}

/// Before a fleet or node sharing writes anything, with the cluster `seen`
/// now: the strategy its nodes run with, checked against the plan's (its
/// settings' `mig_strategy`, unset when the plan could not know it) and
/// against NVIDIA's refusals. The strategy to keep in state, or why
/// nothing may be written.
fn check_at_apply(
    seen: &PolicySeen,
    subject: &Subject<'_>,
) -> Result<Option<MigStrategy>, Diagnostics> {
    let planned = subject.settings.mig();
    if !subject.checked_against_mig_strategy() {
        return Ok(planned);
    }
    let strategy = match (seen, effective(seen, subject.key_strategy())) {
        (PolicySeen::Unreachable(why), _) => {
            return Err(Diagnostic::error(
                "Cannot read the GPU Operator's ClusterPolicy",
                why.clone(),
            )
            .into());
        }
        (_, Some(strategy)) => strategy,
        (_, None) => {
            return Err(Diagnostic::error(
                "Unknown MIG strategy",
                format!(
                    "The GPU Operator's ClusterPolicy sets a `spec.mig.strategy` that NVIDIA's device plugin does not know ({}); it takes none, single or mixed.",
                    source(seen)
                ),
            )
            .into());
        }
    };
    let advertised_by_it = subject.depends_on_mig_strategy();
    if let Some(planned) = planned.filter(|p| *p != strategy && advertised_by_it) {
        return Err(Diagnostic::error(
            "MIG strategy not the cluster's",
            format!(
                "{} is planned for the MIG strategy `{}`, but its nodes' device plugin runs with `{}` ({}), so what the plan showed it advertising would be wrong. Nothing was written. If a gpufleet_gpu_sharing of this configuration sets the strategy, set this resource's `mig_strategy` to `gpufleet_gpu_sharing.NAME.mig_strategy`: the plan then uses the strategy it sets, and Terraform applies it first.",
                subject.what,
                planned.as_str(),
                strategy.as_str(),
                source(seen)
            ),
        )
        .at(subject.at("mig_strategy"))
        .into());
    }
    if let Some(refusal) = subject.refusal(strategy) {
        return Err(Diagnostic::error(
            refusal.summary,
            format!(
                "{} {}; {}. Nothing was written. {}",
                subject.what,
                runs(seen, strategy),
                refusal.reason,
                fix(seen)
            ),
        )
        .at(subject.at(refusal.attribute))
        .into());
    }
    Ok(if advertised_by_it {
        Some(strategy)
    } else {
        planned
    })
}

fn source(seen: &PolicySeen) -> String {
    match seen {
        PolicySeen::Policy(facts) if facts.mig_strategy.is_some() => {
            format!("`spec.mig.strategy` of ClusterPolicy {:?}", facts.name)
        }
        _ => "its configuration's `flags.migStrategy`".into(),
    }
}

/// Sharing declared on a cluster whose GPU Operator does not point its
/// device plugin at gpufleet's ConfigMap: the key would never be read, and
/// NodeOverlays would promise capacity the nodes never advertise. `None`
/// when it is read (or no operator says otherwise); else what is wrong,
/// with `then`, what the apply does about it.
fn not_read(
    cluster: &Cluster,
    seen: &PolicySeen,
    subject: &Subject<'_>,
    key: &str,
    then: &str,
) -> Option<String> {
    let PolicySeen::Policy(facts) = seen else {
        return None;
    };
    if facts.reads_ours {
        return None;
    }
    Some(format!(
        "{} writes its GPU sharing to key `{key}` of {}, but ClusterPolicy {:?} points the device plugin at {}, so the key is never read: its nodes would advertise whole GPUs, and {then}. To fix it, declare a gpufleet_gpu_sharing (`manage_cluster_policy = true`, the default) and make this resource depend on it (`depends_on`, or a reference), or point the GPU Operator at the ConfigMap yourself (Helm: `--set devicePlugin.config.name={},devicePlugin.config.default={DEFAULT_KEY}`).",
        subject.what,
        cluster.device_plugin_config,
        facts.name,
        facts
            .config_map
            .as_deref()
            .map_or("no ConfigMap".to_string(), |m| format!("ConfigMap {m:?}")),
        cluster.device_plugin_config.name
    ))
}

const NOT_READ: &str = "Sharing not read by the device plugin";

/// The plan's warning when `subject`'s sharing, under `key`, has no device
/// plugin to read it ([`no_reader`]); for `gpufleet_gpu_sharing`, which
/// points a ClusterPolicy at the map itself, so no other check of
/// [`plan`] is its.
pub async fn plan_reader(cluster: &Cluster, subject: &Subject<'_>, key: &str) -> Diagnostics {
    if !subject.settings.replicates()
        || look(cluster, Deadline::at_plan()).await != PolicySeen::NoOperator
    {
        return Diagnostics::default();
    }
    no_reader(cluster, subject, key).await
}

/// Sharing declared on a cluster with neither a GPU Operator ClusterPolicy
/// nor the device-plugin ConfigMap that NVIDIA's standalone device plugin
/// would mount: nothing there reads the key. Nothing when the map exists
/// or cannot be read at plan. Only a warning, at apply too: the key's
/// write succeeds (it creates the map), and a standalone device plugin
/// installed to mount that map starts once it exists.
async fn no_reader(cluster: &Cluster, subject: &Subject<'_>, key: &str) -> Diagnostics {
    let map = &cluster.device_plugin_config;
    let Ok(None) = map.keys(&cluster.kubernetes, Deadline::at_plan()).await else {
        return Diagnostics::default();
    };
    Diagnostic::warning(NO_READER, format!(
        "{} shares its GPUs through key `{key}` of {map}, but the cluster has neither a GPU Operator ClusterPolicy nor that ConfigMap, which NVIDIA's standalone device plugin would mount: nothing reads the key, and its nodes would advertise whole GPUs. Install the NVIDIA GPU Operator (`helm install gpu-operator nvidia/gpu-operator -n {}`) with a gpufleet_gpu_sharing to point it at the ConfigMap, or install NVIDIA's k8s-device-plugin chart with `config.name={}` (the apply creates the ConfigMap).",
        subject.what, map.namespace, map.name
    ))
    .at(subject.at("strategy"))
    .into()
}

const NO_READER: &str = "No device plugin to read the sharing";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::lookup;
    use crate::protocol::diagnostics::Severity;

    fn policy(mig: Option<&str>, strategy_is_gpufleets: bool) -> PolicySeen {
        PolicySeen::Policy(PolicyFacts {
            name: "cluster-policy".into(),
            mig_strategy: mig.map(str::to_string),
            strategy_is_gpufleets,
            config_map: Some("gpufleet-device-plugin".into()),
            reads_ours: true,
        })
    }

    /// The planned strategy and (severity, path, summary, detail) of each
    /// diagnostic.
    fn planned(
        seen: &PolicySeen,
        sharing: serde_json::Value,
        prior: Option<&str>,
    ) -> (Value, Vec<(Severity, String, String, String)>) {
        let settings: Settings = serde_json::from_value(sharing).unwrap();
        let h100 = [lookup("H100").unwrap()];
        let subject = Subject {
            what: "Fleet \"mig\"".into(),
            path: AttributePath::attr("gpu_sharing"),
            settings: &settings,
            models: &h100,
        };
        let (value, diagnostics) = plan_unset(seen, &subject, prior);
        let shown = diagnostics
            .0
            .into_iter()
            .map(|d| {
                let path = d.path.as_ref().map(ToString::to_string).unwrap_or_default();
                (d.severity, path, d.summary, d.detail)
            })
            .collect();
        (value, shown)
    }

    fn mig(layout: &str) -> serde_json::Value {
        serde_json::json!({"strategy": "mig", "mig_layout": layout})
    }

    #[test]
    fn the_plan_takes_the_strategy_the_cluster_runs() {
        // Created: decided at apply, before anything is written.
        for seen in [
            policy(Some("mixed"), false),
            policy(Some("single"), false),
            policy(None, false),
            PolicySeen::NoOperator,
        ] {
            let (value, found) = planned(&seen, mig("all-1g.10gb"), None);
            assert!(value.is_unknown(), "{seen:?}");
            assert!(found.is_empty(), "{seen:?}: {found:?}");
        }
        // Updated: the state's while the cluster agrees (unset and no
        // operator: the key's own, mixed for MIG), unknown once it does not.
        for (seen, prior) in [
            (policy(Some("single"), false), "single"),
            (policy(None, false), "mixed"),
            (PolicySeen::NoOperator, "mixed"),
        ] {
            let (value, _) = planned(&seen, mig("all-1g.10gb"), Some(prior));
            assert_eq!(value, Value::string(prior), "{seen:?}");
        }
        let (value, _) = planned(
            &policy(Some("mixed"), false),
            mig("all-1g.10gb"),
            Some("single"),
        );
        assert!(value.is_unknown());
        // Nothing to decide: whole GPUs.
        let whole =
            serde_json::json!({"strategy": "mig", "mig_layout": "all-disabled", "replicas": 2});
        assert_eq!(
            planned(&policy(Some("single"), false), whole, None).0,
            Value::Null
        );
        // Unreachable: unknown, with a warning saying what apply checks.
        let (value, found) = planned(
            &PolicySeen::Unreachable("connection refused".into()),
            mig("all-1g.10gb"),
            None,
        );
        assert!(value.is_unknown());
        assert_eq!(
            (found[0].0, found[0].1.as_str(), found[0].2.as_str()),
            (
                Severity::Warning,
                "gpu_sharing.mig_strategy",
                "MIG strategy checked at apply"
            )
        );
        assert!(found[0].3.contains("(connection refused)"));
    }

    #[test]
    fn single_refuses_only_layouts_of_several_types() {
        let (_, found) = planned(&policy(Some("single"), false), mig("all-balanced"), None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].0, found[0].1.as_str()),
            (Severity::Error, "gpu_sharing.mig_layout")
        );
        assert!(
            found[0].3.contains("invalid MIG configuration"),
            "{found:?}"
        );
        // Set by gpufleet_gpu_sharing: a warning, so that destroy is never blocked.
        let (_, found) = planned(&policy(Some("single"), true), mig("all-balanced"), None);
        assert_eq!(found[0].0, Severity::Warning, "{found:?}");
        assert!(
            found[0]
                .3
                .contains("Change `mig_strategy` of the gpufleet_gpu_sharing")
        );
    }

    #[test]
    fn mps_is_refused_under_the_mixed_strategy() {
        let mps = serde_json::json!({"strategy": "mps", "replicas": 4});
        let (value, found) = planned(&policy(Some("mixed"), false), mps.clone(), None);
        // Checked, not planned: what MPS advertises is the same under every strategy.
        assert_eq!(value, Value::Null);
        assert_eq!(found.len(), 1, "{found:?}");
        // Only the cluster runs `mixed`: a warning, and apply refuses it.
        assert_eq!(
            (found[0].0, found[0].1.as_str()),
            (Severity::Warning, "gpu_sharing.strategy")
        );
        assert!(
            found[0]
                .3
                .contains("using --mig-strategy=mixed is not supported with MPS")
                && found[0]
                    .3
                    .contains("Apply checks again before writing anything.")
        );
        let (value, found) = planned(&policy(Some("single"), false), mps.clone(), None);
        assert!(found.is_empty() && value == Value::Null);
        assert!(planned(&PolicySeen::NoOperator, mps, None).1.is_empty());
    }

    #[test]
    fn none_leaves_mig_devices_unadvertised() {
        let (_, found) = planned(&policy(Some("none"), false), mig("all-1g.10gb"), None);
        assert_eq!(
            (found[0].0, found[0].2.as_str()),
            (Severity::Warning, "MIG devices not advertised")
        );
    }
}
