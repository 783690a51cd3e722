//! What the scenario says as it goes: the phases and their times (the test's
//! log), and for `make demo` each step as it starts and what the cluster
//! has while it waits; at the end, who ran where and why.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use gpufleet::catalog::{LabelKeys, LabelScheme};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::Client;
use kube::api::{Api, ListParams};

use super::SERVER;
use super::lookups::{
    GPU, INSTANCE_TYPE, POOL, advertised, all_pods, by_karpenter, events, label, limit,
    node_claims, node_map, node_of,
};
use crate::terraform::Cli;
/// The label with which a node picks its device-plugin configuration (the
/// GPU Operator's, which the simulated device plugin follows).
const SHARING: &str = "nvidia.com/device-plugin.config";

pub(crate) struct Narrator {
    cli: &'static str,
    /// The fleets whose nodes the progress line counts.
    pub(crate) fleets: Vec<&'static str>,
    /// `make demo`: step headings and progress while waiting, too.
    live: bool,
    start: Instant,
    last: Cell<Instant>,
    /// The progress line shown last, shown again only when it changes.
    shown: RefCell<String>,
}

impl Narrator {
    pub(crate) fn new(cli: &Cli, live: bool, fleets: Vec<&'static str>) -> Self {
        eprintln!("scenario with {} {}", cli.name, cli.version);
        let now = Instant::now();
        Self {
            cli: cli.name,
            fleets,
            live,
            start: now,
            last: Cell::new(now),
            shown: RefCell::default(),
        }
    }

    fn seconds(&self) -> u64 {
        self.start.elapsed().as_secs()
    }

    /// What the scenario does next (live only).
    pub(crate) fn step(&self, what: &str) {
        if self.live {
            eprintln!("\n==> [{:3}s] {what}", self.seconds());
        }
    }

    /// A phase done, with the time since the start and since the last one.
    pub(crate) fn phase(&self, what: &str) {
        let now = Instant::now();
        eprintln!(
            "  [{:5.1}s +{:4.1}s] {what}",
            (now - self.start).as_secs_f64(),
            (now - self.last.get()).as_secs_f64()
        );
        self.last.set(now);
    }

    /// The lines of an apply's output that say what it did (live only).
    pub(crate) fn applied(&self, output: &str) {
        if !self.live {
            return;
        }
        for line in output.lines().filter(|l| {
            l.contains("Creation complete")
                || l.contains("Modifications complete")
                || l.starts_with("Apply complete")
        }) {
            eprintln!("    {line}");
        }
    }

    /// A line of what the demo shows (live only).
    pub(crate) fn line(&self, text: &str) {
        if self.live {
            eprintln!("{text}");
        }
    }

    /// Nodes per fleet and the pods' phases, when they changed (live only).
    pub(crate) async fn progress(&self, client: &Client) {
        if !self.live {
            return;
        }
        let nodes = node_map(client).await;
        let mut line = String::new();
        for &fleet in &self.fleets {
            let mut types: BTreeMap<&str, usize> = BTreeMap::new();
            for node in nodes.values().filter(|n| label(n, POOL) == Some(fleet)) {
                *types
                    .entry(label(node, INSTANCE_TYPE).unwrap_or("-"))
                    .or_default() += 1;
            }
            line += &format!(
                "{fleet}: {} | ",
                counted(&types, |t, n| format!("{t} x{n}"))
            );
        }
        let mut phases: BTreeMap<&str, usize> = BTreeMap::new();
        let pods = all_pods(client).await;
        for pod in &pods {
            *phases.entry(phase_of(pod)).or_default() += 1;
        }
        line += &format!("pods: {}", counted(&phases, |p, n| format!("{n} {p}")));
        if *self.shown.borrow() != line {
            eprintln!("    [{:3}s] {line}", self.seconds());
            *self.shown.borrow_mut() = line;
        }
    }

    /// Who ran where and why: the cluster as the scenario leaves it before
    /// the work ends.
    pub(crate) async fn summary(&self, client: &Client) {
        self.step("SUMMARY");
        eprintln!("{}", report(client).await);
    }

