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
//! and updates that change the pod spec are checked, so a workload admitted
//! before the fence can still be scaled, suspended (Kueue's eviction
//! included) or cleaned up (its finalizers removed). Namespaces
//! where system components run (kube-system, the GPU Operator's namespace,
//! and the resource's `exempt_namespaces`) are left out by the binding's
//! namespace selector: their DaemonSets tolerate every taint.
//!
//! What the policy says lives in CEL literals, readable with `kubectl get
//! validatingadmissionpolicy gpufleet-fleet-NAME -o yaml`; the settings it
//! came from are annotations on it, which an import reads back.
//!
//! The tree: [`rule`] is what the policy says (CEL and the refusal's
//! words), [`objects`] the policy and binding written from it, and
//! [`lifecycle`] their checks, writes, reads and removal beside the
//! resource.

mod lifecycle;
mod objects;
mod rule;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use self::lifecycle::{delete, plan, prepare, read, write};
pub use self::rule::{cel_strings, tolerated};
use super::permissions::{APPLIED_OBJECT_VERBS, Permission};
use crate::cluster::api::Kind;
use crate::cluster::names::{dns1123_label, labels};
use crate::framework::schema::Attr;
use crate::framework::validators::{each, not_empty, one_of};
use crate::protocol::{AttributePath, Diagnostics, Value};

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
            ". Needs Kubernetes 1.30 or later (admissionregistration.k8s.io/v1): on an older API server the apply fails before writing anything. kube-system, the GPU Operator's namespace (the provider's `gpu_operator_namespace`) and `exempt_namespaces` are never checked. A new policy takes effect about a second after the apply; only creates, and updates that change a pod's spec or a workload's pod template, are checked, so a workload admitted before can still be scaled, suspended or deleted."
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
