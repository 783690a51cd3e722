//! A namespace fence: the API server itself refuses, outside the namespaces
//! a resource allows, every workload that would use it (a fleet's nodes, a
//! priority class). It is Kubernetes' own ValidatingAdmissionPolicy and its
//! binding (admissionregistration.k8s.io/v1, Kubernetes 1.30+), one pair per
//! fenced resource, named after it and written beside its main object by
//! server-side apply: no webhook to run.
//!
//! The policy checks Pods and the pod templates of the workload kinds people
//! apply (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob and
//! ReplicationController), so a `kubectl apply` in the wrong namespace fails
//! at once rather than as a ReplicaSet that never gets pods. Only creates
//! and updates that change `spec` are checked, so a workload admitted before
//! the fence can still be cleaned up (its finalizers removed). Namespaces
//! where system components run (kube-system, the GPU Operator's namespace,
//! and the resource's `exempt_namespaces`) are left out by the binding's
//! namespace selector: their DaemonSets tolerate every taint.
//!
//! What the policy says lives in CEL literals, readable with `kubectl get
//! validatingadmissionpolicy gpufleet-fleet-NAME -o yaml`; the settings it
//! came from are annotations on it, which an import reads back.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use super::Cluster;
use super::permissions::{APPLIED_OBJECT_VERBS, Permission};
use crate::cluster::FIELD_MANAGER;
use crate::cluster::api::{Change, Edit, Kind, Objects};
use crate::cluster::names::{dns1123_label, labels};
use crate::cluster::retry::{Deadline, GaveUp};
use crate::framework::schema::Attr;
use crate::framework::validators::{each, not_empty, one_of};
use crate::protocol::{AttributePath, Diagnostic, Diagnostics, Value};

/// The policies.
pub const POLICY: Kind = Kind::new(
    "admissionregistration.k8s.io/v1",
    "ValidatingAdmissionPolicy",
    "validatingadmissionpolicies",
);
/// Their bindings.
pub const BINDING: Kind = Kind::new(
    "admissionregistration.k8s.io/v1",
    "ValidatingAdmissionPolicyBinding",
    "validatingadmissionpolicybindings",
);

/// What a fenced resource needs of the API: its policy and binding, as any
/// applied object. The API server's extra authorization of these kinds
/// (`get` on a policy's `paramKind`, kubernetes
/// pkg/registry/admissionregistration/*/authz.go) does not apply: the
/// policies have no parameters.
pub const PERMISSIONS: &[Permission] = &[
    Permission::cluster(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        APPLIED_OBJECT_VERBS,
    ),
    Permission::cluster(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        APPLIED_OBJECT_VERBS,
    ),
];

/// The description of a fenced resource's `allowed_namespaces`: `$what`
/// names the resource, `$uses` says what using it means (a macro, since
/// descriptions are `&'static str`; its version is [`SINCE`]'s).
#[macro_export]
macro_rules! fence_description {
    ($what:literal, $uses:literal) => {
        concat!(
            "Namespaces allowed to use this ", $what, ". When this or `allowed_namespace_selector` is set, the API server refuses, in every other namespace, a Pod that ", $uses,
            ", and a Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob or ReplicationController whose pod template does: a ValidatingAdmissionPolicy and its binding, named in `admission_policy`, which gpufleet writes and removes with this ", $what,
            ". Needs Kubernetes 1.30 or later (admissionregistration.k8s.io/v1): on an older API server the apply fails before writing anything. kube-system, the GPU Operator's namespace (the provider's `gpu_operator_namespace`) and `exempt_namespaces` are never checked. A new policy takes effect about a second after the apply; only creates, and updates that change a workload's spec, are checked."
        )
    };
}

/// The Kubernetes version that serves ValidatingAdmissionPolicy v1 (GA in
/// 1.30: k8s.io/api admissionregistration/v1/types.go, `+k8s:prerelease-lifecycle-gen:introduced=1.30`).
pub const SINCE: &str = "1.30";

