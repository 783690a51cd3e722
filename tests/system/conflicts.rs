//! The conflict suite: Terraform applies again and again while three other
//! writers keep rewriting their own fields of the very objects it writes:
//! labels and taints of Nodes (where `gpufleet_node_sharing` labels and
//! `gpufleet_node_taint` taints), a field of a fleet's NodePool that the
//! fleet does not own (an annotation beside the fleet's own), and
//! other keys of the device-plugin ConfigMap (where the sharing resources
//! own theirs). Each writer is a careful client: read, check that its last
//! round is intact, write its next round with the resourceVersion it read
//! (PUT), again on conflict. After every apply Terraform's fields are as
//! configured (and the next plan is empty); every round each writer finds
//! its previous round intact. Each run prints one `conflict figures:` line.
//!
//! One writer per kind, not a second taint race: tests/acceptance/node_taint.rs
//! races taints alone, and tests/acceptance/sharing.rs edits the ConfigMap
//! between applies. Apart from those, one taint over many nodes, which the
//! provider writes several at a time from one LIST, races a writer on every
//! one of its nodes.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::fixtures::{fleet, node_pool_api, node_pools};
use common::terraform::{Workspace, each_cli};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Taint};
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

const WRITER: &str = "writer.example.com/round";
const WRITER_KEY: &str = "writer-round";
const OURS: &str = "conflict.example.com/apply";
const CONFIG_MAP: &str = "gpufleet-device-plugin";
const CONFIG_LABEL: &str = "nvidia.com/device-plugin.config";
const APPLIES: u32 = 3;
/// More applies while none of the provider's node writes has met a
/// writer's (how often they meet depends on the machine's load), up to this.
const MAX_APPLIES: u32 = 12;
/// The nodes one taint goes over in its race: twice the writes the
/// provider has in flight at once (`kit::node_target::IN_FLIGHT`), so that
/// later writes start from a LIST the writer has long moved past.
const RACED_NODES: usize = 32;

/// What one writer did.
#[derive(Debug, Default)]
struct Report {
    /// Rounds written, over all its objects.
    rounds: u32,
    /// Rounds it found intact when it read again (every round but the last
    /// of each object, which the final check covers).
    intact: u32,
    /// Its writes the API server refused as conflicts, each written again.
    conflicts: u32,
    /// Each time it found a round of its own changed.
    lost: Vec<String>,
}

/// A writer's fields on one kind of object.
struct Marks<K> {
    kind: &'static str,
    /// Puts round `round` into the object.
    set: fn(&mut K, u32),
    /// The writer's fields as they are in the object.
    get: fn(&K) -> Vec<String>,
}

impl<K> Marks<K> {
    fn expected(&self, object: &K, round: u32) -> Vec<String>
    where
        K: Clone,
    {
        let mut marked = object.clone();
        (self.set)(&mut marked, round);
        (self.get)(&marked)
    }
}

