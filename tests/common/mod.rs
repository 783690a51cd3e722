//! Shared by the integration tests: where the cluster is, unique names.
#![allow(dead_code)] // each test binary uses its own part

pub mod apiserver_metrics;
pub mod fixtures;
pub mod lossy_network;
pub mod pinging_client;
pub mod terraform;

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cluster under test: GPUFLEET_TEST_KUBECONFIG (any cluster, e.g. kind),
/// else the one `make cluster` started.
pub fn kubeconfig() -> String {
    let path = std::env::var("GPUFLEET_TEST_KUBECONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/cluster/kubeconfig"));
    assert!(
        path.exists(),
        "no cluster: {} does not exist. Run `make cluster` (or set GPUFLEET_TEST_KUBECONFIG).",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// `make test` sets GPUFLEET_REQUIRE_ALL: there every CLI (terraform, tofu
/// and the older ones of tests/compat.rs) and every cluster extra a test
/// looks for must be present, and nothing is skipped.
pub fn everything_required() -> bool {
    std::env::var_os("GPUFLEET_REQUIRE_ALL").is_some()
}

/// Says that `what` does not run here and why, where the user sees it even
/// when the test passes (libtest hides a passing test's `eprintln!`, but not
/// a direct write to stderr). Under `make test` a skip is a failure.
pub fn skipped(what: &str, why: &str) {
    assert!(
        !everything_required(),
        "{what} cannot run: {why} (GPUFLEET_REQUIRE_ALL is set, so nothing may be skipped)"
    );
    let _ = writeln!(std::io::stderr(), "SKIPPED {what}: {why}");
}

/// A kubeconfig naming a server where nothing listens.
pub fn unreachable_kubeconfig() -> &'static str {
    "apiVersion: v1\nkind: Config\nclusters:\n- name: nowhere\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\nusers:\n- name: nobody\n  user:\n    token: t\ncontexts:\n- name: nowhere\n  context:\n    cluster: nowhere\n    user: nobody\ncurrent-context: nowhere\n"
}

/// A copy of `kubeconfig` whose user acts as `user` (impersonation, which
/// the test clusters' admin may do), for RBAC set up by a test.
pub fn impersonating(kubeconfig: &str, user: &str) -> tempfile::NamedTempFile {
    let admin = std::fs::read_to_string(kubeconfig).unwrap();
    assert!(
        admin.contains("\n  user:\n"),
        "unexpected layout of {kubeconfig}"
    );
    let acting = admin.replacen("\n  user:\n", &format!("\n  user:\n    as: {user}\n"), 1);
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, acting.as_bytes()).unwrap();
    file
}

/// Names unique across test processes and runs sharing one cluster.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}-{}-{n}-{:x}", std::process::id(), nanos & 0xffff)
}

/// A Kubernetes client for checking objects behind Terraform's back.
pub async fn kube_client() -> kube::Client {
    gpufleet::protocol::tls::install_crypto_provider();
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Runs an async block from a synchronous acceptance test.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}
