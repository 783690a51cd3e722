//! Nothing written is lost from state when an apply fails after its write,
//! with both CLIs against the real API server: a create cut short by Ctrl-C,
//! writes whose answers are lost (once, and until the retry policy gives
//! up), a write lost before it reached the server, and node-taint writes
//! that RBAC refuses part-way. After each, the next plan proposes a
//! replacement or an update, never an "already exists" dead end.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::fixtures::{class, fleet, live_node_pool, live_priority_class};
use common::lossy_network::LossyNetwork;
use common::terraform::{Workspace, each_cli, provider_block, provider_block_for};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{DeleteParams, PostParams};

const CLASS: &str = "gpufleet_priority_class.c";

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn spawn_apply(ws: &mut Workspace) -> Child {
    ws.init();
    ws.holds_objects();
    ws.command(&["apply", "-auto-approve", "-no-color", "-input=false"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Ctrl-C as a terminal sends it: SIGINT to the CLI, which then asks the
/// provider to stop (StopProvider) and waits for the operations in flight.
/// Returns what it printed and how long it took to stop.
fn interrupt(child: Child, limit: Duration) -> (Output, Duration) {
    let pid = child.id().to_string();
    let sent = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = finished
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the CLI did not stop within {limit:?} of SIGINT"))
        .unwrap();
    (output, sent.elapsed())
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// The CLI's output with its line wrapping undone.
fn one_line(out: &str) -> String {
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn through(network: &LossyNetwork, body: &str) -> String {
    provider_block_for(&network.kubeconfig(), "") + body
}

#[test]
fn a_create_cut_short_by_ctrl_c_is_kept_and_replaced() {
    each_cli(|cli| {
        let network = LossyNetwork::start();
        let name = unique_name("pc-interrupted");
        let mut ws = Workspace::new(cli);
        ws.config_raw(&through(&network, &class("c", &name, 10, "")));
        // The write reaches the API server; its answers never come back, so
        // the provider keeps retrying until Terraform asks it to stop.
        network.lose_answers("PATCH", &format!("/priorityclasses/{name}"), u32::MAX);
        let apply = spawn_apply(&mut ws);
        wait_until("the write and a retry", Duration::from_secs(60), || {
            network.answers_lost() >= 2 && live_priority_class(&name).is_some()
        });
        let (output, stopped_in) = interrupt(apply, Duration::from_secs(30));
        let out = text(&output);
        assert!(!output.status.success(), "{out}");
        assert!(out.contains("Operation cancelled"), "{out}");
        assert!(out.contains("Kept in state after a failed write"), "{out}");
        assert_eq!(
            ws.resource(CLASS)["tainted"],
            true,
            "{}: the interrupted create is not in state as tainted",
            cli.name
        );

        network.heal();
        ws.assert_plan_changes()
            .assert_actions(CLASS, &["delete", "create"]);
        ws.apply();
        ws.assert_plan_empty();
        assert_eq!(live_priority_class(&name).unwrap().value, Some(10));
        eprintln!(
            "{}: Ctrl-C during a create whose answers were lost ({} lost): stopped {stopped_in:.1?} after SIGINT, the object kept in state as tainted, replaced by the next apply",
            cli.name,
            network.answers_lost()
        );
    });
}

#[test]
fn a_lost_answer_is_retried() {
    each_cli(|cli| {
        let network = LossyNetwork::start();
        let name = unique_name("lost-answer");
        let mut ws = Workspace::new(cli);
        ws.config_raw(&through(
            &network,
            &(class("c", &name, 20, "") + &fleet("f", &name, "  accelerators = [\"L4\"]\n")),
        ));
        network.lose_answers("PATCH", &name, 2);
        ws.apply();
        assert_eq!(network.answers_lost(), 2);
        ws.assert_plan_empty();
        assert_eq!(live_priority_class(&name).unwrap().value, Some(20));
        assert!(live_node_pool(&name).is_some());
    });
}

#[test]
fn writes_the_policy_gives_up_on_are_kept_when_they_landed() {
    each_cli(|cli| {
        let network = LossyNetwork::start();
        let name = unique_name("pc-given-up");
        let path = format!("/priorityclasses/{name}");
        let timeouts = "  timeouts = { create = \"4s\", update = \"4s\" }\n";
        let mut ws = Workspace::new(cli);

        // A create whose answers are all lost: the deadline ends the
        // retries, the object is found, written by gpufleet, and kept.
        ws.config_raw(&through(&network, &class("c", &name, 30, timeouts)));
        network.lose_answers("PATCH", &path, u32::MAX);
        let out = one_line(&ws.apply_fails());
        for expected in [
            "Could not create PriorityClass",
            "API call: PATCH scheduling.k8s.io/v1 PriorityClass",
            "Stopped retrying at the deadline of 4.0s set by `timeouts.create`",
            "Kept in state after a failed write",
        ] {
            assert!(
                out.contains(expected),
                "{}: no {expected:?} in:\n{out}",
                cli.name
            );
        }
        assert_eq!(ws.resource(CLASS)["tainted"], true);
        network.heal();
        ws.assert_plan_changes()
            .assert_actions(CLASS, &["delete", "create"]);
        ws.apply();
        ws.assert_plan_empty();

        // An update lost before it reached the server: what is there is
        // kept, so the next plan proposes the update again.
        let description = "  description = \"second\"\n";
        ws.config_raw(&through(
            &network,
            &class("c", &name, 30, &(timeouts.to_string() + description)),
        ));
        network.lose_requests("PATCH", &path, u32::MAX);
        let out = ws.apply_fails();
        assert!(out.contains("Could not update PriorityClass"), "{out}");
        assert!(
            network.requests_lost() >= 2,
            "the update was not retried:\n{out}"
        );
        network.heal();
        let plan = ws.assert_plan_changes();
        plan.assert_actions(CLASS, &["update"]);
        assert_eq!(
            plan.after(CLASS, "description"),
            Some(&serde_json::json!("second")),
            "{}",
            plan.text
        );
        ws.apply();
        ws.assert_plan_empty();
        assert_eq!(
            live_priority_class(&name).unwrap().description.as_deref(),
            Some("second")
        );

        // A create lost before it reached the server leaves nothing to track.
        let other = unique_name("pc-never-written");
        ws.config_raw(&through(
            &network,
            &(class("c", &name, 30, &(timeouts.to_string() + description))
                + &class("d", &other, 31, timeouts)),
        ));
        network.lose_requests("PATCH", &format!("/priorityclasses/{other}"), u32::MAX);
        let out = ws.apply_fails();
        assert!(!out.contains("Kept in state"), "{out}");
        assert!(live_priority_class(&other).is_none());
        network.heal();
        ws.assert_plan_changes()
            .assert_actions("gpufleet_priority_class.d", &["create"]);
        ws.apply();
        ws.assert_plan_empty();
    });
}

/// A user that may patch only some of the nodes a selector matches.
struct PartialRights {
    user: String,
    kubeconfig: tempfile::NamedTempFile,
}

impl PartialRights {
    /// `user` may read every node and patch only `patchable`; the
    /// kubeconfig is the admin's, impersonating `user`.
    fn new(patchable: &[String]) -> Self {
        let user = unique_name("taint-partial");
        let role: ClusterRole = serde_json::from_value(serde_json::json!({
            "metadata": { "name": user },
            "rules": [
                { "apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"] },
                { "apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"], "resourceNames": patchable },
            ],
        }))
        .unwrap();
        let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": { "name": user },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
        }))
        .unwrap();
        block_on(async {
            let client = kube_client().await;
            Api::<ClusterRole>::all(client.clone())
                .create(&PostParams::default(), &role)
                .await
                .unwrap();
            Api::<ClusterRoleBinding>::all(client)
                .create(&PostParams::default(), &binding)
                .await
                .unwrap();
        });
        let kubeconfig = common::impersonating(&common::kubeconfig(), &user);
        Self { user, kubeconfig }
    }

    fn path(&self) -> String {
        self.kubeconfig.path().to_string_lossy().into_owned()
    }
}