/// Rewrites the writer's fields on every object of `names` until `stop`,
/// one round after another on each, `pause` between them; an object not
/// there yet is waited for. `api` makes the writer's API from a client of
/// its own thread.
fn start_writer<K>(
    api: impl FnOnce(kube::Client) -> Api<K> + Send + 'static,
    names: Vec<String>,
    marks: Marks<K>,
    pause: Duration,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Report>
where
    K: Clone + DeserializeOwned + Serialize + Debug + Resource + Send + Sync + 'static,
{
    std::thread::spawn(move || {
        block_on(async move {
            let api = api(kube_client().await);
            let per_object = names.iter().map(|name| {
                let (api, marks, stop) = (&api, &marks, &stop);
                async move {
                    let mut report = Report::default();
                    let mut last: Option<(u32, Vec<String>)> = None;
                    while !stop.load(Ordering::Relaxed) {
                        let round = last.as_ref().map_or(0, |(r, _)| r + 1);
                        let mut intact = true;
                        loop {
                            let Some(mut object) = api.get_opt(name).await.unwrap() else {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                continue;
                            };
                            if let Some((r, written)) = &last {
                                let found = (marks.get)(&object);
                                intact = &found == written;
                                if !intact {
                                    report.lost.push(format!(
                                        "{} {name}, round {r}: wrote {written:?}, found {found:?}",
                                        marks.kind
                                    ));
                                }
                            }
                            let written = marks.expected(&object, round);
                            (marks.set)(&mut object, round);
                            match api.replace(name, &PostParams::default(), &object).await {
                                Ok(_) => {
                                    report.intact += u32::from(last.is_some() && intact);
                                    last = Some((round, written));
                                    break;
                                }
                                Err(kube::Error::Api(s)) if s.code == 409 => report.conflicts += 1,
                                Err(e) => {
                                    panic!("the {} writer could not write {name}: {e}", marks.kind)
                                }
                            }
                        }
                        report.rounds += 1;
                        tokio::time::sleep(pause).await;
                    }
                    // The last round, once Terraform is done.
                    if let Some((r, written)) = last {
                        let found = (marks.get)(&api.get(name).await.unwrap());
                        if found != written {
                            report.lost.push(format!(
                                "{} {name}, last round {r}: wrote {written:?}, found {found:?}",
                                marks.kind
                            ));
                        } else {
                            report.intact += 1;
                        }
                    }
                    report
                }
            });
            let mut total = Report::default();
            for report in futures::future::join_all(per_object).await {
                total.rounds += report.rounds;
                total.intact += report.intact;
                total.conflicts += report.conflicts;
                total.lost.extend(report.lost);
            }
            total
        })
    })
}

fn node_marks() -> Marks<Node> {
    Marks {
        kind: "Node",
        set: |node, round| {
            node.metadata
                .labels
                .get_or_insert_default()
                .insert(WRITER.into(), round.to_string());
            let taints = node
                .spec
                .get_or_insert_default()
                .taints
                .get_or_insert_default();
            taints.retain(|t| t.key != WRITER);
            taints.push(Taint {
                key: WRITER.into(),
                value: Some(round.to_string()),
                effect: "NoSchedule".into(),
                ..Default::default()
            });
        },
        get: |node| {
            let label = node.metadata.labels.as_ref().and_then(|l| l.get(WRITER));
            let taints = node.spec.as_ref().and_then(|s| s.taints.as_ref());
            label
                .map(|v| format!("label {v}"))
                .into_iter()
                .chain(
                    taints
                        .into_iter()
                        .flatten()
                        .filter(|t| t.key == WRITER)
                        .map(|t| format!("taint {}", t.value.as_deref().unwrap_or_default())),
                )
                .collect()
        },
    }
}

fn node_pool_marks() -> Marks<DynamicObject> {
    Marks {
        kind: "NodePool",
        set: |pool, round| {
            pool.metadata
                .annotations
                .get_or_insert_default()
                .insert(WRITER.into(), round.to_string());
        },
        get: |pool| {
            pool.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(WRITER))
                .map(|v| format!("annotation {v}"))
                .into_iter()
                .collect()
        },
    }
}

fn config_map_marks() -> Marks<ConfigMap> {
    Marks {
        kind: "ConfigMap",
        set: |map, round| {
            map.data
                .get_or_insert_default()
                .insert(WRITER_KEY.into(), round.to_string());
        },
        get: |map| {
            map.data
                .as_ref()
                .and_then(|d| d.get(WRITER_KEY))
                .map(|v| format!("key {v}"))
                .into_iter()
                .collect()
        },
    }
}