/// Always exempt: Kubernetes' own components run there.
pub const KUBE_SYSTEM: &str = "kube-system";

/// Who wrote the policy and binding, and for which resource.
const OWNER_ANNOTATION: &str = "gpufleet/owner";
/// The settings the policy was written from, read back by an import.
const ALLOWED_ANNOTATION: &str = "gpufleet/allowed-namespaces";
const SELECTOR_ANNOTATION: &str = "gpufleet/allowed-namespace-selector";

/// The namespace label every namespace has (Kubernetes sets it from the name).
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// `namespace_enforcement` values and the binding's validation actions.
const ENFORCEMENTS: &[&str] = &["deny", "warn", "audit"];

/// What state marks a policy or binding with when it differs from what
/// gpufleet wrote, so the next plan puts it back.
const CHANGED: &str = " (changed outside Terraform)";

/// The fence's settings and what they wrote, as state holds them
/// (flattened into the resource's model).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fence {
    /// Namespaces that may use the resource, by name.
    pub allowed_namespaces: Option<Vec<String>>,
    /// Namespaces that may use the resource, by their labels (all of them).
    pub allowed_namespace_selector: Option<BTreeMap<String, String>>,
    /// `deny` (when unset), `warn` or `audit`.
    pub namespace_enforcement: Option<String>,
    /// Namespaces left unchecked besides kube-system and the GPU Operator's.
    pub exempt_namespaces: Option<Vec<String>>,
    /// The policy and binding's name; marked when changed outside Terraform.
    pub admission_policy: Option<String>,
}

