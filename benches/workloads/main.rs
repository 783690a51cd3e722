//! The workload benchmark (`make bench`): terraform apply from empty, a
//! no-op plan (refresh) and destroy of N priority classes, 50 fleets,
//! taints on 50 nodes and one taint over 1,000 nodes (a selector), through
//! gpufleet, as `terraform_data` (Terraform's
//! own cost), for priority classes through the plugin floor (what a plugin
//! made with terraform-plugin-framework costs before any API call;
//! benches/plugin-floor, built by `testbed/build.sh plugin-floor`) and, when
//! GPUFLEET_BENCH_PEER names a hashicorp/kubernetes provider binary, through
//! it. The one taint over 1,000 nodes is also set and removed with
//! `kubectl taint nodes -l` (and read with `kubectl get nodes -l`), the
//! anchor of doing it by hand, and both run as the audited user, so the
//! requests counted for it are exactly theirs. Runs alternate (provider by
//! provider within each repetition) so that
//! a busy moment on the machine hits all of them alike. Also: per-RPC server-side latency
//! from the provider's TRACE log at -parallelism=10 and 50, and sequential
//! call latency on both networks the plugin can serve on. With
//! GPUFLEET_BENCH_BUILDS, instead: two builds side by side (builds.rs).
//!
//! Needs a control plane of its own (scripts/bench.sh starts one) named by
//! GPUFLEET_BENCH_KUBECONFIG. Writes target/bench/{results.json,
//! benchmarks.md, wall-time.svg}.

mod builds;
mod config;
mod report;
mod run;
mod transport;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::apiserver_metrics::{Counts, scrape};
use config::{KUBECTL_TAINT, NODE_PREFIX, Provider, Versions, WIDE_LABEL, WIDE_PREFIX, Workload};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use serde::Serialize;

const PHASES: [&str; 3] = ["apply", "plan", "destroy"];
const NODES: usize = 50;
/// How many nodes one taint goes over (GPUFLEET_BENCH_TAINT_OVER).
const WIDE_NODES: usize = 1000;
/// `-parallelism` of the measured runs (Terraform's default).
pub(crate) const PARALLELISM: usize = 10;

#[derive(Serialize, Clone)]
pub(crate) struct Sample {
    pub(crate) workload: String,
    pub(crate) count: usize,
    pub(crate) provider: &'static str,
    pub(crate) phase: &'static str,
    pub(crate) wall_s: f64,
    pub(crate) provider_peak_kib: u64,
    pub(crate) provider_cpu_s: f64,
    pub(crate) provider_launches: usize,
    /// Requests to the workload's resource, by verb; plus discovery. For
    /// one taint over many nodes, those of the audited user alone.
    pub(crate) requests: BTreeMap<String, u64>,
    /// The API server's time answering them, added up (WATCH left out).
    pub(crate) api_s: f64,
    pub(crate) load: common::measure::Load,
}

