//! The fleet's namespace fence, `allowed_namespaces` (see
//! [`crate::kit::admission`]): outside the namespaces it allows, the API
//! server refuses a workload whose pods would be let onto the fleet's nodes.
//! Such a pod tolerates every `NoSchedule` and `NoExecute` taint of the fleet
//! (by Kubernetes' toleration rule, so a blanket `operator: Exists` does), or
//! selects the fleet's nodes by their `karpenter.sh/nodepool` label: in
//! `nodeSelector`, or with `In` in a term of its required node affinity.
//! `PreferNoSchedule` taints keep no pod off, so they do not count; a fleet
//! without hard taints is fenced by its node selector alone, which the plan
//! warns about.

use super::model::{Model, NODEPOOL_LABEL};
use crate::cluster::retry::Deadline;
use crate::fence_description;
use crate::framework::PlanChange;
use crate::framework::schema::Attr;
use crate::kit::Cluster;
use crate::kit::admission::{self, Fence, Guarded, cel_strings, tolerated};
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// Taint effects that keep pods off a node (k8s.io/api core/v1 types.go,
/// TaintEffect; `PreferNoSchedule` only discourages).
const HARD_EFFECTS: &[&str] = &["NoSchedule", "NoExecute"];

/// The fence's attributes.
pub(super) fn attributes() -> Vec<Attr> {
    admission::attributes(fence_description!(
        "fleet",
        "would be let onto its nodes: one tolerating all of the fleet's `NoSchedule` and `NoExecute` taints (a blanket `operator: Exists` toleration included), or selecting its nodes by the `karpenter.sh/nodepool` label of `node_selector` (in `nodeSelector`, or with `In` in a required node affinity term)"
    ))
}

fn policy_name(name: &str) -> String {
    admission::policy_name("fleet", name)
}

/// The fence's cross-attribute rules.
pub(super) fn validate(config: &Value, diagnostics: &mut Diagnostics) {
    let policy = config.attr("name").as_str().map(policy_name);
    admission::validate(config, policy, diagnostics);
}

/// `admission_policy` as configured.
pub(super) fn derive(model: &mut Model) {
    let name = policy_name(&model.name);
    model.fence.derive(name);
}

/// The fence of `model`, with `fence` as its settings.
fn guarded(model: &Model, fence: Fence) -> Guarded {
    let name = &model.name;
    let hard: Vec<_> = model
        .taints
        .iter()
        .flatten()
        .filter(|t| HARD_EFFECTS.contains(&t.effect.as_str()))
        .collect();
    let tolerates = match hard.is_empty() {
        true => "false".to_string(),
        false => hard
            .iter()
            .map(|t| tolerated(&t.key, t.value.as_deref().unwrap_or(""), &t.effect))
            .collect::<Vec<_>>()
            .join(" && "),
    };
    let pool = cel_strings([NODEPOOL_LABEL]);
    let fleet = cel_strings([name.as_str()]);
    let selects = format!(
        "variables.podSpec.?nodeSelector[?{label}].orValue('') in {fleet} || variables.podSpec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([]).exists(term, term.?matchExpressions.orValue([]).exists(e, e.key == {label} && e.operator == 'In' && e.?values.orValue([]).exists(v, v in {fleet})))",
        label = &pool[1..pool.len() - 1],
    );
    let taints: Vec<String> = hard
        .iter()
        .map(|t| match &t.value {
            Some(value) if !value.is_empty() => format!("{}={value}:{}", t.key, t.effect),
            _ => format!("{}:{}", t.key, t.effect),
        })
        .collect();
    let how = match taints.is_empty() {
        true => format!("selects its nodes ({NODEPOOL_LABEL}={name})"),
        false => format!(
            "tolerates its taints ({}) or selects its nodes ({NODEPOOL_LABEL}={name})",
            taints.join(", ")
        ),
    };
    Guarded {
        resource_type: "gpufleet_fleet",
        name: name.clone(),
        what: format!("fleet {name:?}"),
        policy_name: policy_name(name),
        variables: vec![("selectsFleet", selects), ("toleratesFleet", tolerates)],
        uses: "variables.selectsFleet || variables.toleratesFleet".to_string(),
        how,
        fence,
    }
}