/// A resource that may be fenced: who it is and what using it means.
pub struct Guarded {
    /// The Terraform type, e.g. `gpufleet_fleet`.
    pub resource_type: &'static str,
    /// Its name, e.g. `training`.
    pub name: String,
    /// What it is called in messages, e.g. `fleet "training"`.
    pub what: String,
    /// The policy's name ([`policy_name`]).
    pub policy_name: String,
    /// Named CEL expressions over `variables.podSpec` (the pod's spec,
    /// whatever the kind) and earlier ones, in order.
    pub variables: Vec<(&'static str, String)>,
    /// A CEL expression over `variables`: whether the pod uses the resource.
    pub uses: String,
    /// What using it means, for the message: e.g. `tolerates its taints`.
    pub how: String,
    /// The fence's settings.
    pub fence: Fence,
}

/// The policy's (and binding's) name for resource `name` of kind `short`
/// (`fleet`, `class`).
pub fn policy_name(short: &str, name: &str) -> String {
    format!("gpufleet-{short}-{name}")
}

/// The fence's attributes; `allowed` describes `allowed_namespaces` for
/// the resource (written with [`fence_description`](crate::fence_description)).
pub fn attributes(allowed: &'static str) -> Vec<Attr> {
    vec![
        Attr::string_set("allowed_namespaces")
            .optional()
            .validate(not_empty())
            .validate(each(dns1123_label()))
            .describe(allowed),
        Attr::string_map("allowed_namespace_selector")
            .optional()
            .validate(not_empty())
            .validate(labels())
            .describe("Namespaces allowed by their labels: a namespace carrying all of them is allowed, as is one named in `allowed_namespaces`."),
        Attr::string("namespace_enforcement")
            .optional()
            .validate(one_of(ENFORCEMENTS))
            .describe("What the API server does with a workload from a namespace not allowed: `deny` refuses it (when unset); `warn` admits it and returns a warning (`kubectl` prints it), to roll a fence out on a running cluster; `audit` admits it and adds the check's result to the request's audit event, for clusters whose audit policy logs such requests. These are the binding's `validationActions`."),
        Attr::string_set("exempt_namespaces")
            .optional()
            .validate(not_empty())
            .validate(each(dns1123_label()))
            .describe("Namespaces never checked, besides kube-system and the GPU Operator's: where node agents run whose DaemonSets tolerate every taint (monitoring, logging)."),
        Attr::string("admission_policy")
            .derived_from(&["name", "allowed_namespaces", "allowed_namespace_selector"])
            .observed()
            .describe("The name of the ValidatingAdmissionPolicy and of its binding; null without `allowed_namespaces` or `allowed_namespace_selector`. A policy or binding changed or removed outside Terraform shows here and the next apply puts it back."),
    ]
}

/// The cross-attribute rules: settings that need a fence, and namespaces
/// that are exempt anyway. `policy` is the policy name when known, whose
/// length the API bounds.
pub fn validate(config: &Value, policy: Option<String>, diagnostics: &mut Diagnostics) {
    let fenced = ["allowed_namespaces", "allowed_namespace_selector"]
        .iter()
        .any(|name| !config.attr(name).is_null());
    if !fenced {
        for name in ["namespace_enforcement", "exempt_namespaces"] {
            if !config.attr(name).is_null() && !config.attr(name).is_unknown() {
                diagnostics.error_at(
                    AttributePath::attr(name),
                    "Nothing to enforce",
                    format!("`{name}` applies to the namespace fence, which `allowed_namespaces` or `allowed_namespace_selector` sets up; set one of them, or remove `{name}`."),
                );
            }
        }
        return;
    }
    for name in ["allowed_namespaces", "exempt_namespaces"] {
        let listed = config.attr(name).elements().into_iter().flatten();
        if listed.filter_map(Value::as_str).any(|n| n == KUBE_SYSTEM) {
            diagnostics.error_at(
                AttributePath::attr(name),
                "Reserved namespace",
                format!("{KUBE_SYSTEM:?} is always exempt from the namespace fence (Kubernetes' own components run there, and their DaemonSets tolerate every taint), so naming it changes nothing; remove it from `{name}`."),
            );
        }
    }
    let exempt: BTreeSet<&str> = config
        .attr("exempt_namespaces")
        .elements()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for allowed in config
        .attr("allowed_namespaces")
        .elements()
        .into_iter()
        .flatten()
    {
        if let Some(both) = allowed.as_str().filter(|n| exempt.contains(n)) {
            diagnostics.error_at(
                AttributePath::attr("allowed_namespaces"),
                "Namespace both allowed and exempt",
                format!("{both:?} is in `exempt_namespaces`, where nothing is checked; name it in one of the two."),
            );
        }
    }
    if let Some(policy) = policy.filter(|p| p.len() > 253) {
        diagnostics.error_at(
            AttributePath::attr("name"),
            "Name too long for a namespace fence",
            format!("The fence's ValidatingAdmissionPolicy would be named {policy:?}, longer than the 253 characters Kubernetes allows; use a shorter name."),
        );
    }
}

impl Fence {
    /// Whether the configuration asks for a fence.
    pub fn fenced(&self) -> bool {
        self.allowed_namespaces.is_some() || self.allowed_namespace_selector.is_some()
    }

    /// `admission_policy` as the configuration asks for it.
    pub fn derive(&mut self, policy_name: String) {
        self.admission_policy = self.fenced().then_some(policy_name);
    }

    /// The settings of `prior`, for a state read from the main object (the
    /// policy is read after it).
    pub fn settings_of(prior: &Fence) -> Fence {
        Fence {
            admission_policy: None,
            ..prior.clone()
        }
    }

