//! Namespace fences (`allowed_namespaces`) of fleets and priority classes
//! through the real terraform and tofu CLIs, each checked through the real
//! API server's admission: workloads are submitted as a user would, with
//! kubectl as the cluster's admin (a server-side dry run where nothing
//! needs storing: it runs admission, ValidatingAdmissionPolicy included).
//! Fleets taint with their own name as the value, so a fence never refuses
//! another test's pods.

use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use common::fixtures::{class, fleet};
use common::terraform::{ImportBy, Workspace, each_cli};
use common::{block_on, kube_client, kubeconfig, repo_root, unique_name};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

/// The API server picks up a new or changed policy within a second
/// (k8s.io/apiserver, policy_source.go, a 1 s refresh); a bound for polls.
const POLICY_REFRESH: Duration = Duration::from_secs(15);

/// A fleet's fence refuses a blanket toleration (`operator: Exists`) in
/// every namespace it does not allow, whatever fleet the pod was meant for:
/// the tests with a fleet fence take turns, so none refuses the blanket
/// pods another submits in its exempt namespace.
pub(super) fn fleet_fence_turn() -> MutexGuard<'static, ()> {
    static FLEET_FENCES: Mutex<()> = Mutex::new(());
    FLEET_FENCES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Namespaces of the test's own, deleted when it ends.
pub(super) struct Namespaces(pub(super) Vec<String>);

impl Namespaces {
    pub(super) fn new(prefixes: &[&str]) -> Self {
        Self::labelled(prefixes, json!({}))
    }

    /// Namespaces carrying `labels`.
    fn labelled(prefixes: &[&str], labels: Value) -> Self {
        let names: Vec<String> = prefixes.iter().map(|p| unique_name(p)).collect();
        block_on(async {
            let api = Api::<Namespace>::all(kube_client().await);
            for name in &names {
                let ns = json!({"metadata": {"name": name, "labels": labels}});
                let ns = serde_json::from_value(ns).unwrap();
                api.create(&Default::default(), &ns).await.unwrap();
            }
        });
        Self(names)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        block_on(async {
            let api = Api::<Namespace>::all(kube_client().await);
            for name in &self.0 {
                let _ = api.delete(name, &DeleteParams::default()).await;
            }
        });
    }
}

