//! Startup benchmark: time from exec to the handshake line on stdout, the
//! way Terraform starts the provider (with AutoMTLS on, so certificate
//! generation is included), plus resident memory at that point and the
//! binary's size. Run: `cargo bench --bench startup` (or `make bench`);
//! the figures also go to target/bench/startup.json for the workload
//! bench's report.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 50;

fn main() {
    let binary = std::env::var("GPUFLEET_BENCH_BINARY").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/target/release/terraform-provider-gpufleet"
        )
        .to_string()
    });
    let size = std::fs::metadata(&binary)
        .unwrap_or_else(|e| panic!("{binary}: {e}; build it first (cargo build --release)"))
        .len();
    let client_cert = client_certificate();

    let mut times = Vec::with_capacity(RUNS);
    let mut rss_kib = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let mut child = Command::new(&binary)
            .env(
                "TF_PLUGIN_MAGIC_COOKIE",
                "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
            )
            .env("PLUGIN_PROTOCOL_VERSIONS", "5,6")
            .env("PLUGIN_MIN_PORT", "10000")
            .env("PLUGIN_MAX_PORT", "25000")
            .env("PLUGIN_CLIENT_CERT", &client_cert)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start provider");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        times.push(started.elapsed());
        assert!(
            line.starts_with("1|6|unix|") || line.starts_with("1|6|tcp|127.0.0.1:"),
            "unexpected handshake: {line}"
        );
        rss_kib.push(rss(child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    times.sort();
    rss_kib.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("binary: {binary}");
    println!(
        "binary size: {:.1} MiB ({size} bytes)",
        size as f64 / (1024.0 * 1024.0)
    );
    println!(
        "exec -> handshake line, {RUNS} runs with AutoMTLS: min {:.2} ms, median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        ms(times[0]),
        ms(times[RUNS / 2]),
        ms(times[RUNS * 95 / 100]),
        ms(times[RUNS - 1])
    );
    println!(
        "resident memory at handshake: median {} KiB, max {} KiB",
        rss_kib[RUNS / 2],
        rss_kib[RUNS - 1]
    );
    let out = concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench");
    std::fs::create_dir_all(out).unwrap();
    let json = serde_json::json!({
        "runs": RUNS,
        "median_ms": ms(times[RUNS / 2]),
        "p95_ms": ms(times[RUNS * 95 / 100]),
        "max_ms": ms(times[RUNS - 1]),
        "rss_median_kib": rss_kib[RUNS / 2],
        "binary_bytes": size,
    });
    std::fs::write(format!("{out}/startup.json"), json.to_string()).unwrap();
}

fn rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn client_certificate() -> String {
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}
