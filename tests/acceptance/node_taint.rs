//! `gpufleet_node_taint` through the real terraform and tofu CLIs against the
//! real API server, with Node objects made for each test (no kubelet; the
//! node lifecycle controller taints them `unreachable` after a while, one
//! more foreign writer).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::fixtures::Guard;
use common::terraform::{At, ImportBy, Workspace, assert_invalid, each_cli, each_identity_cli};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::{Node, NodeSpec, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

const RESOURCE: &str = "gpufleet_node_taint.t";
/// Key domain of the simulated other tool.
const WRITER_DOMAIN: &str = "writer.example.com/";

fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: Some(value.into()).filter(|v: &String| !v.is_empty()),
        effect: effect.into(),
        time_added: None,
    }
}

/// `key=value:Effect`, as kubectl writes taints.
fn text(t: &Taint) -> String {
    format!(
        "{}={}:{}",
        t.key,
        t.value.as_deref().unwrap_or_default(),
        t.effect
    )
}

async fn nodes_api() -> Api<Node> {
    Api::all(kube_client().await)
}

/// Test nodes, deleted when the test ends however it ends.
struct Nodes(Guard);

impl Nodes {
    fn new() -> Self {
        Self(Guard::of::<Node>(&[]))
    }

    fn create(&mut self, prefix: &str, labels: &[(&str, &str)], taints: &[Taint]) -> String {
        let name = unique_name(prefix);
        let node = Node {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: Some(taints.to_vec()),
                ..Default::default()
            }),
            ..Default::default()
        };
        // Guarded before it exists: a create that fails after the write
        // still leaves nothing behind.
        self.0.add(&name);
        block_on(async {
            nodes_api()
                .await
                .create(&PostParams::default(), &node)
                .await
                .unwrap()
        });
        name
    }

    fn delete(&mut self, name: &str) {
        self.0.delete(name);
    }
}

/// The node's taints as `key=value:Effect`, leaving out the lifecycle
/// controller's, which come and go on these kubelet-less nodes.
fn taints_on(name: &str) -> Vec<String> {
    let node = block_on(async { nodes_api().await.get(name).await.unwrap() });
    node.spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .iter()
        .filter(|t| !t.key.starts_with("node.kubernetes.io/"))
        .map(text)
        .collect()
}

/// Changes a node's taints as another tool would: read, modify, write with
/// the resourceVersion, again on conflict.
fn edit_now(name: &str, edit: impl Fn(&mut Vec<Taint>)) {
    block_on(async {
        let api = nodes_api().await;
        loop {
            let node = api.get(name).await.unwrap();
            let mut taints = node.spec.and_then(|s| s.taints).unwrap_or_default();
            edit(&mut taints);
            let patch = serde_json::json!({
                "metadata": { "resourceVersion": node.metadata.resource_version },
                "spec": { "taints": taints },
            });
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(e) => panic!("another writer could not update {name}: {e}"),
            }
        }
    })
}

fn taints_hcl(taints: &[(&str, &str, &str)]) -> String {
    let items: Vec<String> = taints
        .iter()
        .map(|(key, value, effect)| {
            let value = if value.is_empty() {
                String::new()
            } else {
                format!(", value = \"{value}\"")
            };
            format!("    {{ key = \"{key}\"{value}, effect = \"{effect}\" }},\n")
        })
        .collect();
    format!("  taints = [\n{}  ]\n", items.concat())
}

fn on_node(node: &str, taints: &[(&str, &str, &str)]) -> String {
    format!(
        "resource \"gpufleet_node_taint\" \"t\" {{\n  node_name = \"{node}\"\n{}}}\n",
        taints_hcl(taints)
    )
}

fn on_pool(pool: &str, taints: &[(&str, &str, &str)]) -> String {
    format!(
        "resource \"gpufleet_node_taint\" \"t\" {{\n  node_selector = {{ \"example.com/pool\" = \"{pool}\" }}\n{}}}\n",
        taints_hcl(taints)
    )
}

