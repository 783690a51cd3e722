//! How many requests each command costs the API server, counted by the API
//! server itself (`apiserver_request_total` on /metrics, read before and
//! after each terraform/tofu command). The budget per resource:
//!
//! | command | priority class, fleet | node taint |
//! |---|---|---|
//! | refresh (`plan`) | 1 GET | 1 GET |
//! | create | 1 GET (refuses to adopt an existing object) + 1 APPLY | 1 GET + 1 PATCH |
//! | update | refresh + 1 APPLY | refresh + 1 GET + 1 PATCH |
//! | delete | refresh + 1 DELETE | refresh + 1 GET + 1 PATCH |
//!
//! A node's taints are a list the kubelet and others write too, so the taint
//! resource reads the node and writes it back with its resourceVersion as a
//! precondition, where the others apply server-side. No command makes any
//! discovery request: every resource knows its API group, version and kind.
//! The counters carry no client label, and the controller-manager refreshes
//! its discovery (`GET /api`, `GET /apis`) every 30 s, so that is checked
//! on a refresh, repeated until one falls between two of its refreshes.
//!
//! It counts while no other test of its tier sends the cluster requests
//! (`common::exclusive`), so none of theirs land in the counts.

use std::collections::BTreeMap;

use common::apiserver_metrics::{Counts, scrape};
use common::fixtures::{class, fleet};
use common::terraform::{Workspace, each_cli};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

const CLASSES: u64 = 2;

fn counts() -> Counts {
    block_on(async { scrape(&kube_client().await).await })
}

/// Runs `command` and returns what the API server counted meanwhile.
fn counted(command: impl FnOnce()) -> Counts {
    let before = counts();
    command();
    counts().since(&before)
}

fn verbs(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(v, n)| (v.to_string(), *n)).collect()
}

fn assert_budget(what: &str, counts: &Counts, expected: &[(&str, &[(&str, u64)])]) {
    for (resource, budget) in expected {
        let mut counted = counts.by_verb(resource);
        // Karpenter, running in this cluster, patches the NodePools it
        // reconciles (its hash annotation), and the counters name no client;
        // gpufleet writes NodePools only by server-side apply (APPLY).
        if *resource == "nodepools" {
            counted.remove("PATCH");
        }
        // Likewise the watches of the nodes other clients restart (the
        // simulated device plugin's every few minutes, a WATCH; informers
        // a LIST and a WATCH). gpufleet never watches, and lists nodes only
        // for a node_selector, which this configuration does not use.
        if *resource == "nodes" {
            counted.remove("LIST");
            counted.remove("WATCH");
        }
        assert_eq!(
            counted,
            verbs(budget),
            "{what}: requests to {resource} (all counted: {counts:?})"
        );
    }
}

fn config(classes: &[String], pool: &str, node: &str, revision: &str) -> String {
    let mut body: String = classes
        .iter()
        .enumerate()
        .map(|(i, name)| {
            class(
                &format!("c{i}"),
                name,
                1000 + i as i64,
                &format!("  description = \"{revision}\"\n"),
            )
        })
        .collect();
    let weight = if revision == "first" { 10 } else { 20 };
    body += &fleet(
        "f",
        pool,
        &format!("  accelerators = [\"L4\"]\n  weight = {weight}\n"),
    );
    body += &format!(
        "resource \"gpufleet_node_taint\" \"t\" {{\n  node_name = \"{node}\"\n  taints    = [{{ key = \"budget\", value = \"{revision}\", effect = \"NoSchedule\" }}]\n}}\n"
    );
    body
}

#[test]
fn each_command_stays_within_its_request_budget() {
    let _alone = common::exclusive::requests_counted();
    each_cli(|cli| {
        let node = unique_name("budget-node");
        let nodes = || async { Api::<Node>::all(kube_client().await) };
        let object = Node {
            metadata: ObjectMeta {
                name: Some(node.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        block_on(async { nodes().await.create(&PostParams::default(), &object).await }).unwrap();

        let classes: Vec<String> = (0..CLASSES).map(|_| unique_name("budget-pc")).collect();
        let pool = unique_name("budget-fleet");
        let mut ws = Workspace::new(cli);
        ws.config(&config(&classes, &pool, &node, "first")).init();
        let what = |command: &str| format!("{} {command}", cli.name);

        let create = ws.apply_measured(|apply| counted(apply));
        assert_budget(
            &what("apply (create)"),
            &create,
            &[
                ("priorityclasses", &[("GET", CLASSES), ("APPLY", CLASSES)]),
                ("nodepools", &[("GET", 1), ("APPLY", 1)]),
                ("nodes", &[("GET", 1), ("PATCH", 1)]),
            ],
        );

        let mut discovery = Vec::new();
        while discovery.len() < 3 && discovery.last() != Some(&0) {
            let refresh = counted(|| ws.assert_plan_empty());
            assert_budget(
                &what("plan (refresh)"),
                &refresh,
                &[
                    ("priorityclasses", &[("GET", CLASSES)]),
                    ("nodepools", &[("GET", 1)]),
                    ("nodes", &[("GET", 1)]),
                ],
            );
            discovery.push(refresh.discovery());
        }
        assert_eq!(
            discovery.last(),
            Some(&0),
            "{}: discovery requests in each of {} refreshes: {discovery:?}",
            cli.name,
            discovery.len()
        );

        ws.config(&config(&classes, &pool, &node, "second"));
        let update = ws.apply_measured(|apply| counted(apply));
        assert_budget(
            &what("apply (update)"),
            &update,
            &[
                ("priorityclasses", &[("GET", CLASSES), ("APPLY", CLASSES)]),
                ("nodepools", &[("GET", 1), ("APPLY", 1)]),
                ("nodes", &[("GET", 2), ("PATCH", 1)]),
            ],
        );

        let destroy = counted(|| ws.destroy());
        assert_budget(
            &what("destroy"),
            &destroy,
            &[
                ("priorityclasses", &[("GET", CLASSES), ("DELETE", CLASSES)]),
                ("nodepools", &[("GET", 1), ("DELETE", 1)]),
                ("nodes", &[("GET", 2), ("PATCH", 1)]),
            ],
        );

        block_on(async { nodes().await.delete(&node, &DeleteParams::default()).await }).unwrap();
    });
}
