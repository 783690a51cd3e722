//! What a fence's policy says, as CEL and words: Kubernetes' toleration
//! rule, the pod spec of each kind checked, whether a namespace is allowed,
//! and the refusal's message.

use serde_json::{Value as Json, json};

use super::Guarded;

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A CEL string literal.
pub(super) fn cel_string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A CEL list of string literals.
pub fn cel_strings<'s>(items: impl IntoIterator<Item = &'s str>) -> String {
    let items: Vec<String> = items.into_iter().map(cel_string).collect();
    format!("[{}]", items.join(", "))
}

/// Kubernetes' rule for a pod toleration tolerating taint `key=value:effect`
/// (k8s.io/api core/v1/toleration.go, ToleratesTaint), as CEL over
/// `variables.tolerations`: an empty effect matches every effect, an empty
/// key (with `Exists`) every key; operator `Exists` matches any value, and
/// `Equal` (also when empty) an equal one, the empty value included.
pub fn tolerated(key: &str, value: &str, effect: &str) -> String {
    format!(
        "variables.tolerations.exists(t, t.?effect.orValue('') in ['', {effect}] && t.?key.orValue('') in ['', {key}] && (t.?operator.orValue('') == 'Exists' || (t.?operator.orValue('') in ['', 'Equal'] && t.?value.orValue('') == {value})))",
        effect = cel_string(effect),
        key = cel_string(key),
        value = cel_string(value),
    )
}

/// The pod spec of `object` (`object` or `oldObject`) whatever the kind
/// (Pod; CronJob's job template; the others' template). `dyn`: the kinds
/// disagree on the path, and the type check (kube-controller-manager's,
/// per kind) would otherwise find the other kinds' paths missing.
pub(super) fn pod_spec(object: &str) -> String {
    format!(
        "({object}.kind == 'Pod' ? dyn({object}).spec : ({object}.kind == 'CronJob' ? dyn({object}).spec.jobTemplate.spec.template.spec : dyn({object}).spec.template.spec))"
    )
}

/// The requests checked: creates, and updates that change the pod spec.
/// An update that leaves it alone lets no new pod onto anything, and must
/// pass where the namespace is no longer allowed: a workload admitted
/// before can still be relabelled, scaled or cleaned up, and Kueue can
/// still evict it, whose first update suspends a Job with its template
/// untouched (sigs.k8s.io/kueue, pkg/controller/jobs/job/job_controller.go,
/// `Job.Stop`) before a second one takes back what it injected.
pub(super) fn checked_requests() -> String {
    format!(
        "request.operation == 'CREATE' || {} != {}",
        pod_spec("object"),
        pod_spec("oldObject")
    )
}

/// The kinds checked: Pods and the workload kinds with a pod template
/// (k8s.io/api: core/v1, apps/v1, batch/v1).
pub(super) fn resource_rules() -> Json {
    let operations = json!(["CREATE", "UPDATE"]);
    json!([
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "replicationcontrollers"], "operations": operations},
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["daemonsets", "deployments", "replicasets", "statefulsets"], "operations": operations},
        {"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["cronjobs", "jobs"], "operations": operations},
    ])
}

impl Guarded {
    pub(super) fn allowed_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .fence
            .allowed_namespaces
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names
    }

    pub(super) fn selector_text(&self) -> Option<String> {
        let selector = self.fence.allowed_namespace_selector.as_ref()?;
        let pairs: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Some(pairs.join(","))
    }

    /// Whether the request's namespace is allowed, in CEL.
    pub(super) fn allowed_expression(&self) -> String {
        let mut either = Vec::new();
        if self.fence.allowed_namespaces.is_some() {
            either.push(format!(
                "request.namespace in {}",
                cel_strings(self.allowed_names())
            ));
        }
        if let Some(selector) = &self.fence.allowed_namespace_selector {
            let labels = "namespaceObject.metadata.labels";
            let all: Vec<String> = selector
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{k} in {labels} && {labels}[{k}] == {v}",
                        k = cel_string(k),
                        v = cel_string(v)
                    )
                })
                .collect();
            either.push(format!(
                "(has(namespaceObject.metadata.labels) && {})",
                all.join(" && ")
            ));
        }
        either.join(" || ")
    }

    /// Who may: `namespace "training"`, and namespaces labelled so.
    pub(super) fn allowed_words(&self) -> String {
        let mut words = Vec::new();
        let names = self.allowed_names();
        if !names.is_empty() {
            let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
            let noun = if names.len() == 1 {
                "namespace"
            } else {
                "namespaces"
            };
            words.push(format!("{noun} {}", quoted.join(", ")));
        }
        if let Some(selector) = self.selector_text() {
            words.push(format!("namespaces labelled {selector}"));
        }
        words.join(" and ")
    }

    /// The refusal, before and after the request's namespace.
    pub(super) fn message_parts(&self) -> (String, String) {
        (
            format!(
                "{what} may be used only from {allowed}; this workload in namespace ",
                what = capitalized(&self.what),
                allowed = self.allowed_words()
            ),
            format!(
                " {how}. Run it in an allowed namespace, or allow its namespace: add it to `allowed_namespaces` (or label it to match `allowed_namespace_selector`) of {ty} {name:?}, or to its `exempt_namespaces`.",
                how = self.how,
                ty = self.resource_type,
                name = self.name
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_toleration_rule_reads_as_kubernetes_states_it() {
        assert_eq!(
            tolerated("workload", "training", "NoSchedule"),
            "variables.tolerations.exists(t, t.?effect.orValue('') in ['', 'NoSchedule'] && t.?key.orValue('') in ['', 'workload'] && (t.?operator.orValue('') == 'Exists' || (t.?operator.orValue('') in ['', 'Equal'] && t.?value.orValue('') == 'training')))"
        );
        assert_eq!(cel_string("it's \\"), "'it\\'s \\\\'");
    }
}
