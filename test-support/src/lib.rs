//! What the test tiers (tests/offline, tests/acceptance, tests/system)
//! share: where the cluster is, unique names, the Terraform harness,
//! fixtures, fault injection, a server's TLS bootstrap, and the seed
//! scenario, which `make demo` runs too.

pub mod apiserver_metrics;
pub mod audit;
pub mod exclusive;
pub mod fixtures;
pub mod go_module;
pub mod helm;
pub mod lossy_network;
pub mod measure;
pub mod pinging_client;
pub mod plugin;
pub mod scenario;
pub mod terraform;
pub mod tls_bootstrap;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("test-support/ is in the repository")
        .to_path_buf()
}

/// The provider binary cargo built for this test run. Cargo builds a
/// package's binaries for its integration tests, into the directory above
/// the test binaries' `deps/`; it tells only the tests' own crate where
/// (`CARGO_BIN_EXE_*`), not this one.
pub fn provider_binary() -> PathBuf {
    let test = std::env::current_exe().unwrap();
    let binary = test
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("terraform-provider-gpufleet"))
        .unwrap();
    assert!(
        binary.is_file(),
        "no provider binary at {} (beside the tests' deps/ directory, where cargo builds it)",
        binary.display()
    );
    binary
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

/// The kubeconfig the provider runs with: GPUFLEET_TEST_PROVIDER_KUBECONFIG
/// (`make test`: the cluster's user bound only to docs/rbac.yaml's roles),
/// else that user's kubeconfig beside the cluster's when there is one, else
/// the cluster's own, with a notice, since the provider then acts as the
/// admin and least privilege goes unproven (a failure under `make test`).
/// The tests' own checks behind Terraform's back use [`kubeconfig`].
pub fn provider_kubeconfig() -> String {
    if let Ok(path) = std::env::var("GPUFLEET_TEST_PROVIDER_KUBECONFIG") {
        assert!(
            std::path::Path::new(&path).exists(),
            "GPUFLEET_TEST_PROVIDER_KUBECONFIG={path} does not exist"
        );
        return path;
    }
    let beside = PathBuf::from(kubeconfig()).with_file_name("kubeconfig-provider");
    if beside.exists() {
        return beside.to_string_lossy().into_owned();
    }
    static NOTICE: std::sync::Once = std::sync::Once::new();
    NOTICE.call_once(|| {
        skipped(
            "running the provider as the least-privilege user",
            &format!(
                "neither GPUFLEET_TEST_PROVIDER_KUBECONFIG nor {} exists (testbed/cluster.sh writes it), so the provider acts as the cluster's admin",
                beside.display()
            ),
        )
    });
    kubeconfig()
}

/// `make test` sets GPUFLEET_REQUIRE_ALL: there every CLI (terraform, tofu
/// and the older ones of tests/acceptance/compat.rs) and every cluster extra a test
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
    kube_client_at(&kubeconfig()).await
}

/// A Kubernetes client of the kubeconfig at `path`.
pub async fn kube_client_at(path: &str) -> kube::Client {
    gpufleet::protocol::tls::install_crypto_provider();
    let kubeconfig = kube::config::Kubeconfig::read_from(path).unwrap();
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

/// Grants in `namespace` what docs/rbac.yaml's Role grants in the GPU
/// Operator's, to the identities cluster.sh binds it to (user and
/// ServiceAccount `gpufleet-provider`): what an operator does for the
/// namespace the provider's `gpu_operator_namespace` names.
pub async fn bind_operator_role(namespace: &str) {
    use gpufleet::kit::permissions::{ROLE_NAME, Scope, rules};
    use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
    use kube::api::{Api, Patch, PatchParams};
    let client = kube_client().await;
    let meta = kube::api::ObjectMeta {
        name: Some(ROLE_NAME.into()),
        namespace: Some(namespace.into()),
        ..Default::default()
    };
    let role = Role {
        metadata: meta.clone(),
        rules: Some(
            rules(&gpufleet::provider::permissions())
                .into_iter()
                .filter(|r| r.scope == Scope::OperatorNamespace)
                .map(|r| PolicyRule {
                    api_groups: Some(vec![r.group]),
                    resources: Some(vec![r.resource]),
                    verbs: r.verbs,
                    ..Default::default()
                })
                .collect(),
        ),
    };
    let subject = |kind: &str, name: &str, namespace: Option<&str>| Subject {
        kind: kind.into(),
        name: name.into(),
        namespace: namespace.map(str::to_string),
        api_group: (kind == "User").then(|| "rbac.authorization.k8s.io".into()),
    };
    let binding = RoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: ROLE_NAME.into(),
        },
        subjects: Some(vec![
            subject("User", "gpufleet-provider", None),
            subject("User", audit::COUNTED_USER, None),
            subject("ServiceAccount", "gpufleet-provider", Some("default")),
        ]),
    };
    let params = PatchParams::apply("gpufleet-tests").force();
    Api::<Role>::namespaced(client.clone(), namespace)
        .patch(ROLE_NAME, &params, &Patch::Apply(&role))
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(client, namespace)
        .patch(ROLE_NAME, &params, &Patch::Apply(&binding))
        .await
        .unwrap();
}