/// Writes the API server refused as conflicts (409) since it started, by
/// resource and verb, from its metrics.
async fn conflicts() -> BTreeMap<(String, String), u64> {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let metrics = kube_client().await.request_text(request).await.unwrap();
    let mut counts = BTreeMap::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        if !rest.contains("code=\"409\"") || !rest.contains("subresource=\"\"") {
            continue;
        }
        let label = |name: &str| {
            rest.split(&format!("{name}=\""))
                .nth(1)
                .and_then(|v| v.split('"').next())
                .unwrap_or_default()
                .to_string()
        };
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        *counts
            .entry((label("resource"), label("verb")))
            .or_default() += value as u64;
    }
    counts
}

/// The objects a run makes outside Terraform, removed however it ends.
struct Fixture {
    namespace: String,
    nodes: Vec<String>,
}

impl Fixture {
    fn new(pool: &str) -> Self {
        let namespace = unique_name("conflicts");
        let nodes = (0..2).map(|_| unique_name("conflict-node")).collect();
        let fixture = Self { namespace, nodes };
        block_on(async {
            let client = kube_client().await;
            let ns: Namespace =
                serde_json::from_value(json!({"metadata": {"name": fixture.namespace}})).unwrap();
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &ns)
                .await
                .unwrap();
            // The provider may run bound only to docs/rbac.yaml's roles.
            common::bind_operator_role(&fixture.namespace).await;
            for name in &fixture.nodes {
                let node: Node = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": {"example.com/pool": pool}},
                }))
                .unwrap();
                Api::<Node>::all(client.clone())
                    .create(&PostParams::default(), &node)
                    .await
                    .unwrap();
            }
            // The writer's key is there first; gpufleet's join it.
            let map: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": CONFIG_MAP},
                "data": {WRITER_KEY: "start"},
            }))
            .unwrap();
            Api::<ConfigMap>::namespaced(client, &fixture.namespace)
                .create(&PostParams::default(), &map)
                .await
                .unwrap();
        });
        fixture
    }

    fn config_map(&self) -> ConfigMap {
        block_on(async {
            Api::<ConfigMap>::namespaced(kube_client().await, &self.namespace)
                .get(CONFIG_MAP)
                .await
                .unwrap()
        })
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        block_on(async {
            let client = kube_client().await;
            for name in &self.nodes {
                let _ = Api::<Node>::all(client.clone())
                    .delete(name, &DeleteParams::default())
                    .await;
            }
            let _ = Api::<Namespace>::all(client)
                .delete(&self.namespace, &DeleteParams::default())
                .await;
        });
    }
}

/// The configuration of apply `n`: our taint and NodePool fields carry
/// `n`, the sharing resources `2 + n` replicas.
fn configuration(pool: &str, fleet_name: &str, sharing: &str, n: u32) -> String {
    let replicas = 2 + n;
    let selector = format!("{{ \"example.com/pool\" = \"{pool}\" }}");
    format!(
        "resource \"gpufleet_node_taint\" \"t\" {{\n  node_selector = {selector}\n  taints = [{{ key = \"{OURS}\", value = \"{n}\", effect = \"NoSchedule\" }}]\n}}\n\
         resource \"gpufleet_node_sharing\" \"s\" {{\n  name = \"{sharing}\"\n  node_selector = {selector}\n  strategy = \"time_slicing\"\n  replicas = {replicas}\n}}\n\
         resource \"gpufleet_gpu_sharing\" \"default\" {{\n  strategy = \"time_slicing\"\n  replicas = {replicas}\n  manage_cluster_policy = false\n}}\n"
    ) + &fleet(
        "f",
        fleet_name,
        &format!(
            "  accelerators = [\"L4\"]\n  labels = {{ \"{OURS}\" = \"{n}\" }}\n  node_pool_annotations = {{ \"{OURS}\" = \"{n}\" }}\n  gpu_sharing = {{ strategy = \"time_slicing\", replicas = {replicas} }}\n"
        ),
    )
}

fn replicas_in(config: &str) -> Option<u64> {
    let parsed: serde_json::Value = serde_saphyr::from_str(config).ok()?;
    parsed["sharing"]["timeSlicing"]["resources"][0]["replicas"].as_u64()
}