    fn enforcement(&self) -> &'static str {
        match self.namespace_enforcement.as_deref() {
            Some("warn") => "Warn",
            Some("audit") => "Audit",
            _ => "Deny",
        }
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A CEL string literal.
fn cel_string(text: &str) -> String {
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

/// The pod spec whatever the kind (Pod; CronJob's job template; the others'
/// template). `dyn`: the kinds disagree on the path, and the type check
/// (kube-controller-manager's, per kind) would otherwise find the other
/// kinds' paths missing.
const POD_SPEC: &str = "object.kind == 'Pod' ? dyn(object).spec : (object.kind == 'CronJob' ? dyn(object).spec.jobTemplate.spec.template.spec : dyn(object).spec.template.spec)";

/// The kinds checked: Pods and the workload kinds with a pod template
/// (k8s.io/api: core/v1, apps/v1, batch/v1).
fn resource_rules() -> Json {
    let operations = json!(["CREATE", "UPDATE"]);
    json!([
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "replicationcontrollers"], "operations": operations},
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["daemonsets", "deployments", "replicasets", "statefulsets"], "operations": operations},
        {"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["cronjobs", "jobs"], "operations": operations},
    ])
}

impl Guarded {
    fn allowed_names(&self) -> Vec<&str> {
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

    fn selector_text(&self) -> Option<String> {
        let selector = self.fence.allowed_namespace_selector.as_ref()?;
        let pairs: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Some(pairs.join(","))
    }

    /// Whether the request's namespace is allowed, in CEL.
    fn allowed_expression(&self) -> String {
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
    fn allowed_words(&self) -> String {
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
    fn message_parts(&self) -> (String, String) {
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

    /// The namespaces the binding leaves out: kube-system, the GPU
    /// Operator's and the configured ones.
    fn exempt(&self, cluster: &Cluster) -> Vec<String> {
        let mut exempt: BTreeSet<String> = [
            KUBE_SYSTEM.to_string(),
            cluster.device_plugin_config.namespace.clone(),
        ]
        .into();
        exempt.extend(self.fence.exempt_namespaces.iter().flatten().cloned());
        exempt.into_iter().collect()
    }

    fn annotations(&self) -> BTreeMap<String, String> {
        let mut annotations = BTreeMap::from([(
            OWNER_ANNOTATION.to_string(),
            format!("{}/{}", self.resource_type, self.name),
        )]);
        if self.fence.allowed_namespaces.is_some() {
            annotations.insert(
                ALLOWED_ANNOTATION.to_string(),
                self.allowed_names().join(","),
            );
        }
        if let Some(selector) = self.selector_text() {
            annotations.insert(SELECTOR_ANNOTATION.to_string(), selector);
        }
        annotations
    }

    /// The policy, exactly the fields gpufleet owns.
    pub fn policy(&self) -> DynamicObject {
        let (before, after) = self.message_parts();
        let mut variables = vec![
            json!({"name": "podSpec", "expression": POD_SPEC}),
            json!({"name": "tolerations", "expression": "variables.podSpec.?tolerations.orValue([])"}),
        ];
        variables.extend(
            self.variables
                .iter()
                .map(|(name, expression)| json!({"name": name, "expression": expression})),
        );
        variables
            .push(json!({"name": "namespaceAllowed", "expression": self.allowed_expression()}));
        let mut object = DynamicObject::new(&self.policy_name, &POLICY.api_resource());
        object.metadata.annotations = Some(self.annotations());
        object.data = json!({"spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": resource_rules()},
            "matchConditions": [{
                "name": "creates-and-spec-changes",
                "expression": "request.operation == 'CREATE' || object.spec != oldObject.spec",
            }],
            "variables": variables,
            "validations": [{
                "expression": format!("variables.namespaceAllowed || !({})", self.uses),
                "message": format!("{before}{}{after}", "(its namespace)"),
                "messageExpression": format!("{} + request.namespace + {}", cel_string(&before), cel_string(&after)),
                "reason": "Forbidden",
            }],
        }});
        object
    }

    /// The binding: the enforcement, and the namespaces left out.
    pub fn binding(&self, cluster: &Cluster) -> DynamicObject {
        let mut object = DynamicObject::new(&self.policy_name, &BINDING.api_resource());
        object.metadata.annotations = Some(BTreeMap::from([(
            OWNER_ANNOTATION.to_string(),
            format!("{}/{}", self.resource_type, self.name),
        )]));
        object.data = json!({"spec": {
            "policyName": self.policy_name,
            "validationActions": [self.fence.enforcement()],
            "matchResources": {"namespaceSelector": {"matchExpressions": [
                {"key": NAME_LABEL, "operator": "NotIn", "values": self.exempt(cluster)},
            ]}},
        }});
        object
    }
}

/// The error for an API server without ValidatingAdmissionPolicy v1.
fn not_served(what: &str) -> Diagnostic {
    Diagnostic::error(
        "Namespace fence needs Kubernetes 1.30",
        format!(
            "The API server does not serve {} ({}), which `allowed_namespaces` and `allowed_namespace_selector` of {what} are enforced with: it is GA since Kubernetes {SINCE}. Nothing was written. Upgrade the cluster to {SINCE} or later, or remove both attributes.",
            POLICY.kind, POLICY.api_version
        ),
    )
    .at(AttributePath::attr("allowed_namespaces"))
}

/// Whether the API server serves the policies; `Err` when it cannot say.
async fn served(cluster: &Cluster, name: &str, deadline: Deadline) -> Result<bool, GaveUp> {
    let policies = cluster.kubernetes.custom(POLICY).await?;
    Ok(policies
        .named(name)
        .get_if_installed(deadline)
        .await?
        .is_some())
}

/// Plan-time check of a configuration with a fence: a warning when the API
/// server does not serve the policies (apply fails before writing), or
/// cannot be reached (apply checks).
pub async fn plan(cluster: &Cluster, what: &str, policy_name: &str) -> Diagnostics {
    let path = AttributePath::attr("allowed_namespaces");
    match served(cluster, policy_name, Deadline::at_plan()).await {
        Ok(true) => Diagnostics::default(),
        Ok(false) => Diagnostic::warning(
            "Namespace fence needs Kubernetes 1.30",
            format!(
                "The API server does not serve {} ({}), GA since Kubernetes {SINCE}: the apply of {what} will fail before writing anything.",
                POLICY.kind, POLICY.api_version
            ),
        )
        .at(path)
        .into(),
        Err(gave_up) => {
            let why = gave_up
                .diagnostics
                .0
                .first()
                .map(|d| d.detail.clone())
                .unwrap_or_default();
            Diagnostic::warning(
                "Namespace fence checked at apply",
                format!(
                    "The cluster could not be reached at plan ({why}). Before writing anything, the apply of {what} checks that the API server serves {} ({}, Kubernetes {SINCE} or later), and fails if it does not.",
                    POLICY.kind, POLICY.api_version
                ),
            )
            .at(path)
            .into()
        }
    }
}

/// Before anything of a fenced resource is written: the API server must
/// serve the policies.
pub async fn prepare(
    cluster: &Cluster,
    guarded: &Guarded,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !guarded.fence.fenced() {
        return Ok(());
    }
    if served(cluster, &guarded.policy_name, deadline).await? {
        Ok(())
    } else {
        Err(not_served(&guarded.what).into())
    }
}

/// Writes the policy and binding `guarded` asks for, or removes those a
/// `prior` fence wrote; `admission_policy` in `state` then names them.
pub async fn write(
    cluster: &Cluster,
    guarded: &Guarded,
    prior_fenced: bool,
    state: &mut Fence,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !guarded.fence.fenced() {
        if prior_fenced {
            delete(cluster, &guarded.policy_name, deadline).await?;
        }
        state.admission_policy = None;
        return Ok(());
    }
    let policies = cluster.kubernetes.custom(POLICY).await?;
    let bindings = cluster.kubernetes.custom(BINDING).await?;
    let name = guarded.policy_name.as_str();
    let written = put(&policies, name, &guarded.policy(), deadline).await;
    if let Err(gave_up) = written {
        return Err(match gave_up.not_installed {
            true => not_served(&guarded.what).into(),
            false => gave_up.into(),
        });
    }
    put(&bindings, name, &guarded.binding(cluster), deadline).await?;
    state.admission_policy = Some(name.to_string());
    Ok(())
}

/// Applies `wanted`, then puts back what another writer's share kept from
/// it: server-side apply merges a set such as the binding's
/// `validationActions` item by item, so an action someone else added
/// stays beside gpufleet's; a JSON merge patch replaces each list whole.
async fn put(
    objects: &Objects<'_, DynamicObject>,
    name: &str,
    wanted: &DynamicObject,
    deadline: Deadline,
) -> Result<(), GaveUp> {
    let named = objects.named(name);
    let live = named.apply(wanted, FIELD_MANAGER, deadline).await?;
    if !holds(&live.data, &wanted.data) {
        named.update(&Restore(wanted), deadline).await?;
    }
    Ok(())
}

/// The fields gpufleet wrote, lists whole (see [`put`]).
struct Restore<'a>(&'a DynamicObject);

impl Change<DynamicObject> for Restore<'_> {
    fn describe(&self) -> String {
        "spec, as gpufleet wrote it".to_string()
    }

