//! How many requests each command costs the API server, as the API server
//! itself records them (its audit log, read before and after each
//! terraform/tofu command). The budget per resource:
//!
//! | command | priority class, fleet | node taint on a named node | node taint over N nodes (a selector) |
//! |---|---|---|---|
//! | refresh (`plan`) | 1 GET | 1 GET | 1 LIST |
//! | create | 1 GET (refuses to adopt an existing object) + 1 APPLY | 1 GET + 1 PATCH | 1 LIST + N PATCH |
//! | update | refresh + 1 APPLY | refresh + 1 GET + 1 PATCH | refresh + 1 LIST + N PATCH |
//! | delete | refresh + 1 DELETE | refresh + 1 GET + 1 PATCH | refresh + 1 LIST + N PATCH |
//!
//! A namespace fence (`allowed_namespaces`, on the fleet and each class
//! here) adds its ValidatingAdmissionPolicy and binding: 1 GET each per
//! refresh, 1 APPLY each per create and update, 1 DELETE each per delete.
//! Whether the API server serves them comes from the one discovery request
//! below, so the fence asks nothing more.
//!
//! A fleet without `gpu_sharing` also reads the device-plugin ConfigMap's
//! `default` key each time it is planned (1 GET per plan, 2 per apply), to
//! warn when the cluster-wide default shares GPUs; also once on destroy,
//! whose refresh plans the configuration.
//!
//! The sharing resources (each writes one key of the device-plugin
//! ConfigMap; `manage_cluster_policy = false` here, the ClusterPolicy
//! being the acceptance tests' to share, and none while this runs, so a
//! standalone device plugin may read the ConfigMap). The fleet and the node
//! sharing depend on the cluster-wide key, so they find it written:
//!
//! | command | gpu sharing | fleet with `gpu_sharing` (beside its NodePool) | node sharing |
//! |---|---|---|---|
//! | refresh | 1 GET key | 1 GET key, 1 GET per NodeOverlay | 1 GET key, 1 GET node |
//! | create | 1 GET + 1 APPLY key, 3 GET DaemonSet | the same, 1 LIST ClusterPolicy + 1 GET `default`, 1 APPLY per NodeOverlay | the same as the fleet, 1 GET + 1 APPLY node |
//! | update | refresh + create's writes | refresh + create's writes | refresh + create's writes |
//! | delete | refresh + hand-over, 3 GET DaemonSet | refresh + release, 1 DELETE per NodeOverlay | refresh + release, 1 GET + 1 APPLY node |
//!
//! Each write and release first lists the ClusterPolicies: while a device
//! plugin may read the ConfigMap, it keeps a `default` key. A fleet's or
//! node's write then reads the map to see that `default` is there (a
//! placeholder that shares nothing would be applied where it is not). Its
//! release is a GET and a PATCH with the map's resourceVersion (again after
//! each conflict), and a GET to see that `default` is still there. The
//! cluster-wide key's release hands `default` over to the placeholder: a
//! GET and an APPLY with the resourceVersion, and a GET to see that its
//! own manager no longer holds the key. The map stays. The three
//! DaemonSet GETs are the restart of the device plugin where the key is
//! read.
//!
//! A fleet offered to Kueue (`kueue_flavor`) and a `gpufleet_queue` on it
//! serving one namespace:
//!
//! | command | fleet's flavor | queue |
//! |---|---|---|
//! | refresh | 1 GET flavor with the NodePool | 1 GET ClusterQueue, 1 GET per LocalQueue; its plan: 1 GET flavor + 1 GET NodePool per quota, 1 LIST ClusterQueues |
//! | create | 1 APPLY flavor | plan twice, 1 GET + 1 APPLY ClusterQueue, 1 APPLY per LocalQueue |
//! | update | refresh | refresh, plan again, 1 APPLY ClusterQueue, 1 APPLY per LocalQueue |
//! | delete | refresh + 1 LIST ClusterQueues (none may list it), 1 DELETE flavor, 1 GET per 500 ms until Kueue lets it go | refresh + 1 LIST Workloads, 1 DELETE per LocalQueue, 1 DELETE ClusterQueue, 1 GET per 500 ms until Kueue lets it go |
//!
//! A node's taints are a list the kubelet and others write too, so the taint
//! resource reads the node and writes it back with its resourceVersion as a
//! precondition, where the others apply server-side; a selector's nodes are
//! read by one LIST, whose resourceVersions their writes carry (a node is
//! read again only after a conflict, which this run does not meet). Every resource knows
//! its API group, version and kind; the one discovery request is the check
//! of what a fleet needs (Karpenter's CRDs, its node class's): a plan that
//! creates or changes a fleet makes it once per provider process (so twice
//! per apply: the plan's and the apply's) and GETs the node class; the
//! three sharing resources also GET the device-plugin ConfigMap then when
//! there is no ClusterPolicy (is there one for a standalone device plugin?). A plan that changes nothing (a refresh, and
//! destroy's) checks none of it.
//!
//! The provider runs as a user of its own, gpufleet-counted (the roles of
//! docs/rbac.yaml, like every other test's provider), whose requests alone
//! the test cluster's audit log records (`common::audit`): what Karpenter,
//! the controller-manager or other tests send at the same time is not
//! counted, so every request to every resource is in the budget, with no
//! exception.