/// Terraform's fields after apply `n`: exactly as configured.
fn assert_ours(fixture: &Fixture, fleet_name: &str, sharing: &str, n: u32) {
    for name in &fixture.nodes {
        let node =
            block_on(async { Api::<Node>::all(kube_client().await).get(name).await }).unwrap();
        let ours: Vec<String> = node
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t.key == OURS)
            .map(|t| t.value.unwrap_or_default())
            .collect();
        assert_eq!(ours, [n.to_string()], "our taint on {name}");
        let label = node
            .metadata
            .labels
            .unwrap_or_default()
            .remove(CONFIG_LABEL);
        assert_eq!(
            label,
            Some(format!("node-{sharing}")),
            "our label on {name}"
        );
    }
    let pool = block_on(async { node_pool_api().await.get(fleet_name).await.unwrap() });
    assert_eq!(
        pool.metadata.annotations.unwrap_or_default().get(OURS),
        Some(&n.to_string()),
        "our NodePool annotation"
    );
    assert_eq!(
        pool.data["spec"]["template"]["metadata"]["labels"][OURS],
        json!(n.to_string()),
        "our NodePool template label"
    );
    let data = fixture.config_map().data.unwrap_or_default();
    for key in [
        "default".to_string(),
        format!("fleet-{fleet_name}"),
        format!("node-{sharing}"),
    ] {
        assert_eq!(
            data.get(&key).and_then(|c| replicas_in(c)),
            Some(u64::from(2 + n)),
            "our key {key}: {data:?}"
        );
    }
}

