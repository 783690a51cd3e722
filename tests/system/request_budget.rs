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
//!
//! The provider runs as a user of its own, gpufleet-counted (the roles of
//! docs/rbac.yaml, like every other test's provider), whose requests alone
//! the test cluster's audit log records (`common::audit`): what Karpenter,
//! the controller-manager or other tests send at the same time is not
//! counted, so every request to every resource is in the budget, with no
//! exception.

use std::collections::BTreeMap;

use common::audit::{Counts, counted, counted_kubeconfig};
use common::fixtures::{class, fleet};
use common::terraform::{Workspace, each_cli, provider_block_for};
use common::{block_on, kube_client, unique_name};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

const CLASSES: u64 = 2;

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
        .0
        .keys()
        .filter(|(_, resource)| !budgeted.contains(&resource.as_str()))
        .collect();
    assert!(
        beyond.is_empty(),
        "{what}: requests beyond the budget: {beyond:?} (all counted: {counts:?})"
    );
}

fn config(classes: &[String], pool: &str, node: &str, revision: &str) -> String {
    let mut body = provider_block_for(&counted_kubeconfig(), "");
    body += &classes
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
        .collect::<String>();
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
        ws.config_raw(&config(&classes, &pool, &node, "first"))
            .init();
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
        assert_eq!(refresh.discovery(), 0, "{}: discovery requests", cli.name);

        ws.config_raw(&config(&classes, &pool, &node, "second"));
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
