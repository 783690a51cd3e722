//! Two builds of gpufleet side by side, for a change whose effect must be
//! measured before it is kept (GPUFLEET_BENCH_BUILDS="label=path,label=path"):
//! apply from empty and a no-op plan (refresh) of N priority classes at
//! `-parallelism=10` and `50`. Runs alternate between the builds, the order
//! flipped every run, so that a busy moment on the machine hits both alike;
//! between runs the objects are deleted through the API and the state file
//! removed, which is quicker than a destroy and leaves the next apply the
//! same empty start. Writes target/bench/builds.{json,md}.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::DeleteParams;
use serde::Serialize;

use crate::config::{self, Provider, Versions, Workload};
use crate::{Bench, Installed, provider_mirror};
use common::apiserver_metrics::scrape;
use common::measure::{self, Load, spread};

const PARALLELISMS: [usize; 2] = [10, 50];
const PHASES: [&str; 2] = ["apply", "plan"];

#[derive(Serialize)]
struct Sample {
    build: String,
    run: usize,
    parallelism: usize,
    phase: &'static str,
    wall_s: f64,
    provider_cpu_s: f64,
    provider_connections: usize,
    provider_peak_kib: u64,
    /// Requests to priorityclasses the API server counted, all verbs.
    requests: u64,
    load: Load,
}

struct Build {
    label: String,
    binary: PathBuf,
    bench: Bench,
    dir: PathBuf,
}

/// `label=path,label=path` → (label, path) pairs.
fn parse(spec: &str) -> Vec<(String, PathBuf)> {
    spec.split(',')
        .map(|pair| {
            let (label, path) = pair
                .split_once('=')
                .expect("GPUFLEET_BENCH_BUILDS: label=path,label=path");
            (label.trim().to_string(), PathBuf::from(path.trim()))
        })
        .collect()
}

pub(crate) fn compare(
    spec: &str,
    base: &Bench,
    client: &kube::Client,
    runtime: &tokio::runtime::Runtime,
    count: usize,
    out: &Path,
) {
    let versions = Versions {
        gpufleet: env!("CARGO_PKG_VERSION"),
        peer: None,
        plugin_floor: None,
    };
    let workload = Workload::PriorityClasses(count);
    let builds: Vec<Build> = parse(spec)
        .into_iter()
        .enumerate()
        .map(|(i, (label, binary))| {
            let cli_config = provider_mirror(
                &out.join(format!("mirror-build-{i}")),
                &[Installed {
                    source: "gpufleet/gpufleet",
                    version: versions.gpufleet,
                    binary: &binary,
                }],
            );
            let dir = out.join("work").join(format!("builds-{i}"));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("main.tf"),
                config::main_tf(Provider::Gpufleet, workload, &base.kubeconfig, &versions),
            )
            .unwrap();
            let bench = Bench {
                cli_config,
                ..base.clone()
            };
            bench.command(&dir, &["init", "-input=false", "-no-color"], &[]);
            Build {
                label,
                binary,
                bench,
                dir,
            }
        })
        .collect();
    assert_eq!(builds.len(), 2, "GPUFLEET_BENCH_BUILDS names two builds");

    let api: Api<PriorityClass> = Api::all(client.clone());
    runtime.block_on(clean(&api, count));
    let mut samples = Vec::new();
    for run in 1..=base.runs {
        let order: Vec<&Build> = if run % 2 == 1 {
            builds.iter().collect()
        } else {
            builds.iter().rev().collect()
        };
        for parallelism in PARALLELISMS {
            for build in &order {
                let bench = Bench {
                    parallelism,
                    ..build.bench.clone()
                };
                for phase in PHASES {
                    let before = runtime.block_on(scrape(client));
                    let (outcome, load) = measure::around(|| {
                        bench.command(&build.dir, &bench.phase_args(phase), &[])
                    });
                    let counted = runtime.block_on(scrape(client)).since(&before);
                    let sample = Sample {
                        build: build.label.clone(),
                        run,
                        parallelism,
                        phase,
                        wall_s: outcome.wall.as_secs_f64(),
                        provider_cpu_s: outcome.provider_cpu.as_secs_f64(),
                        provider_connections: outcome.provider_connections,
                        provider_peak_kib: outcome.provider_peak_kib,
                        requests: counted.by_verb(workload.api_resource()).values().sum(),
                        load,
                    };
                    eprintln!(
                        "run {run}/{}: {}, -parallelism={parallelism}, {phase}: {:.2} s, {} connections, load {:.2} → {:.2}",
                        base.runs,
                        build.label,
                        sample.wall_s,
                        sample.provider_connections,
                        load.before,
                        load.after
                    );
                    samples.push(sample);
                }
                for state in ["terraform.tfstate", "terraform.tfstate.backup"] {
                    let _ = std::fs::remove_file(build.dir.join(state));
                }
                runtime.block_on(clean(&api, count));
            }
        }
        // After every run, so that an interrupted bench keeps what it measured.
        std::fs::write(
            out.join("builds.json"),
            serde_json::to_string_pretty(&samples).unwrap(),
        )
        .unwrap();
        std::fs::write(out.join("builds.md"), report(&builds, &samples, count)).unwrap();
    }
    eprintln!("wrote {}", out.join("builds.md").display());
}