impl Drop for PartialRights {
    fn drop(&mut self) {
        block_on(async {
            let client = kube_client().await;
            let _ = Api::<ClusterRoleBinding>::all(client.clone())
                .delete(&self.user, &DeleteParams::default())
                .await;
            let _ = Api::<ClusterRole>::all(client)
                .delete(&self.user, &DeleteParams::default())
                .await;
        });
    }
}

fn create_node(name: &str, pool: &str) {
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": { "example.com/pool": pool } },
    }))
    .unwrap();
    block_on(async {
        Api::<Node>::all(kube_client().await)
            .create(&PostParams::default(), &node)
            .await
            .unwrap();
    });
}

fn our_taints(name: &str) -> Vec<String> {
    let node = block_on(async {
        Api::<Node>::all(kube_client().await)
            .get(name)
            .await
            .unwrap()
    });
    node.spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .iter()
        .filter(|t: &&Taint| t.key == "gpu")
        .map(|t| {
            format!(
                "{}={}:{}",
                t.key,
                t.value.as_deref().unwrap_or(""),
                t.effect
            )
        })
        .collect()
}

struct Nodes(Vec<String>);

impl Drop for Nodes {
    fn drop(&mut self) {
        block_on(async {
            let api = Api::<Node>::all(kube_client().await);
            for name in &self.0 {
                let _ = api.delete(name, &DeleteParams::default()).await;
            }
        });
    }
}