fn kubectl(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(repo_root().join("target/tools/bin/kubectl"))
        .args(["--kubeconfig", &kubeconfig()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl (built by testbed/build.sh)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// What the API server answered a create of `object` in `namespace`:
/// admitted with its warnings, or refused with its message. `store`: a
/// real create, else a server-side dry run.
pub(super) fn submit(namespace: &str, object: &Value, store: bool) -> Result<String, String> {
    let mut args = vec!["create", "-f", "-", "-n", namespace, "-o", "name"];
    if !store {
        args.push("--dry-run=server");
    }
    let out = kubectl(&args, &object.to_string());
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if out.status.success() {
        Ok(stderr)
    } else {
        Err(stderr)
    }
}

fn refused(namespace: &str, object: &Value) -> String {
    submit(namespace, object, false).expect_err(&format!(
        "{} {} in {namespace} was admitted",
        object["kind"], object["metadata"]["name"]
    ))
}

fn admitted(namespace: &str, object: &Value) -> String {
    submit(namespace, object, false).unwrap_or_else(|e| {
        panic!(
            "{} {} in {namespace} was refused: {e}",
            object["kind"], object["metadata"]["name"]
        )
    })
}

/// Polls until `holds`, within [`POLICY_REFRESH`].
pub(super) fn eventually(what: &str, holds: impl Fn() -> bool) {
    let start = Instant::now();
    while !holds() {
        assert!(
            start.elapsed() < POLICY_REFRESH,
            "not within {POLICY_REFRESH:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn pod(spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "main", "image": "registry.k8s.io/pause:3.10"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": unique_name("pod")}, "spec": spec})
}

/// A workload of `kind` whose pod template has `spec`.
fn workload(kind: &str, spec: Value) -> Value {
    let template = pod(spec);
    let labels = json!({"app": "fenced"});
    let template = json!({"metadata": {"labels": labels}, "spec": template["spec"]});
    let mut job = json!({"template": template.clone()});
    job["template"]["spec"]["restartPolicy"] = json!("Never");
    let (api_version, spec) = match kind {
        "Deployment" | "DaemonSet" => (
            "apps/v1",
            json!({"selector": {"matchLabels": labels}, "template": template}),
        ),
        "Job" => ("batch/v1", job),
        "CronJob" => (
            "batch/v1",
            json!({"schedule": "@daily", "jobTemplate": {"spec": job}}),
        ),
        other => panic!("no workload kind {other}"),
    };
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": unique_name("workload")}, "spec": spec})
}

fn admission_api(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
        plural,
    )
}

fn live(kind: &str, plural: &str, name: &str) -> Option<DynamicObject> {
    block_on(async {
        Api::<DynamicObject>::all_with(kube_client().await, &admission_api(kind, plural))
            .get_opt(name)
            .await
            .unwrap()
    })
}

fn live_policy(name: &str) -> Option<DynamicObject> {
    live(
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        name,
    )
}

fn live_binding(name: &str) -> Option<DynamicObject> {
    live(
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        name,
    )
}

/// The type-check status of policy `name` once kube-controller-manager's
/// validatingadmissionpolicy-status-controller has checked its current
/// generation.
fn type_checked(name: &str) -> Value {
    eventually(&format!("the type check of policy {name}"), || {
        let policy = live_policy(name).expect("the policy exists");
        policy.data["status"]["observedGeneration"].as_i64() == policy.metadata.generation
    });
    live_policy(name).unwrap().data["status"].clone()
}

fn assert_no_type_warnings(name: &str, status: &Value) {
    assert!(
        status["typeChecking"]["expressionWarnings"]
            .as_array()
            .is_none_or(|w| w.is_empty()),
        "policy {name} has type-check warnings: {status:#}"
    );
}

/// Every expression of the written policy passes the API server's type
/// check against each kind the policy matches. The check (kube-controller-
/// manager's) reports only `validations`; a variable that does not compile
/// would go unreported, so a copy of the policy, unbound (it enforces
/// nothing), has each variable's expression as a validation too.
fn assert_type_checked(name: &str) {
    assert_no_type_warnings(name, &type_checked(name));
    let mut probe = live_policy(name).unwrap();
    let probe_name = format!("{name}-type-probe");
    let spec = &mut probe.data["spec"];
    let variables: Vec<String> = spec["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["expression"].as_str().unwrap().to_string())
        .collect();
    let validations = spec["validations"].as_array_mut().unwrap();
    for expression in &variables {
        validations.push(json!({"expression": format!("({expression}) == ({expression})")}));
    }
    let object = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": probe_name},
        "spec": probe.data["spec"],
    });
    let api = || async {
        Api::<DynamicObject>::all_with(
            kube_client().await,
            &admission_api("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
        )
    };
    block_on(async {
        let probe: DynamicObject = serde_json::from_value(object).unwrap();
        api()
            .await
            .create(&Default::default(), &probe)
            .await
            .unwrap()
    });
    let status = type_checked(&probe_name);
    block_on(async {
        api()
            .await
            .delete(&probe_name, &DeleteParams::default())
            .await
            .unwrap()
    });
    assert_no_type_warnings(&probe_name, &status);
}

/// Another writer changes the binding's enforcement behind Terraform's back.
fn edit_binding(name: &str, actions: Value) {
    block_on(async {
        Api::<DynamicObject>::all_with(
            kube_client().await,
            &admission_api(
                "ValidatingAdmissionPolicyBinding",
                "validatingadmissionpolicybindings",
            ),
        )
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"validationActions": actions}})),
        )
        .await
        .unwrap()
    });
}

fn warned_by(policy: &str, answer: &str) -> bool {
    answer.contains(&format!(
        "Validation failed for ValidatingAdmissionPolicy '{policy}'"
    ))
}