    /// What Karpenter said as it removed `nodes`.
    pub(crate) async fn disruptions(&self, client: &Client, nodes: &BTreeSet<String>) {
        let decisions: Vec<Vec<String>> = Api::<Event>::all(client.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| {
                e.reason.as_deref() == Some("DisruptionTerminating")
                    && e.involved_object.kind.as_deref() == Some("Node")
                    && e.involved_object
                        .name
                        .as_ref()
                        .is_some_and(|n| nodes.contains(n))
            })
            .map(|e| {
                vec![
                    e.involved_object.name.unwrap_or_default(),
                    e.message.unwrap_or_default(),
                ]
            })
            .collect();
        eprintln!(
            "\nKarpenter's disruption decisions:\n{}",
            table(&["NODE", "KARPENTER"], &decisions)
        );
    }

    pub(crate) fn done(&self) {
        eprintln!(
            "scenario with {}: {:.1}s",
            self.cli,
            self.start.elapsed().as_secs_f64()
        );
    }
}

/// Each count as `each` writes it, comma-separated; "none" for nothing.
fn counted(counts: &BTreeMap<&str, usize>, each: impl Fn(&str, usize) -> String) -> String {
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(what, n)| each(what, *n))
        .collect::<Vec<_>>()
        .join(", ")
}

fn phase_of(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("-")
}

/// Rows under headers, columns aligned as kubectl aligns them.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return "  (none)\n".into();
    }
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        format!("  {}\n", padded.join("   ").trim_end())
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}

/// The node's GPU label `key` picks, under whichever scheme labels it.
fn gpu_label(node: &Node, key: fn(LabelKeys) -> &'static str) -> Option<&str> {
    LabelScheme::ALL
        .into_iter()
        .find_map(|scheme| label(node, key(scheme.label_keys())))
}

fn taints(node: &Node, part: impl Fn(&k8s_openapi::api::core::v1::Taint) -> String) -> String {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| t.iter().map(part).collect::<Vec<_>>().join(","))
        .unwrap_or_default()
}

