//! What the fleet checks before planning: Karpenter's duration, budget and
//! cron syntax, the label and requirement keys Karpenter reserves, and the
//! NodePool CRD's rules across fields that the schema's declarative
//! validators cannot express (static fleets, size limits, taint values).
//! Rules that depend on the label scheme (what requirements the attributes
//! generate, and whether raw ones contradict them) are checked at plan by
//! the requirements engine.

use super::constraints::{CAPACITY_TYPE_LABEL, CONSTRAINTS};
use super::node_pool::{GPU_RESOURCE, GPUS_LIMIT, NODES_LIMIT};
use crate::catalog::LabelScheme;
use crate::framework::validators::quoted_list;
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};
use crate::resources::taint;

/// The CRD's bounds on list and map sizes.
const MAX_LABELS: usize = 100;
const MAX_BUDGETS: usize = 50;
const MAX_REQUIREMENT_KEY: usize = 316;

/// Label domains a NodePool template may not set labels in: Karpenter's own
/// and those its AWS and Azure providers reserve.
const RESERVED_LABEL_DOMAINS: &[&str] =
    &["karpenter.sh", "karpenter.k8s.aws", "karpenter.azure.com"];
/// Label domains a requirement may not use (the cloud providers' domains
/// hold the well-known instance labels requirements select on).
const RESERVED_REQUIREMENT_DOMAINS: &[&str] = &["karpenter.sh"];

/// Checks across attributes, after the schema's validators.
pub(super) fn validate(config: &Value, diagnostics: &mut Diagnostics) {
    if let Some(name) = config.attr("name").as_str()
        && name.len() > 63
    {
        diagnostics.error_at(
            AttributePath::attr("name"),
            "Name too long",
            format!(
                "{name:?} has {} characters; Karpenter labels each node with its NodePool's name, and label values hold at most 63.",
                name.len()
            ),
        );
    }
    // A lower bound above its upper one leaves no node (the requirements
    // engine says so again at plan, for decomposition).
    for diagnostic in CONSTRAINTS.iter().filter_map(|c| c.passes_upper_in(config)) {
        diagnostics.push(diagnostic);
    }
    // Karpenter allows one taint per key and effect across both lists.
    taint::check_unique(config, &["taints", "startup_taints"], diagnostics);
    check_taint_values(config, diagnostics);
    check_inference_capacity(config, diagnostics);
    check_labels(config, diagnostics);
    check_requirements(config, diagnostics);
    check_limits(config, diagnostics);
    check_static(config, diagnostics);
    check_sizes(config, diagnostics);
    check_label_scheme(config, diagnostics);
}

/// A `label_scheme` other than the one of the node class's cloud: the
/// NodePool would require labels that no node of that class carries, so
/// Karpenter would never launch one.
fn check_label_scheme(config: &Value, diagnostics: &mut Diagnostics) {
    let node_class = config.attr("node_class");
    let (Some(setting), Some(group)) = (
        config.attr("label_scheme").as_str(),
        node_class.attr("group").as_str(),
    ) else {
        return;
    };
    let (Some(set), Some(nodes)) = (
        LabelScheme::parse(setting),
        LabelScheme::of_node_class(group),
    ) else {
        return;
    };
    if set == nodes {
        return;
    }
    let kind = node_class.attr("kind").as_str().unwrap_or("node class");
    diagnostics.error_at(
        AttributePath::attr("label_scheme"),
        "Label scheme contradicts the node class",
        format!(
            "label_scheme = \"{set}\" puts the GPU and instance family constraints on {}, which no node of a {group} {kind} carries: Karpenter labels those nodes with the {nodes} scheme's {}. It would never launch a node for this fleet. Remove `label_scheme` (the node class gives \"{nodes}\"), or set it to \"{nodes}\".",
            quoted_list(&set.own_labels()),
            quoted_list(&nodes.own_labels()),
        ),
    );
}

/// The unit letters of a duration such as `1h30m` (digits then one of
/// `s`, `m`, `h`, repeated); `None` if it is not one.
fn duration_units(s: &str) -> Option<Vec<char>> {
    let mut units = Vec::new();
    let mut digits = 0;
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits += 1;
        } else if digits > 0 && matches!(c, 's' | 'm' | 'h') {
            units.push(c);
            digits = 0;
        } else {
            return None;
        }
    }
    (digits == 0 && !units.is_empty()).then_some(units)
}

pub(super) fn is_karpenter_duration(s: &str) -> bool {
    s == "Never" || duration_units(s).is_some()
}

/// `terminationGracePeriod`: a duration, without `Never`.
pub(super) fn is_termination_grace_period(s: &str) -> bool {
    duration_units(s).is_some()
}

/// Budget durations are hours and/or minutes (`1h`, `30m`, `1h30m`),
/// optionally with the `0s` Go's formatting appends.
pub(super) fn is_budget_duration(s: &str) -> bool {
    let s = s.strip_suffix("0s").unwrap_or(s);
    matches!(
        duration_units(s).as_deref(),
        Some(['h'] | ['m'] | ['h', 'm'])
    )
}