/// Stops the writers however the test ends, so none outlives it.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn foreign_writers_and_terraform_both_keep_their_fields() {
    // What destroy leaves in the ConfigMap depends on what reads it.
    let _no_policy = common::exclusive::no_cluster_policy();
    each_cli(|cli| {
        let pool = unique_name("conflict-pool");
        let fleet_name = unique_name("conflict-fleet");
        let sharing = unique_name("conflict");
        let fixture = Fixture::new(&pool);
        let before = block_on(conflicts());
        let stop = Arc::new(AtomicBool::new(false));
        let _stop_on_drop = StopOnDrop(stop.clone());
        let writers = [
            start_writer(
                Api::<Node>::all,
                fixture.nodes.clone(),
                node_marks(),
                Duration::from_millis(5),
                stop.clone(),
            ),
            start_writer(
                |client| Api::all_with(client, &node_pools("karpenter.sh")),
                vec![fleet_name.clone()],
                node_pool_marks(),
                Duration::from_millis(5),
                stop.clone(),
            ),
            start_writer(
                {
                    let namespace = fixture.namespace.clone();
                    move |client| Api::namespaced(client, &namespace)
                },
                vec![CONFIG_MAP.to_string()],
                config_map_marks(),
                Duration::from_millis(5),
                stop.clone(),
            ),
        ];

        let started = Instant::now();
        let mut ws = Workspace::new(cli);
        let provider = format!("  gpu_operator_namespace = \"{}\"\n", fixture.namespace);
        let refused_since = |resource: &str, verb: &str| {
            let now = block_on(conflicts());
            let key = (resource.to_string(), verb.to_string());
            now.get(&key).copied().unwrap_or(0) - before.get(&key).copied().unwrap_or(0)
        };
        let mut applies = 0;
        while applies < APPLIES || (applies < MAX_APPLIES && refused_since("nodes", "PATCH") == 0) {
            let n = applies;
            ws.config_with_provider(&provider, &configuration(&pool, &fleet_name, &sharing, n));
            ws.apply();
            assert_ours(&fixture, &fleet_name, &sharing, n);
            applies += 1;
        }
        let applies_time = started.elapsed();
        stop.store(true, Ordering::Relaxed);
        let reports: Vec<Report> = writers
            .into_iter()
            .map(|w| w.join().expect("a writer panicked"))
            .collect();
        let refused_nodes = refused_since("nodes", "PATCH");
        let refused_config_maps = refused_since("configmaps", "PATCH");
        let refused_node_pools = refused_since("nodepools", "PATCH");
        ws.destroy();
        // Destroy took only ours: the writers' last rounds are still there,
        // and (no ClusterPolicy: a standalone device plugin may read the
        // map) a `default` that shares nothing in place of ours.
        let map = fixture.config_map();
        let data = map.data.clone().unwrap_or_default();
        assert!(
            data.iter().all(|(k, v)| k == WRITER_KEY
                || (k == "default" && v == "version: v1\nflags:\n  migStrategy: none\n")),
            "destroy left keys: {data:?}"
        );
        assert_eq!((config_map_marks().get)(&map).len(), 1);
        for name in &fixture.nodes {
            let node =
                block_on(async { Api::<Node>::all(kube_client().await).get(name).await }).unwrap();
            assert_eq!(
                (node_marks().get)(&node).len(),
                2,
                "the writer's fields on {name}"
            );
        }

        let kinds = ["Node", "NodePool", "ConfigMap"];
        let figures: serde_json::Map<String, serde_json::Value> = kinds
            .iter()
            .zip(&reports)
            .map(|(kind, r)| {
                (
                    kind.to_string(),
                    json!({
                        "writer_rounds": r.rounds,
                        "writer_rounds_found_intact": r.intact,
                        "writer_conflicts_retried": r.conflicts,
                        "lost": r.lost.len(),
                    }),
                )
            })
            .collect();
        eprintln!(
            "conflict figures: {}",
            json!({
                "cli": cli.name,
                "applies": applies,
                "applies_seconds": (applies_time.as_secs_f64() * 10.0).round() / 10.0,
                "writers": figures,
                "provider_conflicts_retried": {
                    "nodes_patch": refused_nodes,
                    "configmaps_patch": refused_config_maps,
                    "nodepools_patch": refused_node_pools,
                },
            })
        );
        for (kind, report) in kinds.iter().zip(&reports) {
            assert!(
                report.lost.is_empty(),
                "{}: the {kind} writer's fields were lost:\n  {}",
                cli.name,
                report.lost.join("\n  ")
            );
            assert_eq!(
                report.intact, report.rounds,
                "{}: every {kind} round is found intact",
                cli.name
            );
            assert!(
                report.rounds >= 10,
                "{}: the {kind} writer hardly ran",
                cli.name
            );
        }
        // The writers raced the provider on nodes: some of its
        // resourceVersion-guarded writes met a conflict, and were retried.
        assert!(
            refused_nodes > 0,
            "{}: no provider write on a node met a conflict in {applies} applies; the race was never run",
            cli.name
        );
    });
}

/// Nodes of a test's own, deleted however it ends.
struct Nodes(Vec<String>);

impl Nodes {
    /// `count` nodes labelled `example.com/pool=pool`.
    fn new(pool: &str, count: usize) -> Self {
        let names: Vec<String> = (0..count).map(|i| format!("{pool}-{i}")).collect();
        block_on(async {
            let api = Api::<Node>::all(kube_client().await);
            for name in &names {
                let node: Node = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": {"example.com/pool": pool}},
                }))
                .unwrap();
                api.create(&PostParams::default(), &node).await.unwrap();
            }
        });
        Self(names)
    }
}

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

/// The values of our taint on each node of `pool`.
fn our_taint_values(pool: &str) -> BTreeMap<String, Vec<String>> {
    let nodes = block_on(async {
        let selector = kube::api::ListParams::default().labels(&format!("example.com/pool={pool}"));
        Api::<Node>::all(kube_client().await)
            .list(&selector)
            .await
            .unwrap()
    });
    nodes
        .items
        .into_iter()
        .map(|node| {
            let values = node
                .spec
                .and_then(|s| s.taints)
                .unwrap_or_default()
                .into_iter()
                .filter(|t| t.key == OURS)
                .map(|t| t.value.unwrap_or_default())
                .collect();
            (node.metadata.name.unwrap_or_default(), values)
        })
        .collect()
}

