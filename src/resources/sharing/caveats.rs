//! How a fleet's or node sharing's configuration goes with the cluster it
//! runs on: the MIG strategy the GPU Operator gives every node's device
//! plugin, which wins over the strategy in the node's own configuration.
//!
//! The checks use only the resource's own configuration and the cluster as
//! it is, never what other resources of the same run plan. Terraform plans
//! a run's resources in one provider process, in dependency order but
//! otherwise in no fixed order and in parallel (hashicorp/terraform,
//! internal/terraform/graph_walk_context.go: each resource's refresh and
//! plan, node_resource_plan_instance.go, runs under a semaphore as soon as
//! its dependencies are done), and each answer is final before the next is
//! asked for: a resource planned first cannot learn of one planned later,
//! so a note one leaves for the other makes the diagnostics depend on the
//! order. (The apply walk, a process of its own, plans each resource again
//! just before applying it, node_resource_apply_instance.go, with the same
//! freedom of order.) So the cluster-wide `gpufleet_gpu_sharing` and the
//! fleets and node sharings it affects meet in the cluster: a plan reads
//! the GPU Operator's ClusterPolicy, and an apply checks it again before
//! writing anything. What that costs: a `gpufleet_gpu_sharing` declared in
//! the same run as a MIG fleet counts for the fleet once it is applied.

use kube::api::DynamicObject;

use super::cluster_policy::{self, CONFIG_NAME, MIG_STRATEGY};
use super::device_plugin::MigStrategy;
use super::{Advertised, DEFAULT_OWNER, Settings, Strategy, field_manager};
use crate::catalog::{self, Accelerator};
use crate::cluster::retry::Deadline;
use crate::kit::Cluster;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

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

/// What matters of a ClusterPolicy for the MIG strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyFacts {
    /// Its name.
    pub name: String,
    /// `spec.mig.strategy`; unset, the operator sets no `MIG_STRATEGY`.
    pub mig_strategy: Option<String>,
    /// Whether `gpufleet_gpu_sharing` manages it (its field manager owns
    /// `spec.devicePlugin.config.name`).
    pub managed: bool,
    /// Whether `gpufleet_gpu_sharing` holds `spec.mig.strategy` itself.
    pub strategy_is_gpufleets: bool,
}