/// Deletes the workload's priority classes (those already gone count as deleted).
async fn clean(api: &Api<PriorityClass>, count: usize) {
    futures::stream::iter(0..count)
        .map(|i| async move {
            match api
                .delete(&format!("bench-pc-{i}"), &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => panic!("delete priority class bench-pc-{i}: {e}"),
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

fn report(builds: &[Build], samples: &[Sample], count: usize) -> String {
    let (a, b) = (&builds[0].label, &builds[1].label);
    let runs = samples.iter().map(|s| s.run).max().unwrap_or(0);
    let loads: Vec<Load> = samples.iter().map(|s| s.load).collect();
    let mut md = String::new();
    writeln!(
        md,
        "{count} priority classes, {runs} runs alternating between the builds (order flipped every run); median (min–max). Paired: {b} ÷ {a} within each run, median (min–max). One-minute load average {}.\n",
        measure::summary(&loads, measure::cores())
    )
    .unwrap();
    for build in builds {
        writeln!(md, "- {}: `{}`", build.label, build.binary.display()).unwrap();
    }
    writeln!(
        md,
        "\n| parallelism | phase | {a} wall s | {b} wall s | paired {b} ÷ {a} | {a} CPU s | {b} CPU s | {a} connections | {b} connections | requests |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    .unwrap();
    for parallelism in PARALLELISMS {
        for phase in PHASES {
            let of = |label: &str| -> Vec<&Sample> {
                samples
                    .iter()
                    .filter(|s| {
                        s.build == label && s.parallelism == parallelism && s.phase == phase
                    })
                    .collect()
            };
            let (sa, sb) = (of(a.as_str()), of(b.as_str()));
            let mut paired: Vec<f64> = sa
                .iter()
                .filter_map(|x| {
                    let y = sb.iter().find(|y| y.run == x.run)?;
                    Some(y.wall_s / x.wall_s)
                })
                .collect();
            let paired = if paired.is_empty() {
                "–".to_string()
            } else {
                let (median, min, max) = spread(&mut paired);
                format!("{median:.2} ({min:.2}–{max:.2})")
            };
            let mut requests: Vec<u64> = sa.iter().chain(&sb).map(|s| s.requests).collect();
            requests.sort();
            requests.dedup();
            let requests: Vec<String> = requests.iter().map(u64::to_string).collect();
            writeln!(
                md,
                "| {parallelism} | {phase} | {} | {} | {paired} | {} | {} | {} | {} | {} |",
                stat(&sa, |s| s.wall_s, 2),
                stat(&sb, |s| s.wall_s, 2),
                stat(&sa, |s| s.provider_cpu_s, 2),
                stat(&sb, |s| s.provider_cpu_s, 2),
                stat(&sa, |s| s.provider_connections as f64, 0),
                stat(&sb, |s| s.provider_connections as f64, 0),
                requests.join(", ")
            )
            .unwrap();
        }
    }
    md
}

/// Median (min–max) of `value` over `chosen`, with `digits` decimals.
fn stat(chosen: &[&Sample], value: impl Fn(&Sample) -> f64, digits: usize) -> String {
    let mut values: Vec<f64> = chosen.iter().map(|s| value(s)).collect();
    if values.is_empty() {
        return "–".to_string();
    }
    let (median, min, max) = spread(&mut values);
    format!("{median:.digits$} ({min:.digits$}–{max:.digits$})")
}
