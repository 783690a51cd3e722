//! Sharing settings checked against the GPU models they run on: what
//! NVIDIA's device plugin, its MPS control daemon and mig-manager accept,
//! at plan time, from configuration alone.

use super::device_plugin::MigStrategy;
use super::{Settings, Strategy, refused_under};
use crate::catalog::{self, Accelerator, MigLayout, Part, Sharing};
use crate::framework::validators::quoted_list;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// The most clients NVIDIA's MPS control daemon serves per GPU (16 below
/// compute capability 7.5; k8s-device-plugin,
/// cmd/mps-control-daemon/mps/device.go).
const MAX_MPS_REPLICAS: i64 = 48;
/// Where mig-manager's layouts, and the devices each applies to, come from.
const MIG_MANAGER_DEFAULTS: &str = "the GPU Operator's default mig-manager configuration (assets/state-mig-manager/0400_configmap.yaml)";

/// What the GPU models of a sharing configuration are known to be.
pub enum Models<'a> {
    /// The models of a fleet's `accelerators` (empty: the fleet has none)
    /// and the parts its names single out (`H200-NVL`).
    Fleet {
        /// The models, in the fleet's order.
        models: &'a [&'static Accelerator],
        /// The parts among them the names single out.
        parts: &'a [&'static Part],
    },
    /// Unknown: the cluster-wide default, or existing nodes.
    Unknown,
}