/// A fleet allowing one namespace: pods and workloads that would be let
/// onto it (its toleration, a blanket one, its node selector) are refused
/// elsewhere with a message saying what to change, admitted in its
/// namespace and in exempt ones; the written policy type-checks; drift of
/// the binding shows; import (by ID, and by identity where the CLI has
/// identities) gives an empty plan; warn mode admits with a
/// warning; after destroy the same pod is admitted again.
#[test]
fn a_fleet_fence_refuses_other_namespaces_at_admission() {
    let _turn = fleet_fence_turn();
    each_cli(|cli| {
        let name = unique_name("fenced");
        let namespaces = Namespaces::new(&["fence-training", "fence-research", "fence-agents"]);
        let [training, research, agents] = [0, 1, 2].map(|i| namespaces.0[i].as_str());
        let body = |extra: &str| {
            fleet(
                "f",
                &name,
                &format!(
                    "  taints = [{{ key = \"workload\", value = \"{name}\", effect = \"NoSchedule\" }}]\n  allowed_namespaces = [\"{training}\"]\n  exempt_namespaces = [\"{agents}\"]\n{extra}"
                ),
            )
        };
        let toleration =
            json!({"key": "workload", "operator": "Equal", "value": name, "effect": "NoSchedule"});
        let tolerating = json!({"tolerations": [toleration]});
        // A pod admitted before the fence.
        let early = pod(tolerating.clone());
        submit(research, &early, true).expect("no fence yet");
        let mut ws = Workspace::new(cli);
        ws.config(&body(""));
        ws.apply();
        let policy = format!("gpufleet-fleet-{name}");
        assert_eq!(
            ws.resource_values("gpufleet_fleet.f")["admission_policy"],
            policy.as_str()
        );

        let blanket = json!({"tolerations": [{"operator": "Exists"}]});
        let selecting = json!({"nodeSelector": {"karpenter.sh/nodepool": name}});
        eventually("the fence refuses a tolerating pod in research", || {
            submit(research, &pod(tolerating.clone()), false).is_err()
        });
        let message = refused(research, &pod(tolerating.clone()));
        for part in [
            format!("Fleet \"{name}\" may be used only from namespace \"{training}\""),
            format!("in namespace {research} tolerates its taints (workload={name}:NoSchedule)"),
            "`allowed_namespaces`".to_string(),
            format!("gpufleet_fleet \"{name}\""),
        ] {
            assert!(message.contains(&part), "{part:?} not in: {message}");
        }
        submit(training, &pod(tolerating.clone()), true)
            .expect("the tolerating pod is admitted in its namespace");
        refused(research, &pod(blanket.clone()));
        refused(research, &pod(selecting.clone()));
        let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["other", name]}]},
        ]}}}});
        refused(research, &pod(affinity));
        for kind in ["Deployment", "Job", "CronJob"] {
            let message = refused(research, &workload(kind, tolerating.clone()));
            assert!(message.contains(&policy), "{kind}: {message}");
        }
        // What does not use the fleet, or only part of its taints'
        // tolerations, passes; so does everything in exempt namespaces.
        admitted(research, &pod(json!({})));
        let other_value = json!({"tolerations": [{"key": "workload", "operator": "Equal", "value": "other", "effect": "NoSchedule"}]});
        admitted(research, &pod(other_value));
        admitted(agents, &workload("DaemonSet", blanket.clone()));
        admitted("kube-system", &workload("DaemonSet", blanket.clone()));
        // Only creates and updates of the spec are checked: the pod admitted
        // before can still be relabelled (or have its finalizers removed).
        let early_name = early["metadata"]["name"].as_str().unwrap();
        let relabelled = kubectl(
            &["label", "pod", early_name, "-n", research, "checked=no"],
            "",
        );
        assert!(
            relabelled.status.success(),
            "{}",
            String::from_utf8_lossy(&relabelled.stderr)
        );
        assert_type_checked(&policy);
        ws.assert_plan_empty();

        // The binding changed behind Terraform's back shows, and goes back.
        edit_binding(&policy, json!(["Audit"]));
        ws.assert_plan_changes()
            .assert_updates("gpufleet_fleet.f", "admission_policy");
        ws.apply();
        assert_eq!(
            live_binding(&policy).unwrap().data["spec"]["validationActions"],
            json!(["Deny"])
        );
        ws.assert_import_verifies(&[("gpufleet_fleet.f", &name)], ImportBy::Block, &[]);
        if cli.supports_identity() {
            let by_identity = format!("{{ name = \"{name}\" }}");
            ws.assert_import_verifies(
                &[("gpufleet_fleet.f", &by_identity)],
                ImportBy::Identity,
                &[],
            );
        }

        ws.config(&body("  namespace_enforcement = \"warn\"\n"));
        ws.apply();
        eventually("warn mode admits with a warning", || {
            submit(research, &pod(tolerating.clone()), false)
                .is_ok_and(|warnings| warned_by(&policy, &warnings))
        });

        ws.destroy();
        assert!(live_policy(&policy).is_none() && live_binding(&policy).is_none());
        eventually("after destroy the pod is admitted, unwarned", || {
            submit(research, &pod(tolerating.clone()), false)
                .is_ok_and(|warnings| !warned_by(&policy, &warnings))
        });
    });
}