#[derive(Clone)]
struct Bench {
    cli: PathBuf,
    kubeconfig: String,
    /// The kubeconfig of the user whose requests the cluster audits.
    counted_kubeconfig: String,
    kubectl: PathBuf,
    /// kubectl's discovery cache, warm after its first command, as a
    /// person's is.
    kubectl_cache: PathBuf,
    cli_config: PathBuf,
    runs: usize,
    parallelism: usize,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let kubeconfig = env("GPUFLEET_BENCH_KUBECONFIG")
        .expect("GPUFLEET_BENCH_KUBECONFIG: run through scripts/bench.sh, which starts a cluster");
    let binary = env("GPUFLEET_BENCH_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/release/terraform-provider-gpufleet"));
    let peer = env("GPUFLEET_BENCH_PEER").map(PathBuf::from);
    let sizes: Vec<usize> = env("GPUFLEET_BENCH_SIZES")
        .unwrap_or_else(|| "100,500".into())
        .split(',')
        .map(|n| n.trim().parse().expect("GPUFLEET_BENCH_SIZES: numbers"))
        .collect();
    let wide_nodes = env("GPUFLEET_BENCH_TAINT_OVER").map_or(WIDE_NODES, |n| {
        n.parse().expect("GPUFLEET_BENCH_TAINT_OVER: a number")
    });
    let mut workloads: Vec<Workload> = sizes
        .iter()
        .map(|&n| Workload::PriorityClasses(n))
        .collect();
    workloads.push(Workload::Fleets(50));
    workloads.push(Workload::Taints(NODES));
    workloads.push(Workload::TaintOver(wide_nodes));
    // GPUFLEET_BENCH_WORKLOADS: only those whose slug starts with one of these.
    if let Some(only) = env("GPUFLEET_BENCH_WORKLOADS") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        workloads.retain(|w| only.iter().any(|o| w.slug().starts_with(o)));
    }
    // The plugin floor is a Go build: needed only for the workloads it has.
    let with_plugin_floor = workloads.iter().any(|&w| Provider::PluginFloor.measures(w));
    let plugin_floor = root.join("target/tools/bin/plugin-floor");
    assert!(
        plugin_floor.exists() || !with_plugin_floor,
        "no plugin floor at {}: run `bash testbed/build.sh plugin-floor` (scripts/bench.sh does)",
        plugin_floor.display()
    );
    let out = root.join("target/bench");
    std::fs::create_dir_all(&out).unwrap();
    let cli = env("GPUFLEET_BENCH_CLI")
        .map(PathBuf::from)
        .unwrap_or_else(|| "terraform".into());

    let gpufleet_version = env!("CARGO_PKG_VERSION");
    let peer_version = peer.as_deref().map(peer_version);
    let plugin_floor_version = plugin_floor_version(&root);
    let versions = Versions {
        gpufleet: gpufleet_version,
        peer: peer_version.as_deref(),
        plugin_floor: Some(&plugin_floor_version),
    };
    let mut installed = vec![Installed {
        source: "gpufleet/gpufleet",
        version: versions.gpufleet,
        binary: &binary,
    }];
    if with_plugin_floor {
        installed.push(Installed {
            source: "gpufleet/pluginfloor",
            version: &plugin_floor_version,
            binary: &plugin_floor,
        });
    }
    if let (Some(peer), Some(version)) = (&peer, versions.peer) {
        installed.push(Installed {
            source: "hashicorp/kubernetes",
            version,
            binary: peer,
        });
    }
    let cli_config = provider_mirror(&out.join("mirror"), &installed);
    let bench = Bench {
        cli,
        counted_kubeconfig: common::audit::counted_kubeconfig_beside(&kubeconfig),
        kubeconfig,
        kubectl: root.join("target/tools/bin/kubectl"),
        kubectl_cache: out.join("kubectl-cache"),
        cli_config,
        runs: env("GPUFLEET_BENCH_RUNS").map_or(5, |r| r.parse().unwrap()),
        parallelism: PARALLELISM,
    };

    let runtime = tokio::runtime::Runtime::new().unwrap();
    gpufleet::protocol::tls::install_crypto_provider();
    let client = runtime.block_on(async {
        let kubeconfig = kube::config::Kubeconfig::read_from(&bench.kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    });
    if let Some(spec) = env("GPUFLEET_BENCH_BUILDS") {
        let largest = *sizes.iter().max().unwrap();
        builds::compare(&spec, &bench, &client, &runtime, largest, &out);
        return;
    }
    runtime.block_on(create_nodes(&client, wide_nodes));

    eprintln!("transport: sequential calls on tcp and unix");
    let transport = runtime.block_on(transport::compare(2000));

    let mut providers = vec![Provider::Gpufleet, Provider::TerraformData];
    if with_plugin_floor {
        providers.push(Provider::PluginFloor);
    }
    if peer.is_some() {
        providers.push(Provider::Peer);
    }
    providers.push(Provider::Kubectl);

    let mut workspaces = BTreeMap::new();
    for &workload in &workloads {
        for &provider in providers.iter().filter(|p| p.measures(workload)) {
            let dir = out
                .join("work")
                .join(format!("{}-{}", workload.slug(), provider.label()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            workspaces.insert((workload.slug(), provider.label()), dir.clone());
            if provider == Provider::Kubectl {
                continue;
            }
            std::fs::write(
                dir.join("main.tf"),
                config::main_tf(
                    provider,
                    workload,
                    bench.kubeconfig_for(workload),
                    &versions,
                ),
            )
            .unwrap();
            bench.command(&dir, &["init", "-input=false", "-no-color"], &[]);
        }
    }

    let mut samples = Vec::new();
    for run in 1..=bench.runs {
        for &workload in &workloads {
            for &provider in providers.iter().filter(|p| p.measures(workload)) {
                let dir = &workspaces[&(workload.slug(), provider.label())];
                for phase in PHASES {
                    let sample = bench.phase(&runtime, &client, dir, workload, provider, phase);
                    eprintln!(
                        "run {run}/{}: {workload}, {}, {phase}: {:.2} s, load {:.2} → {:.2}",
                        bench.runs,
                        provider.label(),
                        sample.wall_s,
                        sample.load.before,
                        sample.load.after
                    );
                    samples.push(sample);
                }
            }
        }
    }

    // Per-RPC latency as the provider logs it (TRACE), at two parallelisms.
    let largest = Workload::PriorityClasses(*sizes.iter().max().unwrap());
    let mut latency = BTreeMap::new();
    // (Only when the priority classes ran: GPUFLEET_BENCH_WORKLOADS may leave them out.)
    let traced_dir = workspaces.get(&(largest.slug(), Provider::Gpufleet.label()));
    for (parallelism, dir) in [10, 50].into_iter().filter_map(|p| Some((p, traced_dir?))) {
        let traced = Bench {
            parallelism,
            ..bench.clone()
        };
        for phase in PHASES {
            let log = out.join(format!("trace-p{parallelism}-{phase}.log"));
            let _ = std::fs::remove_file(&log);
            let outcome = traced.command(
                dir,
                &traced.phase_args(phase),
                &[
                    ("TF_LOG_PROVIDER", "trace".into()),
                    ("TF_LOG_PATH", log.display().to_string()),
                ],
            );
            let rpcs = report::rpc_latencies(&std::fs::read_to_string(&log).unwrap_or_default());
            latency.insert((parallelism, phase), (outcome.wall.as_secs_f64(), rpcs));
        }
    }

    let startup = std::fs::read_to_string(out.join("startup.json")).ok();
    let facts = report::Facts::gather(
        &bench.cli,
        &binary,
        peer.as_deref(),
        peer_version.as_deref(),
        &plugin_floor,
        &plugin_floor_version,
        &bench.kubeconfig,
    );
    report::write(
        &out,
        &facts,
        &samples,
        &latency,
        &transport,
        startup.as_deref(),
    );
    eprintln!("wrote {}", out.join("benchmarks.md").display());
}

impl Bench {
    /// The kubeconfig a workload's configuration uses: the audited user's
    /// for one taint over many nodes, whose requests are counted exactly.
    fn kubeconfig_for(&self, workload: Workload) -> &str {
        match workload {
            Workload::TaintOver(_) => &self.counted_kubeconfig,
            _ => &self.kubeconfig,
        }
    }

    /// What a person types for `phase` of one taint over the nodes.
    fn kubectl_args(&self, phase: &str) -> Vec<String> {
        let selector = format!("{}={}", WIDE_LABEL.0, WIDE_LABEL.1);
        let mut args: Vec<String> = match phase {
            "apply" => vec![
                "taint".into(),
                "nodes".into(),
                "-l".into(),
                selector,
                format!("{KUBECTL_TAINT}=x:NoSchedule"),
                "--overwrite".into(),
            ],
            "plan" => vec!["get".into(), "nodes".into(), "-l".into(), selector],
            "destroy" => vec![
                "taint".into(),
                "nodes".into(),
                "-l".into(),
                selector,
                format!("{KUBECTL_TAINT}:NoSchedule-"),
            ],
            other => unreachable!("phase {other}"),
        };
        args.extend([
            "--kubeconfig".into(),
            self.counted_kubeconfig.clone(),
            "--cache-dir".into(),
            self.kubectl_cache.display().to_string(),
        ]);
        args
    }

    fn kubectl(&self, dir: &Path, phase: &str) -> run::Outcome {
        let args = self.kubectl_args(phase);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let outcome = run::run(&self.kubectl, &args, dir, &[]);
        assert_eq!(
            outcome.exit_code,
            0,
            "kubectl {} failed:\n{}",
            args.join(" "),
            outcome.stderr
        );
        outcome
    }

    fn phase_args(&self, phase: &str) -> Vec<String> {
        let parallelism = format!("-parallelism={}", self.parallelism);
        let mut args: Vec<String> = match phase {
            "apply" => vec!["apply".into(), "-auto-approve".into()],
            // A no-op plan: everything refreshed, nothing to change.
            "plan" => vec!["plan".into(), "-detailed-exitcode".into()],
            "destroy" => vec!["destroy".into(), "-auto-approve".into()],
            other => unreachable!("phase {other}"),
        };
        args.extend(["-input=false".into(), "-no-color".into(), parallelism]);
        args
    }

    fn command<S: AsRef<str>>(
        &self,
        dir: &Path,
        args: &[S],
        extra: &[(&str, String)],
    ) -> run::Outcome {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let mut env = vec![("TF_CLI_CONFIG_FILE", self.cli_config.display().to_string())];
        env.extend(extra.iter().cloned());
        let outcome = run::run(&self.cli, &args, dir, &env);
        assert_eq!(
            outcome.exit_code,
            0,
            "{} {} in {} failed:\n{}\n{}",
            self.cli.display(),
            args.join(" "),
            dir.display(),
            outcome.stdout,
            outcome.stderr
        );
        outcome
    }

    fn phase(
        &self,
        runtime: &tokio::runtime::Runtime,
        client: &kube::Client,
        dir: &Path,
        workload: Workload,
        provider: Provider,
        phase: &'static str,
    ) -> Sample {
        let before = runtime.block_on(scrape(client));
        let command = || match provider {
            Provider::Kubectl => self.kubectl(dir, phase),
            _ => self.command(dir, &self.phase_args(phase), &[]),
        };
        let (audited, (outcome, load)) = match workload {
            Workload::TaintOver(_) => {
                let (audited, measured) = common::audit::counted_with(&self.kubeconfig, || {
                    common::measure::around(command)
                });
                (Some(audited), measured)
            }
            _ => (None, common::measure::around(command)),
        };
        let counted = runtime.block_on(scrape(client)).since(&before);
        let requests = match audited {
            Some(audited) => audited_requests(&audited, workload),
            None => requests(&counted, workload),
        };
        Sample {
            workload: workload.to_string(),
            count: workload.count(),
            provider: provider.label(),
            phase,
            wall_s: outcome.wall.as_secs_f64(),
            provider_peak_kib: outcome.provider_peak_kib,
            provider_cpu_s: outcome.provider_cpu.as_secs_f64(),
            provider_launches: outcome.provider_launches,
            requests,
            api_s: counted.seconds_on(workload.api_resource()),
            load,
        }
    }
}

fn requests(counted: &Counts, workload: Workload) -> BTreeMap<String, u64> {
    let mut by_verb = counted.by_verb(workload.api_resource());
    let discovery = counted.discovery();
    if discovery > 0 {
        by_verb.insert("discovery".into(), discovery);
    }
    by_verb
}

fn audited_requests(counted: &common::audit::Counts, workload: Workload) -> BTreeMap<String, u64> {
    let mut by_verb = counted.by_verb(workload.api_resource());
    let discovery = counted.discovery();
    if discovery > 0 {
        by_verb.insert("discovery".into(), discovery);
    }
    by_verb
}

/// The taint workload's nodes, and the `wide` nodes one taint goes over
/// (labelled [`WIDE_LABEL`]), 16 created at a time.
async fn create_nodes(client: &kube::Client, wide: usize) {
    use futures::stream::{self, StreamExt};
    let nodes: Api<Node> = Api::all(client.clone());
    let plain = (0..NODES).map(|i| (format!("{NODE_PREFIX}{i}"), None));
    let labelled = (0..wide).map(|i| {
        let labels = [(WIDE_LABEL.0.to_string(), WIDE_LABEL.1.to_string())];
        (format!("{WIDE_PREFIX}{i}"), Some(labels.into()))
    });
    let create = |(name, labels): (String, Option<BTreeMap<String, String>>)| {
        let nodes = &nodes;
        async move {
            let node = Node {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    labels,
                    ..Default::default()
                },
                ..Default::default()
            };
            match nodes.create(&PostParams::default(), &node).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => panic!("create node {name}: {e}"),
            }
        }
    };
    stream::iter(plain.chain(labelled))
        .for_each_concurrent(16, create)
        .await;
}

