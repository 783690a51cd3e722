//! The bench's outputs: results.json (every sample), benchmarks.md (tables,
//! goals, machine and versions) and wall-time.svg (wall time against N per
//! phase, one line per provider).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;
use std::process::Command;

use serde::Serialize;

use crate::transport::Latency;
use common::measure::spread;

use crate::{PARALLELISM, PHASES, Sample};

/// Per RPC name: server-side latencies in µs, from `rpc served` TRACE lines.
pub(crate) type RpcLatencies = BTreeMap<String, Vec<f64>>;

pub(crate) fn rpc_latencies(log: &str) -> RpcLatencies {
    let mut rpcs = RpcLatencies::new();
    for line in log.lines().filter(|l| l.contains("rpc served")) {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .map(|v| v.trim_matches('"').to_string())
        };
        if let (Some(rpc), Some(micros)) = (field("rpc="), field("micros="))
            && let Ok(us) = micros.parse()
        {
            rpcs.entry(rpc).or_default().push(us);
        }
    }
    rpcs
}

#[derive(Serialize)]
pub(crate) struct Facts {
    pub(crate) date: String,
    pub(crate) machine: String,
    pub(crate) cli: String,
    pub(crate) kubernetes: String,
    pub(crate) gpufleet: String,
    pub(crate) gpufleet_binary_bytes: u64,
    pub(crate) peer: Option<String>,
    pub(crate) plugin_floor: String,
    pub(crate) rustc: String,
}

fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

impl Facts {
    pub(crate) fn gather(
        cli: &Path,
        binary: &Path,
        peer: Option<&Path>,
        peer_version: Option<&str>,
        plugin_floor: &Path,
        plugin_floor_version: &str,
        kubeconfig: &str,
    ) -> Facts {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .unwrap_or_default()
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
            })
            .unwrap_or_default();
        let memory_gib = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|kb| kb.trim().trim_end_matches(" kB").parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
        let cli_version: serde_json::Value =
            serde_json::from_str(&output(&cli.display().to_string(), &["version", "-json"]))
                .unwrap_or_default();
        let kubectl = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/bin/kubectl");
        let server: serde_json::Value = serde_json::from_str(&output(
            &kubectl.display().to_string(),
            &["--kubeconfig", kubeconfig, "version", "-o", "json"],
        ))
        .unwrap_or_default();
        let commit = output(
            "git",
            &[
                "-C",
                env!("CARGO_MANIFEST_DIR"),
                "describe",
                "--always",
                "--dirty",
            ],
        );
        Facts {
            date: output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
            machine: format!(
                "{} cores ({cpu}), {memory_gib:.0} GiB, {}",
                std::thread::available_parallelism().map_or(0, |n| n.get()),
                output("uname", &["-sr"])
            ),
            cli: format!(
                "{} {}",
                cli.file_name().unwrap_or_default().to_string_lossy(),
                cli_version["terraform_version"].as_str().unwrap_or("?")
            ),
            kubernetes: format!(
                "kube-apiserver {}",
                server["serverVersion"]["gitVersion"]
                    .as_str()
                    .unwrap_or("?")
            ),
            gpufleet: format!("{} ({commit})", env!("CARGO_PKG_VERSION")),
            gpufleet_binary_bytes: std::fs::metadata(binary).map_or(0, |m| m.len()),
            peer: peer.map(|p| {
                format!(
                    "hashicorp/kubernetes {} ({})",
                    peer_version.unwrap_or("?"),
                    p.display()
                )
            }),
            plugin_floor: format!(
                "benches/plugin-floor on terraform-plugin-framework v{plugin_floor_version}, {}",
                // `<path>: go1.26.8`
                output("go", &["version", &plugin_floor.display().to_string()])
                    .rsplit(' ')
                    .next()
                    .unwrap_or("?")
            ),
            rustc: output("rustc", &["--version"]),
        }
    }
}

type Latencies = BTreeMap<(usize, &'static str), (f64, RpcLatencies)>;

#[derive(Serialize)]
struct Results<'a> {
    facts: &'a Facts,
    samples: &'a [Sample],
    transport: &'a [Latency],
}

struct Stat {
    median: f64,
    min: f64,
    max: f64,
}