/// A priority class allowing one namespace by name and others by labels:
/// pods and workloads naming it are refused elsewhere (in a namespace with
/// only some of the labels too), admitted there and in exempt namespaces;
/// the policy type-checks; import gives an empty plan; warn
/// mode admits with a warning; without `allowed_namespaces` they are
/// admitted again, and destroy removes the policy.
#[test]
fn a_priority_class_fence_refuses_other_namespaces_at_admission() {
    each_cli(|cli| {
        let name = unique_name("fenced-class");
        let namespaces = Namespaces::new(&["fence-inference", "fence-research", "fence-agents"]);
        let [inference, research, agents] = [0, 1, 2].map(|i| namespaces.0[i].as_str());
        // A namespace allowed by its labels, and one whose labels fall short.
        let team = unique_name("serving");
        let labelled = Namespaces::labelled(
            &["fence-serving"],
            json!({"fence.example.com/team": team, "tier": "gpu"}),
        );
        let short = Namespaces::labelled(
            &["fence-other-team"],
            json!({"fence.example.com/team": team}),
        );
        let fenced = |extra: &str| {
            class(
                "c",
                &name,
                100000,
                &format!(
                    "  allowed_namespaces = [\"{inference}\"]\n  allowed_namespace_selector = {{ \"fence.example.com/team\" = \"{team}\", tier = \"gpu\" }}\n  exempt_namespaces = [\"{agents}\"]\n{extra}"
                ),
            )
        };
        let mut ws = Workspace::new(cli);
        ws.config(&fenced(""));
        ws.apply();
        let policy = format!("gpufleet-class-{name}");
        let naming = json!({"priorityClassName": name});
        eventually(
            "the fence refuses a pod naming the class in research",
            || submit(research, &pod(naming.clone()), false).is_err(),
        );
        let message = refused(research, &pod(naming.clone()));
        for part in [
            format!(
                "Priority class \"{name}\" may be used only from namespace \"{inference}\" and namespaces labelled fence.example.com/team={team},tier=gpu"
            ),
            format!("in namespace {research} names it in priorityClassName"),
            "`allowed_namespaces`".to_string(),
        ] {
            assert!(message.contains(&part), "{part:?} not in: {message}");
        }
        submit(inference, &pod(naming.clone()), true)
            .expect("a pod naming the class is admitted in its namespace");
        for kind in ["Deployment", "Job"] {
            let message = refused(research, &workload(kind, naming.clone()));
            assert!(message.contains(&policy), "{kind}: {message}");
        }
        admitted(research, &pod(json!({})));
        admitted(&labelled.0[0], &pod(naming.clone()));
        refused(&short.0[0], &pod(naming.clone()));
        admitted(agents, &workload("DaemonSet", naming.clone()));
        assert_type_checked(&policy);
        ws.assert_plan_empty();
        ws.assert_import_verifies(
            &[("gpufleet_priority_class.c", &name)],
            ImportBy::Block,
            &[],
        );

        ws.config(&fenced("  namespace_enforcement = \"warn\"\n"));
        ws.apply();
        eventually("warn mode admits with a warning", || {
            submit(research, &pod(naming.clone()), false)
                .is_ok_and(|warnings| warned_by(&policy, &warnings))
        });

        ws.config(&class("c", &name, 100000, ""));
        ws.apply();
        assert!(live_policy(&policy).is_none() && live_binding(&policy).is_none());
        eventually("without the fence the pod is admitted, unwarned", || {
            submit(research, &pod(naming.clone()), false)
                .is_ok_and(|warnings| !warned_by(&policy, &warnings))
        });
        ws.config(&fenced(""));
        ws.apply();
        assert!(live_policy(&policy).is_some());
        ws.destroy();
        assert!(live_policy(&policy).is_none() && live_binding(&policy).is_none());
    });
}

/// With the cluster unreachable at plan, a fenced fleet's and class's plan
/// warn that the apply checks the API server's support first; the fleet,
/// which has no taint, warns that its fence refuses only pods selecting it.
#[test]
fn an_unreachable_cluster_at_plan_leaves_the_fence_check_to_apply() {
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        let kubeconfig = ws.path().join("unreachable.kubeconfig");
        std::fs::write(&kubeconfig, common::unreachable_kubeconfig()).unwrap();
        let fenced = "  allowed_namespaces = [\"training\"]\n";
        ws.config_raw(
            &(common::terraform::provider_block_for(kubeconfig.to_str().unwrap(), "")
                + &class("c", "nowhere", 1, fenced)
                + &fleet("f", "nowhere", fenced)),
        );
        // The CLIs show one of the two alike warnings, wrapped.
        let plan = ws.assert_plan_changes();
        let said = plan.text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            said.contains("checks that the API server serves ValidatingAdmissionPolicy")
                && said.contains("Namespace fence checked at apply")
                && said.contains("Fleet fenced by its node selector alone"),
            "{}",
            plan.text
        );
    });
}