#[test]
fn node_taint_writes_refused_part_way_are_tracked() {
    each_cli(|cli| {
        let pool = unique_name("pool");
        let mut names: Vec<String> = (0..3).map(|_| unique_name("taint-partial")).collect();
        names.sort();
        for name in &names {
            create_node(name, &pool);
        }
        let _nodes = Nodes(names.clone());
        let rights = PartialRights::new(&names[..2]);
        let resource = |value: &str| {
            format!(
                "resource \"gpufleet_node_taint\" \"t\" {{\n  node_selector = {{ \"example.com/pool\" = \"{pool}\" }}\n  taints = [{{ key = \"gpu\", value = \"{value}\", effect = \"NoSchedule\" }}]\n}}\n"
            )
        };
        // Then the rights docs/rbac.yaml gives, on every node.
        let granted = provider_block("");
        let limited = provider_block_for(&rights.path(), "");
        let mut ws = Workspace::new(cli);

        // A create refused on the third node: the two written are in state
        // (tainted), and the next plan replaces the resource.
        ws.config_raw(&(limited.clone() + &resource("a")));
        let out = ws.apply_fails();
        assert!(out.contains("Permission denied by Kubernetes"), "{out}");
        assert!(out.contains(&names[2]), "{out}");
        let state = ws.resource("gpufleet_node_taint.t");
        assert_eq!(state["tainted"], true, "{state}");
        assert_eq!(
            state["values"]["nodes"],
            serde_json::json!(names[..2]),
            "{state}"
        );
        assert_eq!(our_taints(&names[0]), ["gpu=a:NoSchedule"]);
        assert!(our_taints(&names[2]).is_empty());
        ws.config_raw(&(granted.clone() + &resource("a")));
        ws.assert_plan_changes()
            .assert_actions("gpufleet_node_taint.t", &["delete", "create"]);
        ws.apply();
        ws.assert_plan_empty();

        // An update refused on the third node: the next plan shows the
        // update still to make there.
        ws.config_raw(&(limited + &resource("b")));
        let out = ws.apply_fails();
        assert!(out.contains("Permission denied by Kubernetes"), "{out}");
        assert_eq!(our_taints(&names[1]), ["gpu=b:NoSchedule"]);
        assert_eq!(our_taints(&names[2]), ["gpu=a:NoSchedule"]);
        ws.config_raw(&(granted + &resource("b")));
        ws.assert_plan_changes()
            .assert_actions("gpufleet_node_taint.t", &["update"]);
        ws.apply();
        ws.assert_plan_empty();
        for name in &names {
            assert_eq!(our_taints(name), ["gpu=b:NoSchedule"]);
        }
        ws.destroy();
        for name in &names {
            assert!(our_taints(name).is_empty());
        }
    });
}