impl PolicyFacts {
    /// The facts of a live ClusterPolicy.
    pub fn of(policy: &DynamicObject) -> Self {
        let ours = field_manager(DEFAULT_OWNER);
        Self {
            name: kube::ResourceExt::name_any(policy),
            mig_strategy: policy.data["spec"]["mig"]["strategy"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            managed: cluster_policy::owned_by(policy, CONFIG_NAME, &ours),
            strategy_is_gpufleets: cluster_policy::owned_by(policy, MIG_STRATEGY, &ours),
        }
    }
}

/// Reads the ClusterPolicy for a check at plan (briefly: a plan must not
/// need the cluster) or at apply.
pub async fn look(cluster: &Cluster, deadline: Deadline) -> PolicySeen {
    match cluster_policy::find(cluster, deadline).await {
        Ok(None) => PolicySeen::NoOperator,
        Ok(Some(policy)) => PolicySeen::Policy(PolicyFacts::of(&policy)),
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

/// The MIG strategy a node's device plugin runs with: the operator's
/// `MIG_STRATEGY` from `spec.mig.strategy` when set (NVIDIA gpu-operator,
/// controllers/object_controls.go, applyMIGConfiguration), which wins over
/// `flags.migStrategy` of the node's configuration (NVIDIA
/// k8s-device-plugin, api/config/v1/flags.go, updateFromCLIFlag: a flag or
/// its environment variable replaces the file's value), whose default is
/// `none`.
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

/// What `settings` make a node's device plugin refuse under `strategy`:
/// the attribute to blame, the summary and NVIDIA's reason.
pub fn refused_under(
    strategy: MigStrategy,
    sharing: Strategy,
) -> Option<(&'static str, &'static str, &'static str)> {
    match (strategy, sharing) {
        // NVIDIA k8s-device-plugin, cmd/nvidia-device-plugin/main.go (validateFlags).
        (MigStrategy::Mixed, Strategy::Mps) => Some((
            "strategy",
            "MPS with the mixed MIG strategy",
            "NVIDIA's device plugin refuses to start with MPS under the mixed MIG strategy: \"using --mig-strategy=mixed is not supported with MPS\" (k8s-device-plugin, cmd/nvidia-device-plugin/main.go)",
        )),
        _ => None,
    }
}

/// What a check is about: `Fleet "x"` or `gpufleet_node_sharing "x"`, and
/// the path of its sharing attributes (`gpu_sharing` or the root).
pub struct Subject<'a> {
    /// How messages name it.
    pub what: String,
    /// Where its `strategy` and `mig_layout` are.
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

    /// Whether its MIG layout makes MIG devices, which only the mixed
    /// strategy advertises under their own names.
    pub fn needs_mixed(&self) -> bool {
        self.settings.strategy() == Strategy::Mig
            && self
                .settings
                .advertised(self.models, MigStrategy::Mixed)
                .hides_whole_gpus
            && self.settings.mig_layout.as_deref() != Some(catalog::MIG_DISABLED)
    }

    fn shown(advertised: &Advertised) -> String {
        match &advertised.resource {
            None => "nothing".into(),
            Some(r) => format!("{} × `{r}` per GPU", advertised.units_per_gpu()),
        }
    }
}

/// What to do about the ClusterPolicy's MIG strategy for a subject.
#[derive(Debug, Clone, PartialEq)]
pub enum MigPlan {
    /// Nothing: the strategy in effect is the one it needs.
    Nothing,
    /// `gpufleet_gpu_sharing` manages the ClusterPolicy: set its
    /// `spec.mig.strategy` to `mixed`.
    SetMixed(String),
}

/// The diagnostics of `subject` against the ClusterPolicy `seen`, and what
/// its apply must do. An unreachable cluster is a warning naming what apply
/// checks (at apply, the read that failed has failed the write already).
pub fn check(seen: &PolicySeen, subject: &Subject<'_>) -> (Diagnostics, MigPlan) {
    let mut diagnostics = Diagnostics::default();
    let key_strategy = if subject.needs_mixed() {
        MigStrategy::Mixed
    } else {
        MigStrategy::None
    };
    let Some(strategy) = effective(seen, key_strategy) else {
        let why = match seen {
            PolicySeen::Unreachable(why) => why.as_str(),
            _ => "",
        };
        let (attribute, checked) = if subject.needs_mixed() {
            (
                "mig_layout",
                "partitions its GPUs with MIG, so its nodes' device plugin must run with the mixed MIG strategy: before writing anything, apply checks that the ClusterPolicy's `spec.mig.strategy` is `mixed` or unset, or that a gpufleet_gpu_sharing with `manage_cluster_policy` manages it (gpufleet then sets `mixed`), and fails otherwise",
            )
        } else if subject.settings.strategy() == Strategy::Mps {
            (
                "strategy",
                "shares its GPUs with MPS, which NVIDIA's device plugin refuses under the mixed MIG strategy: before writing anything, apply checks that the ClusterPolicy's `spec.mig.strategy` is not `mixed`, and fails otherwise",
            )
        } else {
            return (diagnostics, MigPlan::Nothing);
        };
        diagnostics.push(
            Diagnostic::warning(
                "MIG strategy checked at apply",
                format!(
                    "The GPU Operator's ClusterPolicy could not be read at plan ({why}). {} {checked}.",
                    subject.what
                ),
            )
            .at(subject.at(attribute)),
        );
        return (diagnostics, MigPlan::Nothing);
    };
    if let Some((attribute, summary, reason)) = refused_under(strategy, subject.settings.strategy())
    {
        diagnostics.error_at(
            subject.at(attribute),
            summary,
            format!(
                "{} shares its GPUs with MPS, but {}; {reason}.",
                subject.what,
                describe_policy(seen)
            ),
        );
    }
    if !subject.needs_mixed() || strategy == MigStrategy::Mixed {
        return (diagnostics, MigPlan::Nothing);
    }
    let PolicySeen::Policy(facts) = seen else {
        return (diagnostics, MigPlan::Nothing);
    };
    let wanted = Subject::shown(
        &subject
            .settings
            .advertised(subject.models, MigStrategy::Mixed),
    );
    let got = subject
        .settings
        .advertised(subject.models, strategy)
        .resource
        .map(|_| Subject::shown(&subject.settings.advertised(subject.models, strategy)))
        .unwrap_or_else(|| "nothing (the device plugin refuses to start)".into());
    let under = format!(
        "ClusterPolicy {:?} runs every node's device plugin with `spec.mig.strategy = \"{}\"`, under which its nodes would advertise {got} instead of the {wanted} that `gpu_resource` tells workloads to request",
        facts.name,
        strategy.as_str()
    );
    if facts.managed && !facts.strategy_is_gpufleets {
        diagnostics.push(
            Diagnostic::warning(
                "gpufleet sets the mixed MIG strategy",
                format!(
                    "{} partitions its GPUs with MIG. {under}; gpufleet_gpu_sharing manages the ClusterPolicy, so applying this sets `spec.mig.strategy = \"mixed\"` there (gpufleet_gpu_sharing keeps it while a fleet or node sharing needs it, and gives the field back to its previous owner on destroy).",
                    subject.what
                ),
            )
            .at(subject.at("mig_layout")),
        );
        return (diagnostics, MigPlan::SetMixed(facts.name.clone()));
    }
    let fix = if facts.managed {
        format!(
            "gpufleet_gpu_sharing sets `mig_strategy = \"{}\"`: set it to `\"mixed\"`, or leave it unset so that gpufleet sets `mixed` for MIG fleets and node sharings",
            strategy.as_str()
        )
    } else {
        "declare a gpufleet_gpu_sharing with `manage_cluster_policy = true` (the default) and apply it before this, so that gpufleet sets `mixed`; or set the ClusterPolicy's `spec.mig.strategy` to `mixed` yourself (GPU Operator Helm chart: `--set mig.strategy=mixed`)".to_string()
    };
    diagnostics.error_at(
        subject.at("mig_layout"),
        "MIG needs the mixed MIG strategy",
        format!(
            "{} partitions its GPUs with MIG, but {under} (NVIDIA k8s-device-plugin, internal/rm/device_map.go). To fix it, {fix}.",
            subject.what
        ),
    );
    (diagnostics, MigPlan::Nothing)
}

fn describe_policy(seen: &PolicySeen) -> String {
    match seen {
        PolicySeen::Policy(facts) => format!(
            "ClusterPolicy {:?} runs every node's device plugin with `spec.mig.strategy = \"{}\"`",
            facts.name,
            facts.mig_strategy.as_deref().unwrap_or_default()
        ),
        _ => "the node's configuration asks for the mixed MIG strategy".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::lookup;
    use crate::protocol::diagnostics::Severity;

    fn policy(mig: Option<&str>, managed: bool, strategy_is_gpufleets: bool) -> PolicySeen {
        PolicySeen::Policy(PolicyFacts {
            name: "cluster-policy".into(),
            mig_strategy: mig.map(str::to_string),
            managed,
            strategy_is_gpufleets,
        })
    }

    /// (severity, path, summary, detail) of each diagnostic, and the plan.
    fn checked(
        seen: &PolicySeen,
        sharing: serde_json::Value,
    ) -> (Vec<(Severity, String, String, String)>, MigPlan) {
        let settings: Settings = serde_json::from_value(sharing).unwrap();
        let h100 = [lookup("H100").unwrap()];
        let subject = Subject {
            what: "Fleet \"mig\"".into(),
            path: AttributePath::attr("gpu_sharing"),
            settings: &settings,
            models: &h100,
        };
        let (diagnostics, plan) = check(seen, &subject);
        let shown = diagnostics
            .0
            .into_iter()
            .map(|d| {
                let path = d.path.as_ref().map(ToString::to_string).unwrap_or_default();
                (d.severity, path, d.summary, d.detail)
            })
            .collect();
        (shown, plan)
    }

    fn mig() -> serde_json::Value {
        serde_json::json!({"strategy": "mig", "mig_layout": "all-1g.10gb"})
    }

    #[test]
    fn a_mig_fleet_needs_the_mixed_strategy() {
        // In effect already: mixed, or unset (each key's own, mixed), or no operator.
        for seen in [
            policy(Some("mixed"), false, false),
            policy(None, false, false),
            PolicySeen::NoOperator,
        ] {
            assert_eq!(
                checked(&seen, mig()),
                (Vec::new(), MigPlan::Nothing),
                "{seen:?}"
            );
        }
        // Helm's default, the operator not managed by gpufleet: an error
        // that says what the nodes would advertise and names the fix.
        let (found, plan) = checked(&policy(Some("single"), false, false), mig());
        assert_eq!(plan, MigPlan::Nothing);
        assert_eq!(found.len(), 1, "{found:?}");
        let (severity, path, summary, detail) = &found[0];
        assert_eq!(
            (severity, path.as_str(), summary.as_str()),
            (
                &Severity::Error,
                "gpu_sharing.mig_layout",
                "MIG needs the mixed MIG strategy"
            )
        );
        for phrase in [
            "would advertise 7 × `nvidia.com/gpu` per GPU instead of the 7 × `nvidia.com/mig-1g.10gb` per GPU",
            "declare a gpufleet_gpu_sharing with `manage_cluster_policy = true`",
            "--set mig.strategy=mixed",
        ] {
            assert!(detail.contains(phrase), "{phrase:?} not in {detail}");
        }
        // Managed by gpufleet_gpu_sharing, which leaves the MIG strategy
        // open: gpufleet sets mixed, and the plan says so.
        let (found, plan) = checked(&policy(Some("single"), true, false), mig());
        assert_eq!(plan, MigPlan::SetMixed("cluster-policy".into()));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Severity::Warning);
        assert!(
            found[0].3.contains("sets `spec.mig.strategy = \"mixed\"`"),
            "{found:?}"
        );
        // ... or sets another one: the fix is its `mig_strategy`.
        let (found, _) = checked(&policy(Some("none"), true, true), mig());
        assert_eq!(found[0].0, Severity::Error);
        assert!(
            found[0]
                .3
                .contains("gpufleet_gpu_sharing sets `mig_strategy = \"none\"`"),
            "{found:?}"
        );
        // all-balanced cannot run under single at all.
        let (found, _) = checked(
            &policy(Some("single"), false, false),
            serde_json::json!({"strategy": "mig", "mig_layout": "all-balanced"}),
        );
        assert!(
            found[0]
                .3
                .contains("would advertise nothing (the device plugin refuses to start)"),
            "{found:?}"
        );
        // Unreachable: a warning saying what apply checks.
        let (found, plan) = checked(&PolicySeen::Unreachable("connection refused".into()), mig());
        assert_eq!(plan, MigPlan::Nothing);
        assert_eq!(
            (found[0].0, found[0].1.as_str(), found[0].2.as_str()),
            (
                Severity::Warning,
                "gpu_sharing.mig_layout",
                "MIG strategy checked at apply"
            )
        );
        assert!(
            found[0].3.contains("(connection refused)")
                && found[0].3.contains("before writing anything")
        );
        // No MIG devices: nothing to check.
        let whole =
            serde_json::json!({"strategy": "mig", "mig_layout": "all-disabled", "replicas": 2});
        assert_eq!(
            checked(&policy(Some("single"), false, false), whole),
            (Vec::new(), MigPlan::Nothing)
        );
    }

    #[test]
    fn mps_is_refused_under_the_mixed_strategy() {
        let mps = serde_json::json!({"strategy": "mps", "replicas": 4});
        let (found, _) = checked(&policy(Some("mixed"), false, false), mps.clone());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].0, found[0].1.as_str()),
            (Severity::Error, "gpu_sharing.strategy")
        );
        assert!(
            found[0]
                .3
                .contains("using --mig-strategy=mixed is not supported with MPS")
        );
        assert!(
            checked(&policy(Some("single"), false, false), mps.clone())
                .0
                .is_empty()
        );
        assert!(checked(&PolicySeen::NoOperator, mps).0.is_empty());
    }
}