use std::collections::BTreeMap;

use common::audit::{Counts, counted, counted_kubeconfig};
use common::fixtures::{
    Guard, OperatorNamespace, TestNamespace, class, fleet, queue as queue_of, quota,
};
use common::terraform::{Cli, Workspace, each_cli, provider_block_for};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

const CLASSES: u64 = 2;
/// The namespace fence each class and the fleet have: a
/// ValidatingAdmissionPolicy and its binding apiece.
const FENCE: &str = "  allowed_namespaces = [\"budget\"]\n";
const FENCES: u64 = CLASSES + 1;
/// The nodes the selector of the second node taint matches.
const SELECTED: u64 = 3;

fn verbs(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(v, n)| (v.to_string(), *n)).collect()
}

fn assert_budget(what: &str, counts: &Counts, expected: &[(&str, &[(&str, u64)])]) {
    for (resource, budget) in expected {
        assert_eq!(
            counts.by_verb(resource),
            verbs(budget),
            "{what}: requests to {resource} (all counted: {counts:?})"
        );
    }
    let budgeted: Vec<&str> = expected.iter().map(|(resource, _)| *resource).collect();
    let beyond: Vec<&(String, String)> = counts
        .requests
        .keys()
        .filter(|(_, resource)| !budgeted.contains(&resource.as_str()))
        .collect();
    assert!(
        beyond.is_empty(),
        "{what}: requests beyond the budget: {beyond:?} (all counted: {counts:?})"
    );
}

fn config(classes: &[String], pool: &str, node: &str, selected: &str, revision: &str) -> String {
    let mut body = provider_block_for(&counted_kubeconfig(), "");
    body += &classes
        .iter()
        .enumerate()
        .map(|(i, name)| {
            class(
                &format!("c{i}"),
                name,
                1000 + i as i64,
                &format!("  description = \"{revision}\"\n{FENCE}"),
            )
        })
        .collect::<String>();
    let weight = if revision == "first" { 10 } else { 20 };
    body += &fleet(
        "f",
        pool,
        &format!("  accelerators = [\"L4\"]\n  weight = {weight}\n{FENCE}"),
    );
    body += &format!(
        "resource \"gpufleet_node_taint\" \"t\" {{\n  node_name = \"{node}\"\n  taints    = [{{ key = \"budget\", value = \"{revision}\", effect = \"NoSchedule\" }}]\n}}\n"
    );
    body += &format!(
        "resource \"gpufleet_node_taint\" \"selected\" {{\n  node_selector = {{ \"example.com/budget\" = \"{selected}\" }}\n  taints        = [{{ key = \"budget\", value = \"{revision}\", effect = \"NoSchedule\" }}]\n}}\n"
    );
    body
}