fn stat(samples: &[&Sample], value: impl Fn(&Sample) -> f64) -> Option<Stat> {
    if samples.is_empty() {
        return None;
    }
    let mut values: Vec<f64> = samples.iter().map(|s| value(s)).collect();
    let (median, min, max) = spread(&mut values);
    Some(Stat { median, min, max })
}

fn select<'a>(
    samples: &'a [Sample],
    workload: &str,
    provider: &str,
    phase: &str,
) -> Vec<&'a Sample> {
    samples
        .iter()
        .filter(|s| s.workload == workload && s.provider == provider && s.phase == phase)
        .collect()
}

fn wall(samples: &[Sample], workload: &str, provider: &str, phase: &str) -> Option<Stat> {
    stat(&select(samples, workload, provider, phase), |s| s.wall_s)
}

fn fmt_stat(s: &Option<Stat>, unit: &str) -> String {
    match s {
        Some(s) => format!("{:.2}{unit} ({:.2}–{:.2})", s.median, s.min, s.max),
        None => "–".into(),
    }
}

fn ratio(a: &Option<Stat>, b: &Option<Stat>) -> Option<f64> {
    Some(a.as_ref()?.median / b.as_ref()?.median)
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}×"))
}

fn requests_text(samples: &[&Sample]) -> String {
    // Requests are the same in every run unless something retried; show the median run's.
    let Some(sample) = samples.get(samples.len() / 2) else {
        return "–".into();
    };
    if sample.requests.is_empty() {
        return "none".into();
    }
    sample
        .requests
        .iter()
        .map(|(verb, n)| format!("{n} {verb}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn percentile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() as f64 * q) as usize).min(values.len() - 1)]
}

pub(crate) fn write(
    out: &Path,
    facts: &Facts,
    samples: &[Sample],
    latency: &Latencies,
    transport: &[Latency],
    startup: Option<&str>,
) {
    let json = serde_json::to_string_pretty(&Results {
        facts,
        samples,
        transport,
    })
    .unwrap();
    std::fs::write(out.join("results.json"), json).unwrap();

    let mut workloads: Vec<(usize, String)> = Vec::new();
    for s in samples {
        if !workloads.iter().any(|(_, w)| *w == s.workload) {
            workloads.push((s.count, s.workload.clone()));
        }
    }
    let has_peer = samples.iter().any(|s| s.provider == "peer");
    let has_kubectl = samples.iter().any(|s| s.provider == "kubectl");
    let runs = samples.iter().filter(|s| s.provider == "gpufleet").count()
        / (workloads.len() * PHASES.len()).max(1);

    let mut md = String::new();
    writeln!(md, "# Benchmarks\n").unwrap();
    writeln!(
        md,
        "Measured by `make bench` (benches/workloads, benches/startup) on a control plane of its own; `make bench-publish` commits the latest run here, only from a clean tree. Wall times are the median of {runs} runs with the range in brackets, `-parallelism={PARALLELISM}`, runs alternating between providers. Two floors: the same number of `terraform_data` resources, what Terraform itself costs with no plugin; and, for priority classes, the plugin floor, the same configuration through a provider made with HashiCorp's terraform-plugin-framework (benches/plugin-floor) whose resource has gpufleet_priority_class's schema and only stores it: what a plugin as the framework makes one costs before any API call.\n"
    )
    .unwrap();
    writeln!(md, "| | |\n|---|---|").unwrap();
    writeln!(md, "| date | {} |", facts.date).unwrap();
    writeln!(md, "| machine | {} |", facts.machine).unwrap();
    let loads: Vec<common::measure::Load> = samples.iter().map(|s| s.load).collect();
    writeln!(
        md,
        "| one-minute load average | {} |",
        common::measure::summary(&loads, common::measure::cores())
    )
    .unwrap();
    writeln!(md, "| CLI | {} |", facts.cli).unwrap();
    writeln!(
        md,
        "| cluster | {} (etcd, scheduler, controller-manager on loopback) |",
        facts.kubernetes
    )
    .unwrap();
    writeln!(
        md,
        "| gpufleet | {}, release binary {:.1} MiB stripped |",
        facts.gpufleet,
        facts.gpufleet_binary_bytes as f64 / 1048576.0
    )
    .unwrap();
    writeln!(
        md,
        "| peer | {} |",
        facts
            .peer
            .as_deref()
            .unwrap_or("not run (set GPUFLEET_BENCH_PEER to a hashicorp/kubernetes binary)")
    )
    .unwrap();
    writeln!(md, "| plugin floor | {} |", facts.plugin_floor).unwrap();
    writeln!(md, "| compiler | {} |\n", facts.rustc).unwrap();

    writeln!(
        md,
        "## Wall time\n\n![wall time against N](benchmarks-wall-time.svg)\n"
    )
    .unwrap();
    writeln!(
        md,
        "| workload | phase | terraform_data s | plugin floor s | gpufleet s | gpufleet ÷ terraform_data | gpufleet ÷ plugin floor | peer s | gpufleet ÷ peer |"
    )
    .unwrap();
    writeln!(md, "|---|---|---|---|---|---|---|---|---|").unwrap();
    for (_, w) in &workloads {
        for phase in PHASES {
            let (t, f, g, p) = (
                wall(samples, w, "terraform_data", phase),
                wall(samples, w, "plugin-floor", phase),
                wall(samples, w, "gpufleet", phase),
                wall(samples, w, "peer", phase),
            );
            writeln!(
                md,
                "| {w} | {phase} | {} | {} | {} | {} | {} | {} | {} |",
                fmt_stat(&t, ""),
                fmt_stat(&f, ""),
                fmt_stat(&g, ""),
                fmt_ratio(ratio(&g, &t)),
                fmt_ratio(ratio(&g, &f)),
                fmt_stat(&p, ""),
                fmt_ratio(ratio(&g, &p))
            )
            .unwrap();
        }
    }

    shares(&mut md, samples, &workloads);
    if let Some(over) = taint_over(&workloads) {
        beside_kubectl(&mut md, samples, &over);
    }

    writeln!(md, "\n## Provider process and API requests\n").unwrap();
    writeln!(md, "Peak resident memory is the largest VmHWM of any plugin process the command started (polled from /proc every 5 ms); CPU is user + system time of those processes; launches is how many plugin processes the command started. Requests are what the API server counted (`apiserver_request_total`, by verb, for the workload's resource, plus discovery) during the command.\n").unwrap();
    let providers: Vec<&str> = ["gpufleet", "plugin-floor", "peer", "kubectl"]
        .into_iter()
        .filter(|p| (*p != "peer" || has_peer) && (*p != "kubectl" || has_kubectl))
        .collect();
    writeln!(
        md,
        "| workload | phase | provider | peak RSS MiB | CPU s | launches | requests |"
    )
    .unwrap();
    writeln!(md, "|---|---|---|---|---|---|---|").unwrap();
    for (_, w) in &workloads {
        for phase in PHASES {
            for provider in &providers {
                let chosen = select(samples, w, provider, phase);
                if chosen.is_empty() {
                    continue; // the plugin floor has priority classes only
                }
                // kubectl starts no plugin: only its requests are measured.
                let plugin = |measured: String| match *provider {
                    "kubectl" => "–".to_string(),
                    _ => measured,
                };
                let rss = stat(&chosen, |s| s.provider_peak_kib as f64 / 1024.0);
                let cpu = stat(&chosen, |s| s.provider_cpu_s);
                let launches = chosen.first().map_or(0, |s| s.provider_launches);
                writeln!(
                    md,
                    "| {w} | {phase} | {provider} | {} | {} | {} | {} |",
                    plugin(fmt_stat(&rss, "")),
                    plugin(fmt_stat(&cpu, "")),
                    plugin(launches.to_string()),
                    requests_text(&chosen)
                )
                .unwrap();
            }
        }
    }

    writeln!(md, "\n## Per-RPC latency in the provider\n").unwrap();
    writeln!(md, "Server-side time per call (request in to answer out, decoding and encoding included), from the provider's TRACE log (`rpc served`), for the largest priority-class workload in one extra apply, plan and destroy per parallelism. µs.\n").unwrap();
    writeln!(
        md,
        "| parallelism | phase | wall s | RPC | calls | p50 | p90 | p99 | max |"
    )
    .unwrap();
    writeln!(md, "|---|---|---|---|---|---|---|---|---|").unwrap();
    for ((parallelism, phase), (wall_s, rpcs)) in latency {
        for (rpc, values) in rpcs {
            let mut v = values.clone();
            let (p50, p90, p99, max) = (
                percentile(&mut v, 0.5),
                percentile(&mut v, 0.9),
                percentile(&mut v, 0.99),
                percentile(&mut v, 1.0),
            );
            writeln!(md, "| {parallelism} | {phase} | {wall_s:.2} | {rpc} | {} | {p50:.0} | {p90:.0} | {p99:.0} | {max:.0} |", v.len()).unwrap();
        }
    }

    writeln!(md, "\n## Per-call latency by network\n").unwrap();
    writeln!(md, "Sequential health checks in-process over AutoMTLS with a client that writes what grpc-go writes (each request with an HTTP/2 PING), alternating networks. The provider serves on a unix socket and falls back to TCP.\n").unwrap();
    writeln!(
        md,
        "| network | calls | median µs | p90 µs | p99 µs |\n|---|---|---|---|---|"
    )
    .unwrap();
    for t in transport {
        writeln!(
            md,
            "| {} | {} | {:.0} | {:.0} | {:.0} |",
            t.network, t.calls, t.median_us, t.p90_us, t.p99_us
        )
        .unwrap();
    }

    let startup: serde_json::Value = startup
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    writeln!(md, "\n## Start-up\n").unwrap();
    if startup.is_null() {
        writeln!(
            md,
            "Not measured in this run (benches/startup writes target/bench/startup.json)."
        )
        .unwrap();
    } else {
        writeln!(md, "exec → handshake line with AutoMTLS (certificate generation included), {} runs: median {:.2} ms, p95 {:.2} ms, max {:.2} ms; resident memory at the handshake {} KiB (median).", startup["runs"], startup["median_ms"].as_f64().unwrap_or(0.0), startup["p95_ms"].as_f64().unwrap_or(0.0), startup["max_ms"].as_f64().unwrap_or(0.0), startup["rss_median_kib"]).unwrap();
    }

    goals(&mut md, samples, &workloads, facts, &startup, has_peer);
    if let Some((n, over)) = workloads
        .iter()
        .find(|(_, w)| w.starts_with("one taint over"))
    {
        taint_over_goals(&mut md, samples, *n, over);
    }
    // Measured apart, with two builds (GPUFLEET_BENCH_BUILDS), so not rerun here.
    std::fs::write(out.join("benchmarks.md"), &md).unwrap();
    std::fs::write(
        out.join("benchmarks-wall-time.svg"),
        chart(samples, has_peer),
    )
    .unwrap();
}

/// The one-taint-over-many-nodes workload, if it ran.
fn taint_over(workloads: &[(usize, String)]) -> Option<String> {
    workloads
        .iter()
        .find(|(_, w)| w.starts_with("one taint over"))
        .map(|(_, w)| w.clone())
}

/// One taint over many nodes through gpufleet beside `kubectl taint nodes
/// -l` (and, for the refresh, `kubectl get nodes -l`), with the requests
/// each sent.
fn beside_kubectl(md: &mut String, samples: &[Sample], over: &str) {
    writeln!(md, "\n## {over}: beside kubectl\n").unwrap();
    writeln!(md, "One `gpufleet_node_taint` whose `node_selector` matches every node, applied, planned and destroyed with Terraform's own overhead, beside what a person types for the same nodes in the same run: `kubectl taint nodes -l ... key=x:NoSchedule` (apply), `kubectl get nodes -l ...` (plan), `kubectl taint nodes -l ... key:NoSchedule-` (destroy), kubectl's discovery cache warm. Both run as the user the API server audits alone, so the requests are exactly theirs (`nodes`, by verb, and discovery).\n").unwrap();
    writeln!(
        md,
        "| phase | kubectl s | gpufleet s | gpufleet ÷ kubectl | kubectl requests | gpufleet requests |\n|---|---|---|---|---|---|"
    )
    .unwrap();
    for phase in PHASES {
        let (k, g) = (
            wall(samples, over, "kubectl", phase),
            wall(samples, over, "gpufleet", phase),
        );
        writeln!(
            md,
            "| {phase} | {} | {} | {} | {} | {} |",
            fmt_stat(&k, ""),
            fmt_stat(&g, ""),
            fmt_ratio(ratio(&g, &k)),
            requests_text(&select(samples, over, "kubectl", phase)),
            requests_text(&select(samples, over, "gpufleet", phase)),
        )
        .unwrap();
    }
}

/// The goals of one taint over `n` nodes: apply and destroy at most half
/// of kubectl's time, and at most one LIST and one write per node (besides
/// the LIST of the refresh that comes before a destroy).
fn taint_over_goals(md: &mut String, samples: &[Sample], n: usize, over: &str) {
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "met",
        Some(false) => "**not met**",
        None => "not measured",
    };
    for phase in ["apply", "destroy"] {
        let x = ratio(
            &wall(samples, over, "gpufleet", phase),
            &wall(samples, over, "kubectl", phase),
        );
        writeln!(
            md,
            "| {over}, {phase} ≤ 0.5× `kubectl taint nodes -l` | {} | {} |",
            fmt_ratio(x),
            verdict(x.map(|x| x <= 0.5))
        )
        .unwrap();
    }
    for (phase, refresh) in [("apply", 0), ("destroy", 1)] {
        let chosen = select(samples, over, "gpufleet", phase);
        // The most any run sent: a retried conflict counts against the goal.
        let most = |verb: &str| {
            chosen
                .iter()
                .map(|s| s.requests.get(verb).copied().unwrap_or(0))
                .max()
        };
        let others = chosen
            .iter()
            .flat_map(|s| s.requests.iter())
            .filter(|(verb, n)| !["LIST", "PATCH"].contains(&verb.as_str()) && **n > 0)
            .map(|(verb, _)| verb.clone())
            .collect::<std::collections::BTreeSet<_>>();
        let (list, patch) = (most("LIST"), most("PATCH"));
        let ok = list
            .zip(patch)
            .map(|(l, p)| l <= 1 + refresh && p <= n as u64 && others.is_empty());
        let besides = if refresh > 0 {
            " (besides the refresh's LIST)"
        } else {
            ""
        };
        writeln!(
            md,
            "| {over}, {phase}: ≤ 1 LIST + 1 write per node{besides} | {} LIST, {} PATCH{} (most of any run) | {} |",
            list.map_or("–".into(), |l| l.to_string()),
            patch.map_or("–".into(), |p| p.to_string()),
            if others.is_empty() {
                String::new()
            } else {
                format!(", also {}", others.into_iter().collect::<Vec<_>>().join(", "))
            },
            verdict(ok)
        )
        .unwrap();
    }
}

/// The API server's time in a command's wall time: its time answering the
/// requests, added up, over the parallelism (all of it spent with that many
/// requests in flight), median of the runs.
fn api_time(samples: &[Sample], workload: &str, phase: &str) -> Option<Stat> {
    stat(&select(samples, workload, "gpufleet", phase), |s| {
        s.api_s / PARALLELISM as f64
    })
}

/// gpufleet's wall time over the plugin floor's plus the API server's time.
fn beside_plugin_floor(samples: &[Sample], workload: &str, phase: &str) -> Option<f64> {
    let floor = wall(samples, workload, "plugin-floor", phase)?.median;
    let api = api_time(samples, workload, phase)?.median;
    Some(wall(samples, workload, "gpufleet", phase)?.median / (floor + api))
}

/// Where the time of the workloads the plugin floor has goes, in medians:
/// Terraform, a framework plugin on top, and gpufleet's own share on top
/// of that, split into the API server's time and the rest.
fn shares(md: &mut String, samples: &[Sample], workloads: &[(usize, String)]) {
    writeln!(md, "\n## Where the time goes\n").unwrap();
    writeln!(md, "Medians, in seconds, each column on top of the one before: Terraform itself (terraform_data); a plugin as HashiCorp's terraform-plugin-framework makes one (plugin floor − terraform_data: the process, the gRPC calls, the framework's decoding and plan modifiers); gpufleet's own share (gpufleet − plugin floor), of which the API server's time (its time answering gpufleet's requests to the workload's resource, `apiserver_request_duration_seconds`, WATCH left out, added up and divided by the parallelism, {PARALLELISM}: as if always that many were in flight) and the rest (protocol, values, the client). Differences of medians, so a small one can come out negative on a noisy machine.\n").unwrap();
    writeln!(md, "| workload | phase | Terraform | + framework plugin | + gpufleet's share | of it: API server | of it: the rest | gpufleet ÷ (plugin floor + API server) |\n|---|---|---|---|---|---|---|---|").unwrap();
    for (_, w) in workloads {
        for phase in PHASES {
            let median = |provider| wall(samples, w, provider, phase).map(|s| s.median);
            let (Some(terraform), Some(floor), Some(gpufleet), Some(api)) = (
                median("terraform_data"),
                median("plugin-floor"),
                median("gpufleet"),
                api_time(samples, w, phase).map(|s| s.median),
            ) else {
                continue;
            };
            let share = gpufleet - floor;
            writeln!(
                md,
                "| {w} | {phase} | {terraform:.2} | {:.2} | {share:.2} | {api:.2} | {:.2} | {} |",
                floor - terraform,
                share - api,
                fmt_ratio(beside_plugin_floor(samples, w, phase))
            )
            .unwrap();
        }
    }
}

fn goals(
    md: &mut String,
    samples: &[Sample],
    workloads: &[(usize, String)],
    facts: &Facts,
    startup: &serde_json::Value,
    has_peer: bool,
) {
    let largest = workloads
        .iter()
        .filter(|(_, w)| w.contains("priority classes"))
        .max_by_key(|(n, _)| *n)
        .map(|(_, w)| w.clone())
        .unwrap_or_default();
    let fleets = workloads
        .iter()
        .find(|(_, w)| w.contains("fleets"))
        .map(|(_, w)| w.clone())
        .unwrap_or_default();
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "met",
        Some(false) => "**not met**",
        None => "not measured",
    };
    writeln!(md, "\n## Goals\n\n| goal | measured | |\n|---|---|---|").unwrap();
    let r = |provider: &str, phase: &str, against: &str| {
        ratio(
            &wall(samples, &largest, provider, phase),
            &wall(samples, &largest, against, phase),
        )
    };
    for phase in ["plan", "apply"] {
        let x = beside_plugin_floor(samples, &largest, phase);
        writeln!(
            md,
            "| {} of {largest} ≤ 1.2× (plugin floor + API server time) | {} | {} |",
            if phase == "plan" { "refresh" } else { phase },
            fmt_ratio(x),
            verdict(x.map(|x| x <= 1.2))
        )
        .unwrap();
    }
    let plan_floor = r("gpufleet", "plan", "terraform_data");
    writeln!(
        md,
        "| refresh of {largest} ≤ 1.5× terraform_data | {} | {} |",
        fmt_ratio(plan_floor),
        verdict(plan_floor.map(|x| x <= 1.5))
    )
    .unwrap();
    let plan_peer = r("gpufleet", "plan", "peer");
    writeln!(
        md,
        "| refresh of {largest} ≤ 0.5× hashicorp/kubernetes | {} | {} |",
        fmt_ratio(plan_peer),
        verdict(plan_peer.map(|x| x <= 0.5))
    )
    .unwrap();
    for phase in ["apply", "destroy"] {
        let x = r("gpufleet", phase, "terraform_data");
        writeln!(
            md,
            "| {phase} of {largest} ≤ 1.1× terraform_data | {} | {} |",
            fmt_ratio(x),
            verdict(x.map(|x| x <= 1.1))
        )
        .unwrap();
    }
    for phase in PHASES {
        let x = ratio(
            &wall(samples, &fleets, "peer", phase),
            &wall(samples, &fleets, "gpufleet", phase),
        );
        writeln!(
            md,
            "| {fleets}, {phase}: ≥ 10× faster than kubernetes_manifest | {} | {} |",
            x.map_or("–".into(), |x| format!("{x:.1}× faster")),
            verdict(if has_peer { x.map(|x| x >= 10.0) } else { None })
        )
        .unwrap();
    }
    let rss = PHASES
        .iter()
        .filter_map(|phase| {
            stat(&select(samples, &largest, "gpufleet", phase), |s| {
                s.provider_peak_kib as f64 / 1024.0
            })
        })
        .map(|s| s.max)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    writeln!(
        md,
        "| provider peak RSS at {largest} ≤ 25 MiB | {} | {} |",
        rss.map_or("–".into(), |x| format!(
            "{x:.1} MiB (largest of all runs)"
        )),
        verdict(rss.map(|x| x <= 25.0))
    )
    .unwrap();
    let handshake = startup["median_ms"].as_f64();
    writeln!(
        md,
        "| exec → handshake ≤ 5 ms with AutoMTLS | {} | {} |",
        handshake.map_or("–".into(), |x| format!("{x:.2} ms (median)")),
        verdict(handshake.map(|x| x <= 5.0))
    )
    .unwrap();
    let mib = facts.gpufleet_binary_bytes as f64 / 1048576.0;
    writeln!(
        md,
        "| stripped binary ≤ 15 MiB | {mib:.1} MiB | {} |",
        verdict(Some(mib <= 15.0))
    )
    .unwrap();
}