/// At most `limit` characters of `text`.
fn clipped(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The cluster as the scenario sees it: nodes per fleet, what the
/// inference nodes advertise with sharing, the self-managed server, where
/// each pod runs and why (selector, tolerations, priority), why the
/// pending ones wait and who preempted whom. The demo's summary, and what a
/// wait that timed out shows.
pub(crate) async fn report(client: &Client) -> String {
    let nodes = node_map(client).await;
    let pods = all_pods(client).await;
    let events = events(client).await;
    let text = |v: Option<&str>| v.unwrap_or("-").to_string();
    let mut out = String::new();

    let mut fleet_nodes: Vec<&Node> = nodes
        .values()
        .filter(|n| label(n, POOL).is_some())
        .collect();
    fleet_nodes.sort_by(|a, b| {
        (label(a, POOL), &a.metadata.name).cmp(&(label(b, POOL), &b.metadata.name))
    });
    let rows: Vec<Vec<String>> = fleet_nodes
        .iter()
        .map(|n| {
            vec![
                text(n.metadata.name.as_deref()),
                text(label(n, POOL)),
                text(label(n, INSTANCE_TYPE)),
                text(gpu_label(n, |k| k.name)),
                advertised(n).0.to_string(),
                taints(n, |t| t.value.clone().unwrap_or_default()),
            ]
        })
        .collect();
    out += "\nNodes Karpenter created, by fleet:\n";
    out += &table(
        &["NODE", "FLEET", "INSTANCE TYPE", "GPU", "GPUS", "TAINTS"],
        &rows,
    );

    let rows: Vec<Vec<String>> = fleet_nodes
        .iter()
        .filter(|n| label(n, POOL) == Some("inference"))
        .map(|n| {
            let (capacity, allocatable) = advertised(n);
            vec![
                text(n.metadata.name.as_deref()),
                text(gpu_label(n, |k| k.count)),
                text(label(n, SHARING)),
                capacity.to_string(),
                allocatable.to_string(),
            ]
        })
        .collect();
    out += &format!(
        "\nWhat each inference node advertises with sharing (GPUS: its L4s; capacity and allocatable of {GPU} as the simulated device plugin wrote them):\n"
    );
    out += &table(
        &["NODE", "GPUS", "SHARING", "CAPACITY", "ALLOCATABLE"],
        &rows,
    );
    let rows: Vec<Vec<String>> = pods
        .iter()
        .filter(|p| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .map(String::as_str)
                == Some("chat-api")
        })
        .map(|p| {
            vec![
                text(p.metadata.name.as_deref()),
                text(node_of(p)),
                text(limit(p, GPU).as_deref()),
            ]
        })
        .collect();
    out += &table(&["POD", "NODE", "GPU LIMIT"], &rows);
    let claims = node_claims(client)
        .list(&ListParams::default().labels(&format!("{POOL}=inference")))
        .await
        .map_or(0, |l| l.items.len());
    out += &format!("  inference NodeClaims: {claims}\n");
    let rows: Vec<Vec<String>> = crate::fixtures::node_overlays(client)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .map(|o| {
            vec![
                o.metadata.name.unwrap_or_default(),
                o.data["spec"]["capacity"].to_string(),
            ]
        })
        .collect();
    out += &table(&["KARPENTER PLANS WITH (NodeOverlay)", "CAPACITY"], &rows);

    out += "\nThe self-managed server (taints: the training one it joined with, its own maintenance one):\n";
    let rows: Vec<Vec<String>> = nodes
        .get(SERVER)
        .map(|n| {
            vec![
                SERVER.to_string(),
                text(gpu_label(n, |k| k.name)),
                advertised(n).0.to_string(),
                taints(n, |t| t.key.clone()),
            ]
        })
        .into_iter()
        .collect();
    out += &table(&["NODE", "GPU", "GPUS", "TAINTS"], &rows);

    out += "\nWhere each pod runs, and why (node selector, tolerated taints, priority class):\n";
    let mut sorted: Vec<&Pod> = pods.iter().collect();
    sorted.sort_by_key(|p| p.metadata.name.clone());
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|p| {
            let spec = p.spec.as_ref();
            let selector = spec
                .and_then(|s| s.node_selector.as_ref())
                .map(|s| {
                    s.iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            let tolerates = spec
                .and_then(|s| s.tolerations.as_ref())
                .into_iter()
                .flatten()
                .filter(|t| t.key.as_deref() == Some("workload"))
                .filter_map(|t| t.value.clone())
                .collect::<Vec<_>>()
                .join(",");
            vec![
                text(p.metadata.name.as_deref()),
                phase_of(p).to_string(),
                text(node_of(p)),
                selector,
                tolerates,
                text(spec.and_then(|s| s.priority_class_name.as_deref())),
                spec.and_then(|s| s.priority).unwrap_or(0).to_string(),
            ]
        })
        .collect();
    out += &table(
        &[
            "POD",
            "PHASE",
            "NODE",
            "SELECTOR",
            "TOLERATES",
            "PRIORITY CLASS",
            "PRIORITY",
        ],
        &rows,
    );

    out += "\nWhy the pending pods wait (Karpenter):\n";
    // The latest verdict on each pod that still waits.
    let mut failures: Vec<&Event> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling") && by_karpenter(e))
        .collect();
    failures.sort_by_key(|e| e.last_timestamp.as_ref().map(|t| t.0));
    let mut verdicts: BTreeMap<String, String> = BTreeMap::new();
    for event in failures {
        let pod = text(event.involved_object.name.as_deref());
        let waiting = pods
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some(&pod) && node_of(p).is_none());
        if waiting {
            verdicts.insert(pod, clipped(&text(event.message.as_deref()), 200));
        }
    }
    let rows: Vec<Vec<String>> = verdicts.into_iter().map(|(p, m)| vec![p, m]).collect();
    out += &table(&["POD", "KARPENTER"], &rows);

    out += "\nPreemptions (kube-scheduler):\n";
    let rows: Vec<Vec<String>> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Preempted"))
        .map(|e| {
            vec![
                text(e.involved_object.name.as_deref()),
                text(e.message.as_deref()),
            ]
        })
        .collect();
    out += &table(&["PREEMPTED", "BY"], &rows);
    out
}