/// `terraform-provider-kubernetes_v3.2.1` → `3.2.1`, else GPUFLEET_BENCH_PEER_VERSION.
fn peer_version(binary: &Path) -> String {
    let name = binary.file_name().unwrap().to_string_lossy();
    name.rsplit_once("_v")
        .map(|(_, v)| v.to_string())
        .filter(|v| v.split('.').count() == 3)
        .or_else(|| env("GPUFLEET_BENCH_PEER_VERSION"))
        .unwrap_or_else(|| {
            panic!("cannot tell the peer's version from {name}; set GPUFLEET_BENCH_PEER_VERSION")
        })
}

/// The plugin floor's version: the terraform-plugin-framework version its
/// go.mod requires (`v1.19.0` → `1.19.0`).
fn plugin_floor_version(root: &Path) -> String {
    let go_mod = root.join("benches/plugin-floor/go.mod");
    std::fs::read_to_string(&go_mod)
        .unwrap_or_else(|e| panic!("{}: {e}", go_mod.display()))
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("require github.com/hashicorp/terraform-plugin-framework v")
        })
        .unwrap_or_else(|| {
            panic!(
                "{} requires no terraform-plugin-framework",
                go_mod.display()
            )
        })
        .to_string()
}

/// A provider binary the bench installs from its mirror.
pub(crate) struct Installed<'a> {
    /// `namespace/type`, on registry.terraform.io.
    pub(crate) source: &'a str,
    pub(crate) version: &'a str,
    pub(crate) binary: &'a Path,
}

/// A filesystem mirror with `providers`, and a CLI config using it for them.
fn provider_mirror(mirror: &Path, providers: &[Installed<'_>]) -> PathBuf {
    let _ = std::fs::remove_dir_all(mirror);
    let mut included = Vec::new();
    for provider in providers {
        let kind = provider.source.rsplit('/').next().unwrap();
        let dir = mirror.join(format!(
            "registry.terraform.io/{}/{}/linux_amd64",
            provider.source, provider.version
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(
            std::fs::canonicalize(provider.binary)
                .unwrap_or_else(|e| panic!("{}: {e}", provider.binary.display())),
            dir.join(format!("terraform-provider-{kind}_v{}", provider.version)),
        )
        .unwrap();
        included.push(format!("\"registry.terraform.io/{}\"", provider.source));
    }
    let list = included.join(", ");
    let config = mirror.join("cli.tfrc");
    std::fs::write(
        &config,
        format!(
            "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [{list}]\n  }}\n  direct {{\n    exclude = [{list}]\n  }}\n}}\n",
            mirror.display()
        ),
    )
    .unwrap();
    config
}