/// Wall time against N for the priority-class workloads: one panel per
/// phase, one line per provider with min–max whiskers.
fn chart(samples: &[Sample], has_peer: bool) -> String {
    let sizes: Vec<usize> = {
        let mut s: Vec<usize> = samples
            .iter()
            .filter(|s| s.workload.contains("priority classes"))
            .map(|s| s.count)
            .collect();
        s.sort();
        s.dedup();
        s
    };
    let providers: Vec<(&str, &str)> = [
        ("terraform_data", "#888888"),
        ("plugin-floor", "#2ca02c"),
        ("gpufleet", "#1f77b4"),
        ("peer", "#d62728"),
    ]
    .into_iter()
    .filter(|(p, _)| has_peer || *p != "peer")
    .collect();
    let (panel_w, panel_h, left, top, bottom) = (300.0, 260.0, 55.0, 40.0, 45.0);
    let width = left + panel_w * 3.0 + 20.0;
    let height = top + panel_h + bottom + 30.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let stat_of = |provider: &str, phase: &str, n: usize| {
        stat(
            &samples
                .iter()
                .filter(|s| {
                    s.provider == provider
                        && s.phase == phase
                        && s.count == n
                        && s.workload.contains("priority classes")
                })
                .collect::<Vec<_>>(),
            |s| s.wall_s,
        )
    };
    for (i, phase) in PHASES.iter().enumerate() {
        let x0 = left + panel_w * i as f64;
        let (plot_w, plot_h) = (panel_w - 40.0, panel_h);
        let max_y = providers
            .iter()
            .flat_map(|(p, _)| {
                sizes
                    .iter()
                    .filter_map(|&n| stat_of(p, phase, n).map(|s| s.max))
            })
            .fold(0.1, f64::max)
            * 1.1;
        let max_x = *sizes.last().unwrap_or(&1) as f64;
        let px = |n: usize| x0 + plot_w * n as f64 / max_x;
        let py = |y: f64| top + plot_h * (1.0 - y / max_y);
        writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{phase}</text>",
            x0 + plot_w / 2.0,
            top - 15.0
        )
        .unwrap();
        writeln!(svg, "<line x1=\"{x0}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{x0}\" y1=\"{top}\" x2=\"{x0}\" y2=\"{}\" stroke=\"black\"/>", top + plot_h, x0 + plot_w, top + plot_h, top + plot_h).unwrap();
        for k in 0..=4 {
            let y = max_y * k as f64 / 4.0;
            writeln!(svg, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{y:.1}</text><line x1=\"{x0}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#eeeeee\"/>", x0 - 4.0, py(y) + 4.0, py(y), x0 + plot_w, py(y)).unwrap();
        }
        for &n in &sizes {
            writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{n}</text>",
                px(n),
                top + plot_h + 16.0
            )
            .unwrap();
        }
        writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">priority classes (N)</text>",
            x0 + plot_w / 2.0,
            top + plot_h + 34.0
        )
        .unwrap();
        if i == 0 {
            writeln!(svg, "<text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">wall time, s</text>", top + plot_h / 2.0, top + plot_h / 2.0).unwrap();
        }
        for (provider, colour) in &providers {
            let points: Vec<(usize, Stat)> = sizes
                .iter()
                .filter_map(|&n| stat_of(provider, phase, n).map(|s| (n, s)))
                .collect();
            let path: Vec<String> = points
                .iter()
                .map(|(n, s)| format!("{:.1},{:.1}", px(*n), py(s.median)))
                .collect();
            writeln!(
                svg,
                "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
                path.join(" ")
            )
            .unwrap();
            for (n, s) in &points {
                writeln!(svg, "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"{colour}\"/><circle cx=\"{x}\" cy=\"{}\" r=\"3\" fill=\"{colour}\"/>", py(s.min), py(s.max), py(s.median), x = px(*n)).unwrap();
            }
        }
    }
    for (k, (provider, colour)) in providers.iter().enumerate() {
        let x = left + 120.0 * k as f64;
        let y = height - 10.0;
        writeln!(svg, "<rect x=\"{x}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{colour}\"/><text x=\"{}\" y=\"{y}\">{provider}</text>", y - 6.0, x + 20.0).unwrap();
    }
    svg.push_str("</svg>\n");
    svg
}
