//! How the sharing resources planned in one run go together: each says
//! what it is in the run's plan notes, and whichever of two that affect
//! each other is planned second warns or refuses.

use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics};

/// The plan-notes topic where sharing resources say what they are.
const PLAN_TOPIC: &str = "gpu-sharing";

/// What a resource planned in this run is, for the sharing caveats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PlanNote {
    /// The cluster-wide default.
    ClusterDefault {
        /// Its strategy.
        strategy: String,
        /// Its replicas.
        replicas: Option<u32>,
        /// Its MIG strategy, when set.
        mig_strategy: Option<String>,
        /// Whether it sets the ClusterPolicy (`manage_cluster_policy`), so
        /// that its MIG strategy reaches every node's device plugin.
        managed: bool,
    },
    /// A fleet.
    Fleet {
        /// The fleet's name.
        name: String,
        /// Its own sharing strategy; `None` when it has no `gpu_sharing`.
        sharing: Option<String>,
        /// Its MIG layout.
        mig_layout: Option<String>,
    },
    /// A `gpufleet_node_sharing`.
    Nodes {
        /// Its name.
        name: String,
        /// Its strategy.
        sharing: String,
        /// Its MIG layout.
        mig_layout: Option<String>,
    },
}

/// What the device plugin refuses under the MIG strategy the GPU Operator
/// gives every node (MIG_STRATEGY, from the ClusterPolicy's
/// `spec.mig.strategy`; NVIDIA gpu-operator, controllers/object_controls.go,
/// applyMIGConfiguration), which wins over the strategy in a node's own
/// configuration (NVIDIA k8s-device-plugin, api/config/v1/config.go,
/// NewConfig): the attribute to blame, the summary and NVIDIA's reason.
pub fn refused_under(
    mig_strategy: &str,
    sharing: &str,
    mig_layout: Option<&str>,
) -> Option<(&'static str, &'static str, &'static str)> {
    match (mig_strategy, sharing, mig_layout) {
        // NVIDIA k8s-device-plugin, cmd/nvidia-device-plugin/main.go (validateFlags).
        ("mixed", "mps", _) => Some((
            "strategy",
            "MPS with the mixed MIG strategy",
            "NVIDIA's device plugin refuses to start with MPS under the mixed MIG strategy: \"using --mig-strategy=mixed is not supported with MPS\" (k8s-device-plugin, cmd/nvidia-device-plugin/main.go)",
        )),
        // NVIDIA k8s-device-plugin, internal/rm/device_map.go (assertAllMigDevicesAreValid).
        ("single", "mig", Some(catalog::MIG_BALANCED)) => Some((
            "mig_layout",
            "all-balanced under the single MIG strategy",
            "under the single MIG strategy NVIDIA's device plugin needs every MIG device of a node alike, and all-balanced mixes profiles: it refuses to start with \"more than one MIG device type present on node\" (k8s-device-plugin, internal/rm/device_map.go)",
        )),
        _ => None,
    }
}

/// Warnings and errors about how this resource (`who`, described by
/// `note`) and the others planned in this run go together: fleets without
/// `gpu_sharing` get the cluster-wide sharing, MIG fleets need the `mixed`
/// MIG strategy, and what the device plugin refuses under the cluster's
/// MIG strategy is an error at the attribute of whichever of the two is
/// planned second, which is the one that tells.
pub fn plan_caveats(cluster: &crate::kit::Cluster, who: &str, note: &PlanNote) -> Diagnostics {
    let text = serde_json::to_string(note).expect("plan notes serialize");
    let others: Vec<PlanNote> = cluster
        .plan_notes
        .exchange(PLAN_TOPIC, who, text)
        .values()
        .filter_map(|n| serde_json::from_str(n).ok())
        .collect();
    let mut diagnostics = Diagnostics::default();
    let shared_default = |strategy: &str, replicas: &Option<u32>| {
        format!(
            "{strategy}{}",
            replicas.map(|r| format!(" × {r}")).unwrap_or_default()
        )
    };
    for other in &others {
        let (cluster_note, nodes) = match (note, other) {
            (c @ PlanNote::ClusterDefault { .. }, n) | (n, c @ PlanNote::ClusterDefault { .. })
                if !matches!(n, PlanNote::ClusterDefault { .. }) =>
            {
                (c, n)
            }
            _ => continue,
        };
        let PlanNote::ClusterDefault {
            strategy,
            replicas,
            mig_strategy,
            managed,
        } = cluster_note
        else {
            continue;
        };
        let (what, sharing, mig_layout, prefix) = match nodes {
            PlanNote::Fleet {
                name,
                sharing,
                mig_layout,
            } => (
                format!("Fleet {name:?}"),
                sharing.as_deref(),
                mig_layout,
                "gpu_sharing",
            ),
            PlanNote::Nodes {
                name,
                sharing,
                mig_layout,
            } => (
                format!("gpufleet_node_sharing {name:?}"),
                Some(sharing.as_str()),
                mig_layout,
                "",
            ),
            PlanNote::ClusterDefault { .. } => continue,
        };
        if let (true, Some(mig), Some(sharing)) = (*managed, mig_strategy.as_deref(), sharing)
            && let Some((attribute, summary, reason)) =
                refused_under(mig, sharing, mig_layout.as_deref())
        {
            let shown = match sharing {
                "mps" => "shares its GPUs with MPS".to_string(),
                _ => format!(
                    "uses MIG layout `{}`",
                    mig_layout.as_deref().unwrap_or_default()
                ),
            };
            let path = if matches!(note, PlanNote::ClusterDefault { .. }) {
                AttributePath::attr("mig_strategy")
            } else if prefix.is_empty() {
                AttributePath::attr(attribute)
            } else {
                AttributePath::attr(prefix).join_attr(attribute)
            };
            diagnostics.error_at(
                path,
                summary,
                format!(
                    "{what} {shown}, but gpufleet_gpu_sharing sets `mig_strategy = \"{mig}\"`, which the GPU Operator gives the device plugin of every node (and which wins over the fleet's or node's own configuration); {reason}."
                ),
            );
            continue;
        }
        if let PlanNote::Fleet { sharing: None, .. } = nodes
            && strategy != "none"
        {
            diagnostics.push(Diagnostic::warning(
                "Fleet gets the cluster-wide GPU sharing",
                format!(
                    "{what} sets no `gpu_sharing`, so its nodes take the cluster-wide default of gpufleet_gpu_sharing ({}): a pod asking for 8 GPUs there no longer gets 8 dedicated cards. To keep them dedicated (e.g. for training), set `gpu_sharing = {{ strategy = \"none\" }}` on the fleet.",
                    shared_default(strategy, replicas)
                ),
            ));
        }
        if sharing == Some("mig")
            && let Some(mig) = mig_strategy.as_deref().filter(|s| *s != "mixed")
        {
            diagnostics.push(Diagnostic::warning(
                "MIG fleet needs the mixed MIG strategy",
                format!(
                    "{what} partitions GPUs with MIG and advertises each profile as its own resource (`nvidia.com/mig-<profile>`), but gpufleet_gpu_sharing sets `mig_strategy = \"{mig}\"`, which the GPU Operator applies to every node. Use `mig_strategy = \"mixed\"`."
                ),
            ));
        }
    }
    diagnostics
}