/// A node of the run's own for the node-scoped resources, deleted when
/// the guard drops.
fn scratch_node(prefix: &str) -> (String, Guard) {
    let (mut nodes, guard) = scratch_nodes(prefix, 1, None);
    (nodes.remove(0), guard)
}

/// `count` nodes of the run's own, labelled `label` if given, deleted when
/// the guard drops.
fn scratch_nodes(prefix: &str, count: u64, label: Option<(&str, &str)>) -> (Vec<String>, Guard) {
    let nodes: Vec<String> = (0..count).map(|_| unique_name(prefix)).collect();
    block_on(async {
        let api = Api::<Node>::all(kube_client().await);
        for node in &nodes {
            let object = Node {
                metadata: ObjectMeta {
                    name: Some(node.clone()),
                    labels: label.map(|(k, v)| [(k.to_string(), v.to_string())].into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            api.create(&PostParams::default(), &object).await.unwrap();
        }
    });
    let names: Vec<&str> = nodes.iter().map(String::as_str).collect();
    let guard = Guard::of::<Node>(&names);
    (nodes, guard)
}

/// Both budgets, one after the other: the counted user's requests are
/// counted whoever sends them, so one test at a time sends them.
#[test]
fn each_command_stays_within_its_request_budget() {
    // The sharing budget is that of a cluster without a ClusterPolicy.
    let _no_policy = common::exclusive::no_cluster_policy();
    each_cli(|cli| {
        plain_resources(cli);
        sharing_resources(cli);
        queue_resources(cli);
    });
}

fn queue_config(pool: &str, queue: &str, namespace: &str, gpus: u32) -> String {
    let mut body = provider_block_for(&counted_kubeconfig(), "");
    body += &fleet(
        "f",
        pool,
        "  accelerators = [\"L4\"]\n  limits = { gpus = 64 }\n  kueue_flavor = true\n",
    );
    body += &queue_of("q", queue, namespace, &[quota("f", gpus, "")], "");
    body
}

/// A fleet offered to Kueue and a queue on it serving one namespace.
fn queue_resources(cli: &Cli) {
    let pool = unique_name("budget-kueue");
    let queue = unique_name("budget-queue");
    let namespace = TestNamespace::new("budget-ns");
    let namespace = &namespace.0;
    let mut ws = Workspace::new(cli);
    ws.config_raw(&queue_config(&pool, &queue, namespace, 8))
        .init();
    let what = |command: &str| format!("{} {command}", cli.name);
    // Each plan of the queue reads its fleet's flavor and NodePool and
    // lists the ClusterQueues (the sum of quotas on the fleet); an apply
    // plans twice. The fleet reads its flavor with its NodePool; created,
    // it is checked for what it needs (one discovery and its node class per
    // plan), unchanged on the update below.
    let create = ws.apply_measured(|apply| counted(apply));
    assert_budget(
        &what("apply (create)"),
        &create,
        &[
            ("apis", &[("GET", 2)]),
            ("kwoknodeclasses", &[("GET", 2)]),
            ("configmaps", &[("GET", 2)]),
            ("nodepools", &[("GET", 3), ("APPLY", 1)]),
            ("resourceflavors", &[("GET", 2), ("APPLY", 1)]),
            ("clusterqueues", &[("GET", 1), ("LIST", 2), ("APPLY", 1)]),
            ("localqueues", &[("APPLY", 1)]),
        ],
    );
    let refresh = counted(|| ws.assert_plan_empty());
    assert_budget(
        &what("plan (refresh)"),
        &refresh,
        &[
            ("configmaps", &[("GET", 1)]),
            ("nodepools", &[("GET", 2)]),
            ("resourceflavors", &[("GET", 2)]),
            ("clusterqueues", &[("GET", 1), ("LIST", 1)]),
            ("localqueues", &[("GET", 1)]),
        ],
    );
    ws.config_raw(&queue_config(&pool, &queue, namespace, 16));
    let update = ws.apply_measured(|apply| counted(apply));
    assert_budget(
        &what("apply (update)"),
        &update,
        &[
            ("configmaps", &[("GET", 1)]),
            ("nodepools", &[("GET", 3)]),
            ("resourceflavors", &[("GET", 3)]),
            ("clusterqueues", &[("GET", 1), ("LIST", 2), ("APPLY", 1)]),
            ("localqueues", &[("GET", 1), ("APPLY", 1)]),
        ],
    );
    // Destroy lists the workloads admitted to the queue (to name them),
    // and the ClusterQueues before the fleet (none may list its flavor),
    // then waits for Kueue to let the ClusterQueue and the flavor go: one
    // GET each, and one more every 500 ms while Kueue still holds them.
    let mut destroy = counted(|| ws.destroy());
    let mut waited = |resource: &str, before: u64| {
        let gets = destroy
            .requests
            .remove(&("GET".to_string(), resource.to_string()))
            .unwrap_or_default();
        assert!(
            (before + 1..=before + 20).contains(&gets),
            "{}: {gets} GETs of {resource} (all counted: {destroy:?})",
            what("destroy")
        );
    };
    waited("clusterqueues", 1);
    waited("resourceflavors", 2);
    assert_budget(
        &what("destroy"),
        &destroy,
        &[
            ("configmaps", &[("GET", 1)]),
            ("nodepools", &[("GET", 2), ("DELETE", 1)]),
            ("resourceflavors", &[("DELETE", 1)]),
            ("clusterqueues", &[("LIST", 2), ("DELETE", 1)]),
            ("localqueues", &[("GET", 1), ("DELETE", 1)]),
            ("workloads", &[("LIST", 1)]),
        ],
    );
}

fn plain_resources(cli: &Cli) {
    let (node, _node) = scratch_node("budget-node");
    let selected = unique_name("budget-selected");
    let (_, _selected) = scratch_nodes(
        "budget-selected",
        SELECTED,
        Some(("example.com/budget", &selected)),
    );

    let classes: Vec<String> = (0..CLASSES).map(|_| unique_name("budget-pc")).collect();
    let pool = unique_name("budget-fleet");
    let mut ws = Workspace::new(cli);
    ws.config_raw(&config(&classes, &pool, &node, &selected, "first"))
        .init();
    let what = |command: &str| format!("{} {command}", cli.name);

    // The fleet sets no `gpu_sharing`: each plan of it reads the
    // cluster-wide default key, to warn when that shares GPUs; an apply
    // plans it twice (the plan, then again just before applying).
    // A plan that creates or changes the fleet also checks its
    // prerequisites: one discovery request per provider process (the
    // plan's, the apply's) and a GET of its node class per plan.
    let create = ws.apply_measured(|apply| counted(apply));
    assert_budget(
        &what("apply (create)"),
        &create,
        &[
            ("priorityclasses", &[("GET", CLASSES), ("APPLY", CLASSES)]),
            ("configmaps", &[("GET", 2)]),
            ("nodepools", &[("GET", 1), ("APPLY", 1)]),
            ("nodes", &[("GET", 1), ("LIST", 1), ("PATCH", 1 + SELECTED)]),
            ("apis", &[("GET", 2)]),
            ("kwoknodeclasses", &[("GET", 2)]),
            ("validatingadmissionpolicies", &[("APPLY", FENCES)]),
            ("validatingadmissionpolicybindings", &[("APPLY", FENCES)]),
        ],
    );

    let refresh = counted(|| ws.assert_plan_empty());
    assert_budget(
        &what("plan (refresh)"),
        &refresh,
        &[
            ("priorityclasses", &[("GET", CLASSES)]),
            ("configmaps", &[("GET", 1)]),
            ("nodepools", &[("GET", 1)]),
            ("nodes", &[("GET", 1), ("LIST", 1)]),
            ("validatingadmissionpolicies", &[("GET", FENCES)]),
            ("validatingadmissionpolicybindings", &[("GET", FENCES)]),
        ],
    );
    assert_eq!(refresh.discovery(), 0, "{}: discovery requests", cli.name);

    ws.config_raw(&config(&classes, &pool, &node, &selected, "second"));
    let update = ws.apply_measured(|apply| counted(apply));
    assert_budget(
        &what("apply (update)"),
        &update,
        &[
            ("priorityclasses", &[("GET", CLASSES), ("APPLY", CLASSES)]),
            ("configmaps", &[("GET", 2)]),
            ("nodepools", &[("GET", 1), ("APPLY", 1)]),
            ("nodes", &[("GET", 2), ("LIST", 2), ("PATCH", 1 + SELECTED)]),
            ("apis", &[("GET", 2)]),
            ("kwoknodeclasses", &[("GET", 2)]),
            (
                "validatingadmissionpolicies",
                &[("GET", FENCES), ("APPLY", FENCES)],
            ),
            (
                "validatingadmissionpolicybindings",
                &[("GET", FENCES), ("APPLY", FENCES)],
            ),
        ],
    );

    let destroy = counted(|| ws.destroy());
    assert_budget(
        &what("destroy"),
        &destroy,
        &[
            ("priorityclasses", &[("GET", CLASSES), ("DELETE", CLASSES)]),
            ("configmaps", &[("GET", 1)]),
            ("nodepools", &[("GET", 1), ("DELETE", 1)]),
            ("nodes", &[("GET", 2), ("LIST", 2), ("PATCH", 1 + SELECTED)]),
            (
                "validatingadmissionpolicies",
                &[("GET", FENCES), ("DELETE", FENCES)],
            ),
            (
                "validatingadmissionpolicybindings",
                &[("GET", FENCES), ("DELETE", FENCES)],
            ),
        ],
    );
}

/// The sharing resources: the cluster-wide key, a fleet's key beside its
/// NodePool and its one NodeOverlay (one per GPU count the fleet allows),
/// and a node sharing's key and node label, all in one device-plugin
/// ConfigMap of the run's own namespace.
fn sharing_config(namespace: &OperatorNamespace, pool: &str, node: &str, replicas: u32) -> String {
    let mut body = provider_block_for(&counted_kubeconfig(), &namespace.provider());
    body += &format!(
        "resource \"gpufleet_gpu_sharing\" \"default\" {{\n  strategy              = \"time_slicing\"\n  replicas              = {replicas}\n  manage_cluster_policy = false\n}}\n"
    );
    body += &fleet(
        "f",
        pool,
        &format!(
            "  accelerators      = [\"L4\"]\n  accelerator_count = {{ min = 1, max = 1 }}\n  gpu_sharing       = {{ strategy = \"time_slicing\", replicas = {replicas} }}\n  depends_on        = [gpufleet_gpu_sharing.default]\n"
        ),
    );
    body += &format!(
        "resource \"gpufleet_node_sharing\" \"n\" {{\n  name       = \"budget\"\n  node_name  = \"{node}\"\n  strategy   = \"time_slicing\"\n  replicas   = {replicas}\n  depends_on = [gpufleet_gpu_sharing.default]\n}}\n"
    );
    body
}

/// Releasing a key is a read-modify-write of the one ConfigMap with its
/// resourceVersion as a precondition; resources releasing at once
/// conflict, and each conflict costs one more GET and PATCH. Two writers
/// (the fleet and the node sharing; the cluster-wide key goes after them)
/// conflict at most once a round, and each round one of them wins.
const MOST_RELEASE_CONFLICTS: u64 = 2;

fn sharing_resources(cli: &Cli) {
    let namespace = OperatorNamespace::new("budget-sharing");
    let (node, _node) = scratch_node("budget-shared-node");
    let pool = unique_name("budget-shared-fleet");
    let mut ws = Workspace::new(cli);
    ws.config_raw(&sharing_config(&namespace, &pool, &node, 2))
        .init();
    let what = |command: &str| format!("{} {command}", cli.name);
    // Each of the three writes its key after reading what it held, and
    // restarts the device plugin where its key is read: it reads the
    // GPU Operator's three DaemonSets (none in this namespace). The
    // ClusterPolicies are listed by each of the three at plan (an apply
    // plans twice), and once by the fleet and by the node sharing when
    // they write: for the checks before anything is written (whether
    // their sharing is read, and under which MIG strategy) and for their
    // key's write (whether a device plugin reads the map) alike.
    //
    // A plan that creates or changes one of the three checks that
    // something reads its key: with no ClusterPolicy, whether the map is
    // there for a standalone device plugin (1 GET each per plan; the
    // cluster-wide key lists the ClusterPolicies for it, 1 LIST per plan,
    // the others have listed them already). The fleet's other
    // prerequisites are a plain fleet's.
    let create = ws.apply_measured(|apply| counted(apply));
    assert_budget(
        &what("apply (create)"),
        &create,
        &[
            ("configmaps", &[("GET", 3 + 2 + 3 * 2), ("APPLY", 3)]),
            ("clusterpolicies", &[("LIST", 3 * 2 + 2)]),
            ("daemonsets", &[("GET", 9)]),
            ("nodepools", &[("GET", 1), ("APPLY", 1)]),
            ("nodeoverlays", &[("APPLY", 1)]),
            ("nodes", &[("GET", 1), ("APPLY", 1)]),
            ("apis", &[("GET", 2)]),
            ("kwoknodeclasses", &[("GET", 2)]),
        ],
    );
    let refresh = counted(|| ws.assert_plan_empty());
    assert_budget(
        &what("plan (refresh)"),
        &refresh,
        &[
            ("configmaps", &[("GET", 3)]),
            ("clusterpolicies", &[("LIST", 2)]),
            ("nodepools", &[("GET", 1)]),
            ("nodeoverlays", &[("GET", 1)]),
            ("nodes", &[("GET", 1)]),
        ],
    );

    ws.config_raw(&sharing_config(&namespace, &pool, &node, 4));
    let update = ws.apply_measured(|apply| counted(apply));
    assert_budget(
        &what("apply (update)"),
        &update,
        &[
            ("configmaps", &[("GET", 3 + 3 + 2 + 3 * 2), ("APPLY", 3)]),
            ("clusterpolicies", &[("LIST", 3 * 2 + 2)]),
            ("daemonsets", &[("GET", 9)]),
            ("nodepools", &[("GET", 1), ("APPLY", 1)]),
            ("nodeoverlays", &[("GET", 1), ("APPLY", 1)]),
            ("nodes", &[("GET", 1 + 1), ("APPLY", 1)]),
            ("apis", &[("GET", 2)]),
            ("kwoknodeclasses", &[("GET", 2)]),
        ],
    );

    // The fleet's and the node's releases read and patch the map, then
    // read it again to see that `default` is there; the cluster-wide key
    // is handed over to the placeholder, and the map stays. Only the
    // cluster-wide key restarts the device plugin (nodes of a fleet go
    // with it; a node whose label goes switches back by itself).
    let destroy = counted(|| ws.destroy());
    let conflicts = destroy.conflicts.get("configmaps").copied().unwrap_or(0);
    assert!(
        conflicts <= MOST_RELEASE_CONFLICTS,
        "{}: {conflicts} conflicts releasing three keys",
        cli.name
    );
    assert_eq!(
        destroy.conflicts.keys().collect::<Vec<_>>(),
        if conflicts > 0 {
            vec!["configmaps"]
        } else {
            vec![]
        },
        "{}: conflicts beyond the ConfigMap's",
        cli.name
    );
    assert_budget(
        &what("destroy"),
        &destroy,
        &[
            (
                "configmaps",
                &[
                    ("GET", 3 + 2 * 2 + 2 + conflicts),
                    ("PATCH", 2 + conflicts),
                    ("APPLY", 1),
                ],
            ),
            // The key releases', and the refresh's plan of the fleet and
            // the node sharing that destroy makes first.
            ("clusterpolicies", &[("LIST", 3 + 2)]),
            ("daemonsets", &[("GET", 3)]),
            ("nodepools", &[("GET", 1), ("DELETE", 1)]),
            ("nodeoverlays", &[("GET", 1), ("DELETE", 1)]),
            ("nodes", &[("GET", 1 + 1), ("APPLY", 1)]),
        ],
    );
}