/// A node count (`5`) or a percentage of the fleet's nodes (`10%`).
pub(super) fn is_budget_nodes(s: &str) -> bool {
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    match s.strip_suffix('%') {
        Some(percent) => percent == "100" || (digits(percent) && percent.len() <= 2),
        None => digits(s),
    }
}

/// A cron schedule: five fields, or a macro such as `@daily`.
pub(super) fn is_cron_schedule(s: &str) -> bool {
    const MACROS: &[&str] = &[
        "annually", "yearly", "monthly", "weekly", "daily", "midnight", "hourly",
    ];
    s.strip_prefix('@').map_or_else(
        || s.split_whitespace().count() == 5,
        |name| MACROS.contains(&name),
    )
}

/// Why Karpenter refuses a NodePool label or requirement key, if it does:
/// `kubernetes.io/hostname`, and keys in one of `domains` (or a subdomain)
/// other than the capacity type.
fn reserved_key(key: &str, domains: &[&str]) -> Option<String> {
    if key == "kubernetes.io/hostname" {
        return Some("Karpenter reserves `kubernetes.io/hostname`: every node has its own.".into());
    }
    let (domain, _) = key.split_once('/')?;
    // As the CRD's rule has it: any domain that ends with the reserved one.
    let reserved = domains.iter().find(|d| domain.ends_with(**d))?;
    (key != CAPACITY_TYPE_LABEL).then(|| {
        format!(
            "the label domain `{reserved}` is reserved: Karpenter and its cloud providers set these \
             labels themselves (only `{CAPACITY_TYPE_LABEL}` may be set)."
        )
    })
}

/// The CRD's pattern for template taint values needs at least one character.
fn check_taint_values(config: &Value, diagnostics: &mut Diagnostics) {
    for list in ["taints", "startup_taints"] {
        for (index, taint) in config
            .attr(list)
            .elements()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if taint.attr("value").as_str() == Some("") {
                diagnostics.error_at(
                    AttributePath::attr(list).join_index(index).join_attr("value"),
                    "Invalid taint value",
                    format!("{list}[{index}].value: a NodePool taint value cannot be empty; leave `value` out instead."),
                );
            }
        }
    }
}

/// A fleet tainted for inference (a taint whose key or value says so) that
/// lets Karpenter choose spot: online serving replicas land on capacity the
/// cloud takes back at short notice. Warned, not refused: batch inference
/// may want spot. A raw `karpenter.sh/capacity-type` requirement decides
/// instead of `capacity_types`, so nothing is said then.
fn check_inference_capacity(config: &Value, diagnostics: &mut Diagnostics) {
    let says_inference = |v: &Value| v.as_str().is_some_and(|s| s.contains("inference"));
    let for_inference = config
        .attr("taints")
        .elements()
        .into_iter()
        .flatten()
        .any(|t| says_inference(t.attr("key")) || says_inference(t.attr("value")));
    let capacity = config.attr("capacity_types");
    let raw_capacity = config
        .attr("requirements")
        .elements()
        .into_iter()
        .flatten()
        .any(|r| r.attr("key").as_str() == Some(CAPACITY_TYPE_LABEL));
    let allows_spot = match capacity.elements() {
        Some(types) => types.iter().any(|t| t.as_str() == Some("spot")),
        None => capacity.is_null() && !raw_capacity,
    };
    if for_inference && allows_spot && !config.attr("requirements").is_unknown() {
        diagnostics.push(
            Diagnostic::warning(
                "Inference fleet may run on spot capacity",
                "This fleet is tainted for inference, and without `capacity_types` (or with \"spot\" in it) Karpenter launches spot nodes wherever they are offered and cheaper; the cloud reclaims them at short notice, taking serving replicas with them. Set `capacity_types = [\"on-demand\"]` (or [\"on-demand\", \"reserved\"]) for online serving.",
            )
            .at(AttributePath::attr("capacity_types")),
        );
    }
}

/// `gpus` is `nvidia.com/gpu`: only one of the two.
fn check_limits(config: &Value, diagnostics: &mut Diagnostics) {
    let limits = config.attr("limits");
    if let Some(entries) = limits.entries()
        && entries.contains_key(GPUS_LIMIT)
        && entries.contains_key(GPU_RESOURCE)
    {
        diagnostics.error_at(
            AttributePath::attr("limits").join_key(GPU_RESOURCE),
            "Conflicting limits",
            format!("`{GPUS_LIMIT}` and `{GPU_RESOURCE}` are the same limit; keep one."),
        );
    }
}

/// The CRD's rules for static NodePools (`replicas` set): only
/// `limits.nodes`, and no `weight`.
fn check_static(config: &Value, diagnostics: &mut Diagnostics) {
    if config.attr("replicas").is_null() || config.attr("replicas").is_unknown() {
        return;
    }
    for name in config
        .attr("limits")
        .entries()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        if name != NODES_LIMIT {
            diagnostics.error_at(
                AttributePath::attr("limits").join_key(name),
                "Limit not allowed on a static fleet",
                format!(
                    "limits[{name:?}]: a static fleet (with `replicas`) may only limit `{NODES_LIMIT}`; Karpenter refuses other limits."
                ),
            );
        }
    }
    let weight = config.attr("weight");
    if !weight.is_null() && !weight.is_unknown() {
        diagnostics.error_at(
            AttributePath::attr("weight"),
            "Weight not allowed on a static fleet",
            "A static fleet (with `replicas`) has no `weight`: Karpenter does not choose between static NodePools. Remove one of them.",
        );
    }
}

