//! A fleet's `limits` as its nodes advertise GPUs: what a MIG strategy
//! makes of `limits.gpus`.

use super::super::node_pool::GPUS_LIMIT;
use crate::catalog::GPU_RESOURCE;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
use crate::resources::fleet::resolved::Models;
use crate::resources::sharing::Settings;

/// A `gpus` limit caps `nvidia.com/gpu`, which a node partitioned by MIG
/// under the `mixed` strategy does not advertise (its NodeOverlay sets it to
/// 0), so it would never bind: refused, naming what does (a warning when a
/// gpufleet_gpu_sharing set the strategy, see [`caveats`]). Under `single`
/// it counts MIG devices: a limit below one node's stops every launch.
pub(super) fn check_gpu_limit(
    config: &Value,
    settings: &Settings,
    models: &Models,
    gpus_per_node: Option<u32>,
    from_gpufleet: bool,
    diagnostics: &mut Diagnostics,
) {
    let Some(strategy) = settings.mig() else {
        return;
    };
    let limits = config.attr("limits");
    let Some((key, limit)) = [GPUS_LIMIT, GPU_RESOURCE].into_iter().find_map(|k| {
        limits
            .entries()
            .and_then(|e| e.get(k).map(|v| (k, v.clone())))
    }) else {
        return;
    };
    let advertised = settings.advertised(&models.known, strategy);
    let at = AttributePath::attr("limits").join_key(key);
    if advertised.hides_whole_gpus {
        let per_node = gpus_per_node.map(|gpus| {
            advertised
                .node_capacity(gpus)
                .into_iter()
                .filter(|(r, _)| r != GPU_RESOURCE)
                .map(|(r, n)| format!("`\"{r}\" = \"{n}\"` per node"))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let binds = match (&advertised.resource, per_node) {
            (Some(resource), Some(per_node)) => format!("`nodes`, or `{resource}` ({per_node})"),
            (Some(resource), None) => format!("`nodes`, or `{resource}`"),
            (None, _) => "`nodes`".to_string(),
        };
        let detail = format!(
            "`limits.{key}` caps `{GPU_RESOURCE}`, but under the `{}` MIG strategy the fleet's nodes advertise none (their MIG devices are {}, and their NodeOverlay sets `{GPU_RESOURCE}` to 0), so the limit never binds and the fleet grows without bound. Limit what binds: {binds}.",
            strategy.as_str(),
            advertised
                .resource
                .as_deref()
                .map_or("not advertised".to_string(), |r| format!(
                    "`{r}` and its kind"
                )),
        );
        let diagnostic = if from_gpufleet {
            Diagnostic::warning("GPU limit that never binds", detail)
        } else {
            Diagnostic::error("GPU limit that never binds", detail)
        };
        diagnostics.push(diagnostic.at(at));
        return;
    }
    let (Some(per_node), Some(limit)) = (
        gpus_per_node.map(|g| advertised.units_per_gpu() * g),
        limit.as_str().and_then(|l| l.parse::<u32>().ok()),
    ) else {
        return;
    };
    if advertised.units_per_gpu() > 1 && limit < per_node {
        diagnostics.push(
            Diagnostic::warning(
                "GPU limit below one node",
                format!(
                    "Under the `{}` MIG strategy each node of the fleet advertises {per_node} `{GPU_RESOURCE}` ({} MIG devices per GPU), which is what Karpenter counts against `limits.{key}` = {limit}: it launches no node at all. Give the limit in advertised devices, a multiple of {per_node}.",
                    strategy.as_str(),
                    advertised.units_per_gpu()
                ),
            )
            .at(at),
        );
    }
}