    fn patch(&self, live: &DynamicObject) -> Option<Edit> {
        (!holds(&live.data, &self.0.data)).then(|| Edit::Merge {
            manager: FIELD_MANAGER.to_string(),
            patch: self.0.data.clone(),
        })
    }
}

/// Whether every field of `wanted` is in `live` with the same value (lists
/// item by item): the fields gpufleet sent, beside what the API server
/// defaults and others add.
fn holds(live: &Json, wanted: &Json) -> bool {
    match (live, wanted) {
        (Json::Object(live), Json::Object(wanted)) => wanted
            .iter()
            .all(|(k, w)| live.get(k).is_some_and(|l| holds(l, w))),
        (Json::Array(live), Json::Array(wanted)) => {
            live.len() == wanted.len() && live.iter().zip(wanted).all(|(l, w)| holds(l, w))
        }
        (live, wanted) => live == wanted,
    }
}

fn in_place(live: &DynamicObject, wanted: &DynamicObject) -> bool {
    let annotations = live.metadata.annotations.clone().unwrap_or_default();
    let kept = wanted
        .metadata
        .annotations
        .iter()
        .flatten()
        .all(|(k, v)| annotations.get(k) == Some(v));
    kept && holds(&live.data, &wanted.data)
}

/// Reads the policy and binding into `state` (`admission_policy`: their
/// name, marked when changed, null when gone); after an import, the
/// settings they were written from too. `guarded` is built from `state`
/// once an import has filled it.
pub async fn read(
    cluster: &Cluster,
    guarded: impl Fn(Fence) -> Guarded,
    state: &mut Fence,
    importing: bool,
    deadline: Deadline,
) -> Result<(), Diagnostics> {
    if !state.fenced() && !importing {
        state.admission_policy = None;
        return Ok(());
    }
    let name = guarded(state.clone()).policy_name;
    let policies = cluster.kubernetes.custom(POLICY).await?;
    let Some(policy) = policies.named(&name).get_if_installed(deadline).await? else {
        state.admission_policy = None;
        return Ok(());
    };
    let binding = cluster
        .kubernetes
        .custom(BINDING)
        .await?
        .named(&name)
        .get(deadline)
        .await?;
    let (Some(policy), Some(binding)) = (policy, binding) else {
        state.admission_policy = None;
        return Ok(());
    };
    if importing {
        *state = imported_settings(cluster, &policy, &binding);
    }
    let wanted = guarded(state.clone());
    let same = in_place(&policy, &wanted.policy()) && in_place(&binding, &wanted.binding(cluster));
    state.admission_policy = Some(if same {
        name
    } else {
        format!("{name}{CHANGED}")
    });
    Ok(())
}

/// The settings a policy and binding gpufleet wrote were written from.
fn imported_settings(cluster: &Cluster, policy: &DynamicObject, binding: &DynamicObject) -> Fence {
    let annotations = policy.metadata.annotations.clone().unwrap_or_default();
    let allowed_namespaces = annotations.get(ALLOWED_ANNOTATION).map(|names| {
        names
            .split(',')
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()
    });
    let allowed_namespace_selector = annotations.get(SELECTOR_ANNOTATION).map(|pairs| {
        pairs
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    });
    let spec = &binding.data["spec"];
    let namespace_enforcement = match spec["validationActions"][0].as_str() {
        Some("Warn") => Some("warn".to_string()),
        Some("Audit") => Some("audit".to_string()),
        _ => None,
    };
    let always = [KUBE_SYSTEM, cluster.device_plugin_config.namespace.as_str()];
    let exempt: Vec<String> =
        spec["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .filter(|n| !always.contains(n))
            .map(str::to_string)
            .collect();
    Fence {
        allowed_namespaces,
        allowed_namespace_selector,
        namespace_enforcement,
        exempt_namespaces: (!exempt.is_empty()).then_some(exempt),
        admission_policy: None,
    }
}

/// Removes the binding, then the policy (either may be gone already).
pub async fn delete(cluster: &Cluster, name: &str, deadline: Deadline) -> Result<(), Diagnostics> {
    for kind in [BINDING, POLICY] {
        let objects = cluster.kubernetes.custom(kind).await?;
        match objects.named(name).delete(deadline).await {
            Err(gave_up) if gave_up.not_installed => return Ok(()),
            other => other?,
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::LabelScheme;

    fn fence() -> Fence {
        Fence {
            allowed_namespaces: Some(vec!["training".into()]),
            allowed_namespace_selector: Some([("team".to_string(), "ml".to_string())].into()),
            namespace_enforcement: Some("warn".into()),
            exempt_namespaces: Some(vec!["monitoring".into()]),
            admission_policy: None,
        }
    }

    fn guarded(fence: Fence) -> Guarded {
        Guarded {
            resource_type: "gpufleet_fleet",
            name: "training".into(),
            what: "fleet \"training\"".into(),
            policy_name: policy_name("fleet", "training"),
            variables: vec![],
            uses: "variables.podSpec.?priorityClassName.orValue('') == 'x'".into(),
            how: "uses it".into(),
            fence,
        }
    }

    #[test]
    fn the_toleration_rule_reads_as_kubernetes_states_it() {
        assert_eq!(
            tolerated("workload", "training", "NoSchedule"),
            "variables.tolerations.exists(t, t.?effect.orValue('') in ['', 'NoSchedule'] && t.?key.orValue('') in ['', 'workload'] && (t.?operator.orValue('') == 'Exists' || (t.?operator.orValue('') in ['', 'Equal'] && t.?value.orValue('') == 'training')))"
        );
        assert_eq!(cel_string("it's \\"), "'it\\'s \\\\'");
    }

    #[test]
    fn the_policy_allows_by_name_or_labels_and_the_binding_leaves_system_namespaces_out() {
        let cluster = Cluster::offline(LabelScheme::Cfke);
        let fence = fence();
        let g = guarded(fence.clone());
        let policy = g.policy();
        let variables = policy.data["spec"]["variables"].as_array().unwrap();
        assert_eq!(
            variables.last().unwrap()["expression"],
            "request.namespace in ['training'] || (has(namespaceObject.metadata.labels) && 'team' in namespaceObject.metadata.labels && namespaceObject.metadata.labels['team'] == 'ml')"
        );
        let message = policy.data["spec"]["validations"][0]["message"]
            .as_str()
            .unwrap();
        assert!(
            message.starts_with("Fleet \"training\" may be used only from namespace \"training\" and namespaces labelled team=ml; this workload in namespace (its namespace) uses it.")
                && message.contains("`allowed_namespaces`"),
            "{message}"
        );
        let binding = g.binding(&cluster);
        assert_eq!(binding.data["spec"]["validationActions"], json!(["Warn"]));
        assert_eq!(
            binding.data["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"],
            json!(["gpu-operator", "kube-system", "monitoring"])
        );
        // What an import reads back is what was written.
        let back = imported_settings(&cluster, &policy, &binding);
        assert_eq!(back, fence);
        // The API server's defaults are no drift; a changed rule is.
        let mut live = policy.clone();
        live.data["spec"]["matchPolicy"] = json!("Equivalent");
        live.data["spec"]["matchConstraints"]["resourceRules"][0]["scope"] = json!("*");
        assert!(in_place(&live, &policy));
        live.data["spec"]["validations"][0]["expression"] = json!("true");
        assert!(!in_place(&live, &policy));
    }
}