/// The CRD's bounds: at most 100 node labels and 50 budgets.
fn check_sizes(config: &Value, diagnostics: &mut Diagnostics) {
    if let Some(labels) = config.attr("labels").entries()
        && labels.len() > MAX_LABELS
    {
        diagnostics.error_at(
            AttributePath::attr("labels"),
            "Too many labels",
            format!(
                "{} node labels; Karpenter allows at most {MAX_LABELS}.",
                labels.len()
            ),
        );
    }
    if let Some(budgets) = config.attr("disruption").attr("budgets").elements()
        && budgets.len() > MAX_BUDGETS
    {
        diagnostics.error_at(
            AttributePath::attr("disruption").join_attr("budgets"),
            "Too many budgets",
            format!(
                "{} disruption budgets; Karpenter allows at most {MAX_BUDGETS}.",
                budgets.len()
            ),
        );
    }
}

fn check_labels(config: &Value, diagnostics: &mut Diagnostics) {
    for key in config
        .attr("labels")
        .entries()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        if let Some(why) = reserved_key(key, RESERVED_LABEL_DOMAINS) {
            diagnostics.error_at(
                AttributePath::attr("labels").join_key(key),
                "Reserved label",
                format!("`{key}`: {why}"),
            );
        }
    }
}

fn check_requirements(config: &Value, diagnostics: &mut Diagnostics) {
    let requirements = config.attr("requirements");
    for (index, requirement) in requirements.elements().into_iter().flatten().enumerate() {
        let path = AttributePath::attr("requirements").join_index(index);
        if let Some(key) = requirement.attr("key").as_str()
            && key.len() > MAX_REQUIREMENT_KEY
        {
            diagnostics.error_at(
                path.join_attr("key"),
                "Requirement key too long",
                format!("{path}: the key has {} characters; Karpenter allows at most {MAX_REQUIREMENT_KEY}.", key.len()),
            );
        }
        if let Some(key) = requirement.attr("key").as_str()
            && let Some(why) = reserved_key(key, RESERVED_REQUIREMENT_DOMAINS)
        {
            diagnostics.error_at(
                path.join_attr("key"),
                "Reserved requirement key",
                format!("{path}: `{key}`: {why}"),
            );
        }
        let values = requirement.attr("values");
        let Some(operator) = requirement.attr("operator").as_str() else {
            continue;
        };
        if values.is_unknown() {
            continue;
        }
        let values: Vec<Option<&str>> = values
            .elements()
            .into_iter()
            .flatten()
            .map(Value::as_str)
            .collect();
        let problem = match operator {
            "In" if values.is_empty() => Some("`In` needs at least one value."),
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                Some("`Exists` and `DoesNotExist` take no values.")
            }
            "Gt" | "Lt" | "Gte" | "Lte" => match values.as_slice() {
                [Some(v)] if v.parse::<i64>().is_ok_and(|n| n >= 0) => None,
                [None] => None,
                _ => Some("Comparisons take exactly one value, a whole number of zero or more."),
            },
            _ => None,
        };
        if let Some(problem) = problem {
            let at = path.join_attr("values");
            diagnostics.error_at(
                at.clone(),
                "Invalid requirement",
                format!("{at}: {problem}"),
            );
        }
        if let Some(min) = requirement.attr("min_values").as_i64()
            && operator == "In"
            && usize::try_from(min).is_ok_and(|min| min > values.len())
        {
            diagnostics.error_at(
                path.join_attr("min_values"),
                "Invalid requirement",
                format!(
                    "{path}: min_values is {min} but only {} values are listed.",
                    values.len()
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_and_schedule_syntax() {
        for ok in ["720h", "1h30m", "30s", "Never", "0s"] {
            assert!(is_karpenter_duration(ok), "{ok}");
        }
        for bad in ["", "30d", "h", "1.5h", "never", "1h 30m"] {
            assert!(!is_karpenter_duration(bad), "{bad}");
        }
        for ok in ["1h", "30m", "1h30m", "8h0s"] {
            assert!(is_budget_duration(ok), "{ok}");
        }
        for bad in ["10s", "30m1h", "0s", "1h30m15s"] {
            assert!(!is_budget_duration(bad), "{bad}");
        }
        assert!(is_budget_nodes("0") && is_budget_nodes("100%") && is_budget_nodes("5%"));
        assert!(!is_budget_nodes("101%") && !is_budget_nodes("%") && !is_budget_nodes("ten"));
        assert!(is_cron_schedule("@daily") && is_cron_schedule("0 9 * * mon-fri"));
        assert!(!is_cron_schedule("@often") && !is_cron_schedule("0 9 * *"));
    }
}