/// Plan-time: a warning for a fleet whose nodes no taint keeps other pods
/// off, and, when the plan creates or changes the fleet (`changing`),
/// whether the API server enforces the fence.
pub(super) async fn modify_plan(
    cluster: &Cluster,
    change: &PlanChange<'_>,
    changing: bool,
    diagnostics: &mut Diagnostics,
) {
    let config = change.config;
    let fenced = ["allowed_namespaces", "allowed_namespace_selector"]
        .iter()
        .any(|a| !config.attr(a).is_null());
    let Some(name) = config.attr("name").as_str().filter(|_| fenced) else {
        return;
    };
    let taints = config.attr("taints");
    let hard = taints.elements().into_iter().flatten().any(|t| {
        t.attr("effect")
            .as_str()
            .is_none_or(|e| HARD_EFFECTS.contains(&e))
    });
    if taints.is_wholly_known() && !hard {
        diagnostics.push(
            Diagnostic::warning(
                "Fleet fenced by its node selector alone",
                format!(
                    "Fleet {name:?} has no `NoSchedule` or `NoExecute` taint, so a pod from any namespace may land on its nodes without selecting them; `allowed_namespaces` refuses only pods that select them by {NODEPOOL_LABEL}. Taint the fleet (e.g. `workload=training:NoSchedule`) to keep other pods off."
                ),
            )
            .at(AttributePath::attr("taints")),
        );
    }
    if changing {
        let what = format!("fleet {name:?}");
        diagnostics.extend(admission::plan(cluster, &what).await);
    }
}

/// Before the NodePool is written: the API server must enforce the fence.
pub(super) async fn prepare(
    cluster: &Cluster,
    planned: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    admission::prepare(cluster, &guarded(planned, planned.fence.clone()), deadline).await
}

/// Writes the fence `state` asks for, or removes the one `prior` had.
pub(super) async fn write(
    cluster: &Cluster,
    prior: Option<&Model>,
    state: &mut Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let prior_fenced = prior.is_some_and(|p| p.fence.fenced());
    let wanted = guarded(state, state.fence.clone());
    admission::write(cluster, &wanted, prior_fenced, &mut state.fence, deadline).await
}

/// Reads the fence into `state` (after an import, its settings too).
pub(super) async fn read(
    cluster: &Cluster,
    state: &mut Model,
    importing: bool,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    let mut fence = state.fence.clone();
    admission::read(
        cluster,
        |settings| guarded(state, settings),
        &mut fence,
        importing,
        deadline,
    )
    .await?;
    state.fence = fence;
    Ok(())
}

/// Removes the fence `prior` wrote.
pub(super) async fn delete(
    cluster: &Cluster,
    prior: &Model,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !prior.fence.fenced() && prior.fence.admission_policy.is_none() {
        return Ok(());
    }
    admission::delete(cluster, &policy_name(&prior.name), deadline).await
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::resources::fleet::model::Taint;

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.map(str::to_string),
            effect: effect.into(),
        }
    }

    fn fleet(taints: Vec<Taint>) -> Model {
        Model {
            name: "training".into(),
            taints: Some(taints),
            ..Default::default()
        }
    }

    #[test]
    fn a_pod_uses_the_fleet_by_tolerating_every_hard_taint_or_selecting_it() {
        let model = fleet(vec![
            taint("workload", Some("training"), "NoSchedule"),
            taint("soft", None, "PreferNoSchedule"),
            taint("gpu", None, "NoExecute"),
        ]);
        let guarded = guarded(&model, Fence::default());
        let variables: BTreeMap<_, _> = guarded.variables.iter().cloned().collect();
        assert_eq!(
            variables["toleratesFleet"],
            format!(
                "{} && {}",
                tolerated("workload", "training", "NoSchedule"),
                tolerated("gpu", "", "NoExecute")
            ),
            "PreferNoSchedule keeps no pod off, so it does not count"
        );
        assert!(variables["selectsFleet"].starts_with(
            "variables.podSpec.?nodeSelector[?'karpenter.sh/nodepool'].orValue('') in ['training']"
        ));
        assert_eq!(
            guarded.how,
            "tolerates its taints (workload=training:NoSchedule, gpu:NoExecute) or selects its nodes (karpenter.sh/nodepool=training)"
        );
        assert_eq!(guarded.policy_name, "gpufleet-fleet-training");
    }

    #[test]
    fn a_fleet_without_hard_taints_is_used_only_by_pods_selecting_it() {
        let model = fleet(vec![taint("soft", None, "PreferNoSchedule")]);
        let guarded = guarded(&model, Fence::default());
        let variables: BTreeMap<_, _> = guarded.variables.iter().cloned().collect();
        assert_eq!(variables["toleratesFleet"], "false");
        assert_eq!(
            guarded.how,
            "selects its nodes (karpenter.sh/nodepool=training)"
        );
    }
}