/// One `gpufleet_node_taint` over [`RACED_NODES`] nodes, written several at
/// a time from one LIST, while a careful writer rewrites a taint and a
/// label of its own on every one of them: after each apply our taint is on
/// every node with the configured value and the plan is empty, every round
/// of the writer is found intact (no foreign taint dropped), and destroy
/// takes only ours away.
#[test]
fn one_taint_over_many_nodes_races_a_writer_on_each() {
    each_cli(|cli| {
        let pool = unique_name("raced");
        let nodes = Nodes::new(&pool, RACED_NODES);
        let before = block_on(conflicts());
        let stop = Arc::new(AtomicBool::new(false));
        let _stop_on_drop = StopOnDrop(stop.clone());
        // A round per node every quarter second: a few hundred writes a
        // second in all, enough to meet the provider's between its LIST and
        // its writes, on a machine other tests share.
        let writer = start_writer(
            Api::<Node>::all,
            nodes.0.clone(),
            node_marks(),
            Duration::from_millis(250),
            stop.clone(),
        );
        let refused_since = || {
            let key = ("nodes".to_string(), "PATCH".to_string());
            block_on(conflicts()).get(&key).copied().unwrap_or(0)
                - before.get(&key).copied().unwrap_or(0)
        };
        let mut ws = Workspace::new(cli);
        let mut applies = 0;
        while applies < APPLIES || (applies < MAX_APPLIES && refused_since() == 0) {
            ws.config(&format!(
                "resource \"gpufleet_node_taint\" \"t\" {{\n  node_selector = {{ \"example.com/pool\" = \"{pool}\" }}\n  taints = [{{ key = \"{OURS}\", value = \"{applies}\", effect = \"NoSchedule\" }}]\n}}\n"
            ));
            ws.apply();
            let expected: BTreeMap<String, Vec<String>> = nodes
                .0
                .iter()
                .map(|name| (name.clone(), vec![applies.to_string()]))
                .collect();
            assert_eq!(
                our_taint_values(&pool),
                expected,
                "{}: after apply {applies}",
                cli.name
            );
            assert_eq!(
                ws.resource_values("gpufleet_node_taint.t")["nodes"]
                    .as_array()
                    .map_or(0, Vec::len),
                RACED_NODES,
                "{}: the nodes in state",
                cli.name
            );
            applies += 1;
        }
        ws.assert_plan_empty();
        stop.store(true, Ordering::Relaxed);
        let report = writer.join().expect("the writer panicked");
        let refused = refused_since();
        ws.destroy();
        assert!(
            our_taint_values(&pool).values().all(Vec::is_empty),
            "{}: destroy left our taint",
            cli.name
        );
        for name in &nodes.0 {
            let node =
                block_on(async { Api::<Node>::all(kube_client().await).get(name).await }).unwrap();
            assert_eq!(
                (node_marks().get)(&node).len(),
                2,
                "{}: the writer's fields on {name} after destroy",
                cli.name
            );
        }
        eprintln!(
            "conflict figures: {}",
            json!({
                "cli": cli.name,
                "test": "one taint over many nodes",
                "nodes": RACED_NODES,
                "applies": applies,
                "writer_rounds": report.rounds,
                "writer_rounds_found_intact": report.intact,
                "writer_conflicts_retried": report.conflicts,
                "lost": report.lost.len(),
                "provider_conflicts_retried": refused,
            })
        );
        assert!(
            report.lost.is_empty(),
            "{}: the writer's fields were lost:\n  {}",
            cli.name,
            report.lost.join("\n  ")
        );
        assert_eq!(report.intact, report.rounds, "{}", cli.name);
        assert!(
            refused > 0,
            "{}: no provider write on a node met a conflict in {applies} applies; the race was never run",
            cli.name
        );
    });
}