/// Checks sharing settings in configuration (the object at `path`, whose
/// schema allows `strategies`) against the GPU models they run on. Unknown
/// values are left for later.
pub fn check(
    config: &Value,
    path: &AttributePath,
    strategies: &[&str],
    models: Models<'_>,
    diagnostics: &mut Diagnostics,
) {
    let Some(strategy) = config
        .attr("strategy")
        .as_str()
        .filter(|s| strategies.contains(s))
        .and_then(Strategy::parse)
    else {
        return;
    };
    let at = |name: &str| path.join_attr(name);
    let named = |name: &str| {
        if path.0.is_empty() {
            format!("`{name}`")
        } else {
            format!("`{path}.{name}`")
        }
    };
    let set = |name: &str| !config.attr(name).is_null();
    let mut error = |name: &str, summary: &str, detail: String| {
        diagnostics.error_at(at(name), summary, detail);
    };
    let replicas = config.attr("replicas");
    let layout = config.attr("mig_layout");
    let renames = config.attr("rename_by_default").as_bool() == Some(true);
    match strategy {
        Strategy::None => {
            for name in ["replicas", "mig_layout", "fail_requests_greater_than_one"] {
                if set(name) {
                    error(
                        name,
                        "Setting without sharing",
                        format!(
                            "{}: means nothing with `strategy = \"none\"` (dedicated GPUs); leave it out.",
                            named(name)
                        ),
                    );
                }
            }
            if renames {
                error(
                    "rename_by_default",
                    "Setting without sharing",
                    format!(
                        "{}: nothing is shared with `strategy = \"none\"`, so nothing is renamed.",
                        named("rename_by_default")
                    ),
                );
            }
        }
        Strategy::TimeSlicing | Strategy::Mps => {
            if replicas.is_null() {
                error(
                    "replicas",
                    "Missing replicas",
                    format!(
                        "{}: `strategy = \"{}\"` needs `replicas`, the pods that share each GPU (at least 2; at most 48 with MPS).",
                        named("replicas"),
                        config.attr("strategy").as_str().unwrap_or_default()
                    ),
                );
            }
            if strategy == Strategy::Mps
                && let Some(n) = replicas.as_i64().filter(|n| *n > MAX_MPS_REPLICAS)
            {
                error(
                    "replicas",
                    "Too many MPS clients",
                    format!(
                        "{}: {n} is more MPS clients than NVIDIA's MPS control daemon serves per GPU: at most {MAX_MPS_REPLICAS}, 16 below compute capability 7.5 (k8s-device-plugin, cmd/mps-control-daemon/mps/device.go). Time slicing has no such bound.",
                        named("replicas")
                    ),
                );
            }
            if set("mig_layout") {
                error(
                    "mig_layout",
                    "MIG layout without MIG",
                    format!(
                        "{}: a MIG layout needs `strategy = \"mig\"`.",
                        named("mig_layout")
                    ),
                );
            }
        }
        Strategy::Mig => {
            if layout.is_null() {
                error(
                    "mig_layout",
                    "Missing MIG layout",
                    format!(
                        "{}: `strategy = \"mig\"` needs a `mig_layout`, such as `all-1g.10gb` or `all-balanced`.",
                        named("mig_layout")
                    ),
                );
            }
            // all-disabled leaves whole GPUs, which time slicing shares.
            if layout.as_str() == Some(catalog::MIG_ENABLED) && set("replicas") {
                error(
                    "replicas",
                    "Nothing to time-slice",
                    format!(
                        "{}: layout `{}` makes no MIG devices to time-slice.",
                        named("replicas"),
                        layout.as_str().unwrap_or_default()
                    ),
                );
            }
            if replicas.is_null() {
                for name in ["fail_requests_greater_than_one"] {
                    if set(name) {
                        error(
                            name,
                            "Setting without sharing",
                            format!(
                                "{}: MIG devices are only shared when time-sliced, with `replicas`.",
                                named(name)
                            ),
                        );
                    }
                }
                if renames {
                    error(
                        "rename_by_default",
                        "Setting without sharing",
                        format!(
                            "{}: MIG devices are only renamed when time-sliced, with `replicas`.",
                            named("rename_by_default")
                        ),
                    );
                }
            }
        }
    }
    // A strategy known in configuration (set, or referenced from a
    // gpufleet_gpu_sharing planned with it) is checked here already.
    if let Some(mig) = config
        .attr("mig_strategy")
        .as_str()
        .and_then(MigStrategy::parse)
        .filter(|_| strategies.contains(&"mig"))
    {
        let settings = Settings {
            strategy: config.attr("strategy").as_str().unwrap_or_default().into(),
            mig_layout: layout.as_str().map(str::to_string),
            ..Settings::default()
        };
        let known: &[&'static Accelerator] = match &models {
            Models::Fleet { models, .. } => models,
            Models::Unknown => &[],
        };
        if let Some(refusal) = refused_under(mig, &settings, known) {
            error(
                refusal.attribute,
                refusal.summary,
                format!(
                    "{} with {} = \"{}\": {}.",
                    named(refusal.attribute),
                    named("mig_strategy"),
                    mig.as_str(),
                    refusal.reason
                ),
            );
        }
    }
    let Models::Fleet { models, parts } = models else {
        return;
    };
    let mut warnings: Vec<Diagnostic> = Vec::new();
    let needs_models = matches!(strategy, Strategy::Mps | Strategy::Mig);
    if needs_models && models.is_empty() {
        let mode = if strategy == Strategy::Mps {
            "MPS"
        } else {
            "MIG"
        };
        error(
            "strategy",
            "GPU models unknown",
            format!(
                "{}: {mode} depends on the GPU model, and the fleet sets no `accelerators`: list the models so they can be checked.",
                named("strategy")
            ),
        );
        return;
    }
    match strategy {
        Strategy::Mps => {
            for model in models {
                // Every catalog model has MPS (compute capability 3.5 and up).
                let (major, minor) = model.compute_capability;
                if model.compute_capability < (7, 0) {
                    warnings.push(
                        Diagnostic::warning(
                            "MPS before Volta",
                            format!(
                                "{}: {} is {} ({major}.{minor}). NVIDIA's Multi-Process Service documentation (\"Volta MPS\") gives each client its own GPU address space and a share of the execution resources from Volta on; before Volta, clients share one address space and the compute split is not enforced. The device plugin runs MPS there with at most 16 clients per GPU.",
                                named("strategy"),
                                model.name,
                                title(model.architecture.as_str())
                            ),
                        )
                        .at(at("strategy")),
                    );
                }
                if let Some(n) = replicas.as_i64()
                    && n > i64::from(model.max_mps_clients())
                    && n <= MAX_MPS_REPLICAS
                {
                    error(
                        "replicas",
                        "Too many MPS clients",
                        format!(
                            "{}: {n} is more MPS clients than {} serves per GPU: at most {} at compute capability {major}.{minor} (48 from 7.5 on; k8s-device-plugin, cmd/mps-control-daemon/mps/device.go).",
                            named("replicas"),
                            model.name,
                            model.max_mps_clients()
                        ),
                    );
                }
            }
        }
        Strategy::Mig => {
            let mut first: Option<(&Accelerator, MigLayout)> = None;
            for model in models {
                if !model.supports(Sharing::Mig) {
                    error(
                        "strategy",
                        "MIG not supported",
                        format!(
                            "{}: {} has no MIG; MIG needs a data-centre Ampere, Hopper or Blackwell GPU such as A100, H100 or B200.",
                            named("strategy"),
                            model.name
                        ),
                    );
                    continue;
                }
                // A name no model has is the `mig_layout` validator's to refuse.
                let Some(name) = layout.as_str().filter(|n| catalog::is_known_layout(n)) else {
                    continue;
                };
                let Some(found) = model.mig_layout(name) else {
                    let known: Vec<String> =
                        model.mig_layouts().into_iter().map(|l| l.name).collect();
                    let known: Vec<&str> = known.iter().map(String::as_str).collect();
                    error(
                        "mig_layout",
                        "MIG layout not available",
                        format!(
                            "{}: {} has no layout `{name}`; its layouts are {}.",
                            named("mig_layout"),
                            model.name,
                            quoted_list(&known)
                        ),
                    );
                    continue;
                };
                // mig-manager applies a layout to the GPUs its device filter
                // names and leaves the others as they were (GPU Operator,
                // assets/state-mig-manager/0400_configmap.yaml).
                let named_parts: Vec<&Part> = parts
                    .iter()
                    .copied()
                    .filter(|p| p.model == model.name)
                    .collect();
                let not_applied = |of: &[&Part]| -> Vec<String> {
                    of.iter()
                        .filter(|p| !p.applies(name))
                        .map(|p| format!("the {} ({})", p.name, p.device_filter()))
                        .collect()
                };
                if named_parts.is_empty() {
                    let may_land_on: Vec<&Part> = model.parts().collect();
                    let left = not_applied(&may_land_on);
                    if !left.is_empty() {
                        let applied: Vec<&str> = may_land_on
                            .iter()
                            .filter(|p| p.applies(name))
                            .map(|p| p.name)
                            .collect();
                        warnings.push(
                            Diagnostic::warning(
                                "MIG layout not applied to every part",
                                format!(
                                    "{}: {MIG_MANAGER_DEFAULTS} applies `{name}` only to {} by PCI device ID, so {} keeps the MIG configuration it had and advertises none of the layout's devices. `{}` covers both; name {} in `accelerators` when the fleet's nodes are that part.",
                                    named("mig_layout"),
                                    quoted_list(&applied),
                                    left.join(", "),
                                    model.name,
                                    quoted_list(&applied)
                                ),
                            )
                            .at(at("mig_layout")),
                        );
                    }
                } else {
                    let left = not_applied(&named_parts);
                    if !left.is_empty() {
                        error(
                            "mig_layout",
                            "MIG layout not applied to this part",
                            format!(
                                "{}: {MIG_MANAGER_DEFAULTS} restricts `{name}` to other PCI devices, so {} would keep the MIG configuration it had and advertise none of the layout's devices. Choose another layout, such as `{}`.",
                                named("mig_layout"),
                                left.join(", "),
                                catalog::MIG_BALANCED
                            ),
                        );
                    }
                }
                match &first {
                    None => first = Some((model, found)),
                    Some((other, theirs)) if theirs.resources() != found.resources() => {
                        error(
                            "mig_layout",
                            "MIG devices differ between models",
                            format!(
                                "{}: `{name}` gives {} {} per GPU but {} {}; workloads could not ask for one kind of device. Use one fleet per model.",
                                named("mig_layout"),
                                other.name,
                                describe(&theirs.resources()),
                                model.name,
                                describe(&found.resources())
                            ),
                        );
                    }
                    Some(_) => {}
                }
            }
        }
        _ => {}
    }
    for warning in warnings {
        diagnostics.push(warning);
    }
}

fn title(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
        .unwrap_or_default()
}

fn describe(resources: &[(String, u32)]) -> String {
    if resources.is_empty() {
        return "no devices".into();
    }
    resources
        .iter()
        .map(|(r, n)| format!("{n} × {r}"))
        .collect::<Vec<_>>()
        .join(" + ")
}