fn managed_nodes(ws: &Workspace) -> Vec<String> {
    let mut nodes: Vec<String> = ws.resource_values(RESOURCE)["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    nodes.sort();
    nodes
}

#[test]
fn foreign_taints_survive_and_one_key_carries_two_effects() {
    each_cli(|cli| {
        let mut nodes = Nodes::new();
        let node = nodes.create(
            "taint-foreign",
            &[],
            &[
                taint("team", "ml", "NoSchedule"),
                taint("gpu", "theirs", "NoExecute"),
            ],
        );
        let mut ws = Workspace::new(cli);
        ws.config(&on_node(
            &node,
            &[
                ("gpu", "true", "NoSchedule"),
                ("dedicated", "inference", "NoSchedule"),
                ("dedicated", "inference", "NoExecute"),
            ],
        ));
        ws.apply();
        assert_eq!(
            taints_on(&node),
            [
                "team=ml:NoSchedule",
                "gpu=theirs:NoExecute",
                "gpu=true:NoSchedule",
                "dedicated=inference:NoSchedule",
                "dedicated=inference:NoExecute",
            ]
        );
        assert_eq!(managed_nodes(&ws), std::slice::from_ref(&node));

        // Another tool adds a taint; then one of ours goes from the
        // configuration and another changes its value.
        edit_now(&node, |t| t.push(taint("late", "", "PreferNoSchedule")));
        ws.config(&on_node(
            &node,
            &[
                ("gpu", "yes", "NoSchedule"),
                ("dedicated", "inference", "NoSchedule"),
            ],
        ));
        ws.apply();
        assert_eq!(
            taints_on(&node),
            [
                "team=ml:NoSchedule",
                "gpu=theirs:NoExecute",
                "gpu=yes:NoSchedule",
                "dedicated=inference:NoSchedule",
                "late=:PreferNoSchedule",
            ]
        );

        ws.destroy();
        assert_eq!(
            taints_on(&node),
            [
                "team=ml:NoSchedule",
                "gpu=theirs:NoExecute",
                "late=:PreferNoSchedule"
            ]
        );
    });
}

#[test]
fn drift_shows_and_a_deleted_node_is_dropped_without_error() {
    each_cli(|cli| {
        let mut nodes = Nodes::new();
        let node = nodes.create("taint-drift", &[], &[taint("team", "ml", "NoSchedule")]);
        let mut ws = Workspace::new(cli);
        let body = on_node(
            &node,
            &[("gpu", "true", "NoSchedule"), ("gpu", "true", "NoExecute")],
        );
        ws.config(&body);
        ws.apply();

        // Someone removes one of our taints, and changes the other's value.
        edit_now(&node, |t| {
            t.retain(|t| !(t.key == "gpu" && t.effect == "NoExecute"))
        });
        let missing = json!(format!("(missing on node {node})"));
        let plan = ws.assert_plan_changes();
        plan.assert_actions(RESOURCE, &["update"]);
        plan.assert_change(RESOURCE, "taints[0].value", json!("true"), json!("true"));
        plan.assert_change(RESOURCE, "taints[1].value", missing.clone(), json!("true"));
        edit_now(&node, |t| {
            t.iter_mut()
                .filter(|t| t.key == "gpu")
                .for_each(|t| t.value = Some("false".into()))
        });
        let plan = ws.assert_plan_changes();
        plan.assert_change(RESOURCE, "taints[0].value", json!("false"), json!("true"));
        plan.assert_change(RESOURCE, "taints[1].value", missing, json!("true"));
        ws.apply();
        assert_eq!(
            taints_on(&node),
            [
                "team=ml:NoSchedule",
                "gpu=true:NoSchedule",
                "gpu=true:NoExecute"
            ]
        );

        // The node goes away: refresh drops the resource (no "not found"
        // error), the plan offers to create it again, and without it in the
        // configuration there is nothing to do.
        nodes.delete(&node);
        ws.assert_plan_changes()
            .assert_actions(RESOURCE, &["create"]);
        let error = ws.apply_fails();
        assert!(error.contains("Node not found"), "{error}");
        assert!(error.contains("node_name"), "{error}");
        ws.config("");
        ws.assert_plan_empty();
    });
}

#[test]
fn selector_follows_matching_nodes() {
    each_cli(|cli| {
        let pool = unique_name("pool");
        let label = [("example.com/pool", pool.as_str())];
        let foreign = [taint("team", "ml", "NoSchedule")];
        let mut nodes = Nodes::new();
        let mut members: Vec<String> = (0..3)
            .map(|_| nodes.create("taint-pool", &label, &foreign))
            .collect();
        let outsider = nodes.create("taint-outside", &[("example.com/pool", "other")], &[]);
        let mut ws = Workspace::new(cli);
        ws.config(&on_pool(
            &pool,
            &[("pool", &pool, "NoSchedule"), ("gpu", "", "NoExecute")],
        ));
        ws.apply();
        members.sort();
        assert_eq!(managed_nodes(&ws), members);
        for member in &members {
            assert_eq!(
                taints_on(member),
                [
                    "team=ml:NoSchedule".to_string(),
                    format!("pool={pool}:NoSchedule"),
                    "gpu=:NoExecute".into()
                ]
            );
        }
        assert!(taints_on(&outsider).is_empty());
        assert_eq!(
            ws.resource_values(RESOURCE)["id"],
            format!("example.com/pool={pool}")
        );

        // A node joins the pool: the next plan taints it.
        let joined = nodes.create("taint-pool", &label, &[]);
        let plan = ws.assert_plan_changes();
        let missing = json!(format!("(missing on node {joined})"));
        plan.assert_actions(RESOURCE, &["update"]);
        plan.assert_change(RESOURCE, "taints[0].value", missing.clone(), json!(pool));
        plan.assert_change(RESOURCE, "taints[1].value", missing, json!(null));
        ws.apply();
        assert_eq!(
            taints_on(&joined),
            [format!("pool={pool}:NoSchedule"), "gpu=:NoExecute".into()]
        );

        // A node leaves the pool: the next plan untaints it.
        let left = members.remove(0);
        block_on(async {
            let patch = serde_json::json!({"metadata": {"labels": {"example.com/pool": "other"}}});
            nodes_api()
                .await
                .patch(&left, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        });
        let plan = ws.assert_plan_changes();
        let stale = json!(format!(
            "(still on node {left}, which is no longer targeted)"
        ));
        plan.assert_actions(RESOURCE, &["update"]);
        plan.assert_change(RESOURCE, "taints[0].value", stale.clone(), json!(pool));
        plan.assert_change(RESOURCE, "taints[1].value", stale, json!(null));
        ws.apply();
        assert_eq!(taints_on(&left), ["team=ml:NoSchedule"]);

        // A node is deleted: it drops out of `nodes`, with nothing to do.
        let deleted = members.remove(0);
        nodes.delete(&deleted);
        ws.assert_plan_empty();
        ws.apply();
        members.push(joined.clone());
        members.sort();
        assert_eq!(managed_nodes(&ws), members);

        ws.destroy();
        for member in &members {
            assert_eq!(
                taints_on(member),
                if *member == joined {
                    Vec::<String>::new()
                } else {
                    vec!["team=ml:NoSchedule".to_string()]
                }
            );
        }

        // A selector that matches no node at all is no error either.
        let mut empty = Workspace::new(cli);
        empty.config(&on_pool(
            &unique_name("empty-pool"),
            &[("team", "ml", "NoSchedule")],
        ));
        empty.apply();
        assert!(managed_nodes(&empty).is_empty(), "{}", cli.name);
        empty.destroy();
    });
}

/// What the other writer did: its rounds, how many of its writes met a
/// conflict, its own taints as it last wrote them on each node, and every
/// time it found a round of its own lost.
#[derive(Default)]
struct WriterReport {
    rounds: u32,
    conflicts: u32,
    last_written: BTreeMap<String, Vec<String>>,
    lost: Vec<String>,
}

/// The other writer's own taints in a round: a value that changes every
/// round, and a second taint present every other round.
fn writer_taints(round: u32) -> Vec<Taint> {
    let mut own = vec![taint(
        &format!("{WRITER_DOMAIN}round"),
        &round.to_string(),
        "NoSchedule",
    )];
    if round.is_multiple_of(2) {
        own.push(taint(
            &format!("{WRITER_DOMAIN}even"),
            "yes",
            "PreferNoSchedule",
        ));
    }
    own
}

fn writers_on(node: &Node) -> Vec<String> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
        .iter()
        .filter(|t| t.key.starts_with(WRITER_DOMAIN))
        .map(text)
        .collect()
}

/// What the other writer finds missing of its `last` round when it reads
/// `node` for `round`.
fn lost_round(node: &Node, round: u32, last: &[String]) -> Option<String> {
    let found = writers_on(node);
    (found != last).then(|| {
        format!(
            "{}, reading for round {round}: expected {last:?}, found {found:?}",
            node.metadata.name.as_deref().unwrap_or_default()
        )
    })
}

/// Another tool that keeps rewriting its own taints on every node of
/// `nodes` at once, one round after another on each, until `stop` is set.
/// It writes as a careful client does, with PUT (the provider patches, so
/// the API server's metrics tell their conflicts apart): read, replace its
/// own taints, write with the resourceVersion read, again on conflict. Every
/// read first checks that its last round is still there, and once stopped
/// it reads each node a last time to check the final round.
fn start_writer(
    nodes: Vec<String>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<WriterReport> {
    std::thread::spawn(move || {
        block_on(async move {
            let api = nodes_api().await;
            let per_node = nodes.iter().map(|name| {
                let (api, stop) = (&api, &stop);
                async move {
                    let (mut rounds, mut conflicts) = (0, 0);
                    let mut last: Vec<String> = Vec::new();
                    let mut lost = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let own = writer_taints(rounds);
                        loop {
                            let mut node = api.get(name).await.unwrap();
                            lost.extend(lost_round(&node, rounds, &last));
                            let taints = node
                                .spec
                                .get_or_insert_default()
                                .taints
                                .get_or_insert_default();
                            taints.retain(|t| !t.key.starts_with(WRITER_DOMAIN));
                            taints.extend(own.iter().cloned());
                            match api.replace(name, &PostParams::default(), &node).await {
                                Ok(_) => break,
                                Err(kube::Error::Api(status)) if status.code == 409 => {
                                    conflicts += 1
                                }
                                Err(e) => panic!("the other writer could not update {name}: {e}"),
                            }
                        }
                        last = own.iter().map(text).collect();
                        rounds += 1;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    lost.extend(lost_round(&api.get(name).await.unwrap(), rounds, &last));
                    (name.clone(), rounds, conflicts, last, lost)
                }
            });
            let mut report = WriterReport::default();
            for (node, rounds, conflicts, last, lost) in futures::future::join_all(per_node).await {
                report.rounds += rounds;
                report.conflicts += conflicts;
                report.last_written.insert(node, last);
                report.lost.extend(lost);
            }
            report
        })
    })
}

/// How many writes to Node objects (not their status) of `verb` the API
/// server has refused as conflicts (HTTP 409) since it started, from its
/// metrics. With the node lifecycle controller off (testbed),
/// the conflicts on nodes come from writers racing each other: in the
/// concurrency test, PUTs are the other writer's and PATCHes the provider's.
async fn node_write_conflicts(verb: &str) -> u64 {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let metrics = kube_client().await.request_text(request).await.unwrap();
    let verb = format!("verb=\"{verb}\"");
    metrics
        .lines()
        .filter(|line| {
            line.starts_with("apiserver_request_total{")
                && [
                    "code=\"409\"",
                    "resource=\"nodes\"",
                    "subresource=\"\"",
                    verb.as_str(),
                ]
                .iter()
                .all(|label| line.contains(label))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Terraform applies, changes and destroys taints on three nodes while
/// another tool keeps rewriting its own taints there. After every apply
/// Terraform's taints are exactly as configured, and every round the other
/// tool finds its previous round intact; the provider's writes did meet
/// conflicts (so the test did race them) and retried each.
#[test]
fn a_concurrent_writer_and_terraform_both_keep_their_taints() {
    each_cli(|cli| {
        let pool = unique_name("pool");
        let mut nodes = Nodes::new();
        let members: Vec<String> = (0..3)
            .map(|_| nodes.create("taint-race", &[("example.com/pool", &pool)], &[]))
            .collect();
        let conflicts_before = block_on(async {
            (
                node_write_conflicts("PATCH").await,
                node_write_conflicts("PUT").await,
            )
        });
        let stop = Arc::new(AtomicBool::new(false));
        let writer = start_writer(members.clone(), stop.clone());
        // Stops the writer however the test ends, so it cannot outlive it.
        struct StopOnDrop(Arc<AtomicBool>);
        impl Drop for StopOnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop_on_drop = StopOnDrop(stop.clone());
        let ours_on = |member: &str| -> Vec<String> {
            taints_on(member)
                .into_iter()
                .filter(|t| !t.starts_with(WRITER_DOMAIN))
                .collect()
        };

        let started = Instant::now();
        let mut ws = Workspace::new(cli);
        let mut applies = 0;
        let configurations: [&[(&str, &str, &str)]; 3] = [
            &[("gpu", "true", "NoSchedule"), ("gpu", "true", "NoExecute")],
            &[("gpu", "true", "NoSchedule"), ("tier", "a", "NoSchedule")],
            &[("gpu", "false", "NoSchedule"), ("tier", "b", "NoSchedule")],
        ];
        // Two rounds, and more (up to six) while none of the provider's
        // writes has met the writer's: how often they meet depends on the
        // machine's load.
        let mut rounds = 0;
        while rounds < 2
            || (rounds < 6 && block_on(node_write_conflicts("PATCH")) == conflicts_before.0)
        {
            rounds += 1;
            for taints in configurations {
                ws.config(&on_pool(&pool, taints));
                ws.apply();
                applies += 1;
                let expected: Vec<String> = taints
                    .iter()
                    .map(|(k, v, e)| format!("{k}={v}:{e}"))
                    .collect();
                for member in &members {
                    assert_eq!(ours_on(member), expected, "on {member}");
                }
            }
        }
        ws.destroy();
        applies += 1;
        let terraform_time = started.elapsed();

        // The writer stops, then checks its last round on every node.
        stop.store(true, Ordering::Relaxed);
        let report = writer.join().expect("the writer panicked");
        let (patch_conflicts, put_conflicts) = block_on(async {
            (
                node_write_conflicts("PATCH").await - conflicts_before.0,
                node_write_conflicts("PUT").await - conflicts_before.1,
            )
        });
        eprintln!(
            "{}: concurrent writer: {} rounds on {} nodes during {applies} applies in {:.1?}; \
             the API server refused {put_conflicts} of the writer's PUTs and \
             {patch_conflicts} of the provider's PATCHes as conflicts",
            cli.name,
            report.rounds,
            members.len(),
            terraform_time,
        );
        assert!(
            report.lost.is_empty(),
            "{}: the other writer's taints were lost:\n  {}",
            cli.name,
            report.lost.join("\n  ")
        );
        for member in &members {
            assert!(
                ours_on(member).is_empty(),
                "destroy left taints on {member}"
            );
            let writers: Vec<String> = taints_on(member)
                .into_iter()
                .filter(|t| t.starts_with(WRITER_DOMAIN))
                .collect();
            assert_eq!(
                Some(&writers),
                report.last_written.get(member),
                "the writer's taints on {member} are not what it last wrote"
            );
        }
        assert!(
            report.rounds as usize >= 10 * members.len(),
            "the writer hardly ran"
        );
        // The metrics count what the writer counted: the attribution holds.
        assert_eq!(
            put_conflicts,
            u64::from(report.conflicts),
            "the API server counted other PUT conflicts on nodes than the writer's"
        );
        assert!(
            patch_conflicts > 0,
            "{}: none of the provider's writes met a conflict, so the race was never run \
             (or the provider writes without its resourceVersion precondition)",
            cli.name
        );
    });
}

#[test]
fn import_takes_the_workload_taints_and_leaves_the_system_ones() {
    each_cli(|cli| {
        let mut nodes = Nodes::new();
        let system = [
            taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),
            taint("karpenter.sh/disrupted", "", "NoSchedule"),
            taint(
                "node.cloudprovider.kubernetes.io/uninitialized",
                "true",
                "NoSchedule",
            ),
        ];
        let node = nodes.create(
            "taint-import",
            &[],
            &[
                system[0].clone(),
                taint("workload", "inference", "NoSchedule"),
                system[1].clone(),
                taint("workload", "inference", "NoExecute"),
                system[2].clone(),
            ],
        );
        let body = on_node(
            &node,
            &[
                ("workload", "inference", "NoSchedule"),
                ("workload", "inference", "NoExecute"),
            ],
        );
        // Applying takes the workload taints over as they are; an import
        // into an empty state (by command, by block) then gives an empty plan
        // and the same state.
        let mut ws = Workspace::new(cli);
        ws.config(&body);
        let before = taints_on(&node);
        ws.apply();
        assert_eq!(
            taints_on(&node),
            before,
            "apply changed taints it only had to take over"
        );
        assert_eq!(managed_nodes(&ws), std::slice::from_ref(&node));
        for by in [ImportBy::Command, ImportBy::Block] {
            ws.assert_import_verifies(&[(RESOURCE, &node)], by, &[]);
        }

        // Destroy releases exactly the workload taints.
        ws.destroy();
        let left: Vec<String> = block_on(async { nodes_api().await.get(&node).await.unwrap() })
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .iter()
            .filter(|t| {
                ![
                    "node.kubernetes.io/unreachable",
                    "node.kubernetes.io/not-ready",
                ]
                .contains(&t.key.as_str())
            })
            .map(text)
            .collect();
        assert_eq!(left, system.iter().map(text).collect::<Vec<_>>());

        let mut missing = Workspace::new(cli);
        missing.config(&on_node("taint-does-not-exist", &[("x", "", "NoSchedule")]));
        missing.init();
        let run = missing.run(&["import", "-no-color", RESOURCE, "taint-does-not-exist"]);
        assert!(!run.success);
        assert!(run.stderr.contains("non-existent"), "{}", run.stderr);
    });
}

/// The identity is the target: the node, or the selector as text (Terraform
/// allows no maps in identities). Importing by `node_name` gives what
/// importing by ID gives; a selector's taints cannot be imported either way.
/// The target changes in place, so the identity follows it.
#[test]
fn identity_is_the_target_and_imports_a_node_s_taints() {
    each_identity_cli(|cli| {
        let mut nodes = Nodes::new();
        let pool = unique_name("pool");
        let node = nodes.create("taint-identity", &[("example.com/pool", &pool)], &[]);
        let taints = [("workload", "inference", "NoSchedule")];
        let mut ws = Workspace::new(cli);
        ws.config(&on_node(&node, &taints));
        ws.apply();
        assert_eq!(
            ws.resource(RESOURCE)["identity"],
            json!({ "node_name": node, "node_selector": null })
        );
        let by_identity = format!("{{ node_name = \"{node}\" }}");
        ws.assert_import_verifies(&[(RESOURCE, &by_identity)], ImportBy::Identity, &[]);

        ws.config(&on_pool(&pool, &taints));
        ws.assert_plan_changes()
            .assert_actions(RESOURCE, &["update"]);
        ws.apply();
        assert_eq!(
            ws.resource(RESOURCE)["identity"],
            json!({ "node_name": null, "node_selector": format!("example.com/pool={pool}") })
        );
        let mut imported = Workspace::new(cli);
        imported.config_raw(&format!(
            "import {{\n  to       = {RESOURCE}\n  identity = {{ node_selector = \"example.com/pool={pool}\" }}\n}}\n\n{}",
            ws.main_tf()
        ));
        let refused = imported.apply_fails();
        assert!(refused.contains("Cannot import by selector"), "{refused}");
        ws.destroy();
        assert!(taints_on(&node).iter().all(|t| !t.starts_with("workload=")));
    });
}

/// Each bad input fails `validate` with one error that names the attribute
/// path, placed where the CLIs place that path (a nested attribute on its list element).
#[test]
fn bad_input_is_rejected_at_validate_time_with_the_attribute() {
    each_cli(|cli| {
        let one = [("gpu", "", "NoSchedule")];
        let cases = [
            (
                on_node("n", &[("gpu", "", "NoSchedule"), ("gpu", "", "Sometimes")]),
                "taints[1].effect: \"Sometimes\" is not one of",
                At::Line("effect = \"Sometimes\""),
            ),
            (
                on_node("n", &[("", "", "NoSchedule")]),
                "taints[0].key: the key must not be empty",
                At::Line("key = \"\""),
            ),
            (
                on_node("n", &[("bad key", "", "NoSchedule")]),
                "taints[0].key: \"bad key\" is not a valid key",
                At::Line("key = \"bad key\""),
            ),
            (
                on_node("n", &[("gpu", "bad value!", "NoSchedule")]),
                "taints[0].value: \"bad value!\" is not a valid label value",
                At::Line("value = \"bad value!\""),
            ),
            // A list element (no attribute inside it) is placed on its line.
            (
                on_node(
                    "n",
                    &[("gpu", "", "NoSchedule"), ("gpu", "x", "NoSchedule")],
                ),
                "taints[1] repeats key \"gpu\" with effect NoSchedule from taints[0]",
                At::Line("value = \"x\""),
            ),
            // So is a map entry.
            (
                on_pool("p", &one).replace("\"p\" }", "\"bad value!\" }"),
                "label \"example.com/pool\": \"bad value!\" is not a valid label value",
                At::Line("node_selector = {"),
            ),
            (
                on_pool("p", &one)
                    .replace("  node_selector", "  node_name = \"n\"\n  node_selector"),
                "not both",
                At::Line("node_selector = {"),
            ),
            // No attribute is at fault: the resource is.
            (
                on_node("n", &one).replace("  node_name = \"n\"\n", ""),
                "Set exactly one of `node_name` or `node_selector`.",
                At::Block,
            ),
            (
                on_pool("p", &one).replace("{ \"example.com/pool\" = \"p\" }", "{}"),
                "matches every node",
                At::Line("node_selector = {}"),
            ),
            (
                on_node("n", &[]),
                "must not be empty",
                At::Line("taints = ["),
            ),
        ];
        for (body, message, at) in cases {
            assert_invalid(cli, &body, message, at);
        }
    });
}
