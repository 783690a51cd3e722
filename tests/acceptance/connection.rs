//! How the provider reaches the cluster, through the real terraform and tofu
//! CLIs against the real API server: each way a connection fails is named
//! with its cause and the server, and TLS verification is on unless
//! `insecure = true`, which warns.
//!
//! The certificates come from `testbed/cluster.sh`: the API
//! server also serves an expired certificate for the TLS name
//! `expired.gpufleet.test` and a not-yet-valid one for
//! `future.gpufleet.test`, and `expired-client` is an expired client
//! certificate of the cluster's CA.

use std::path::{Path, PathBuf};

use common::fixtures::class;
use common::terraform::{PROVIDER_VERSION, Workspace, each_cli};
use common::unique_name;

/// The cluster's PKI directory, beside its kubeconfig; `None` for a cluster
/// that cluster.sh did not start (its certificates are not there).
fn pki() -> Option<PathBuf> {
    let dir = Path::new(&common::kubeconfig()).with_file_name("pki");
    dir.join("expired-server.crt").exists().then_some(dir)
}

/// The API server URL of the cluster under test.
fn server() -> String {
    let kubeconfig = kube::config::Kubeconfig::read_from(common::kubeconfig()).unwrap();
    kubeconfig.clusters[0]
        .cluster
        .as_ref()
        .and_then(|c| c.server.clone())
        .unwrap()
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A kubeconfig for `server` trusting `ca`, optionally checking the server's
/// certificate for `tls_server_name`, with the client certificate `user`
/// (a file stem in `pki`).
fn kubeconfig(
    dir: &Path,
    name: &str,
    ca: &Path,
    tls_server_name: Option<&str>,
    pki: &Path,
    user: &str,
) -> String {
    let read = |p: PathBuf| base64(&std::fs::read(p).unwrap());
    let tls_name = tls_server_name
        .map(|n| format!("    tls-server-name: {n}\n"))
        .unwrap_or_default();
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n{tls_name}users:\n- name: u\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
        server(),
        read(ca.to_path_buf()),
        read(pki.join(format!("{user}.crt"))),
        read(pki.join(format!("{user}.key"))),
    );
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// A certificate authority nobody here trusts, as PEM in `dir`.
fn stranger_ca(dir: &Path) -> PathBuf {
    let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "a stranger's CA");
    let key = rcgen::KeyPair::generate().unwrap();
    let path = dir.join("stranger-ca.crt");
    std::fs::write(&path, params.self_signed(&key).unwrap().pem()).unwrap();
    path
}

/// A loopback port where nothing listens (bound, then closed again).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The CLI's output as one line: Terraform wraps diagnostics and draws a
/// frame (`│`) around them.
fn flat(out: &str) -> String {
    out.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The error diagnostic of `resource` in flattened CLI output.
fn diagnostic_of<'a>(flat: &'a str, resource: &str) -> &'a str {
    let marker = format!("with {resource},");
    flat.split("Error: ")
        .find(|d| d.contains(&marker))
        .unwrap_or_else(|| panic!("no error for {resource} in:\n{flat}"))
}

fn preamble() -> String {
    format!(
        "terraform {{\n  required_providers {{\n    gpufleet = {{\n      source  = \"gpufleet/gpufleet\"\n      version = \"{PROVIDER_VERSION}\"\n    }}\n  }}\n}}\n\n"
    )
}

/// One way to fail: the provider block's settings, and what the
/// diagnostic must say (its summary first).
struct Case {
    name: &'static str,
    settings: String,
    expected: Vec<String>,
}

#[test]
fn each_connection_failure_names_its_cause_and_the_server() {
    let Some(pki) = pki() else {
        common::skipped(
            "each_connection_failure_names_its_cause_and_the_server",
            "the cluster has no cluster.sh certificates",
        );
        return;
    };
    let server = server();
    let ca = pki.join("ca.crt");
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str, tls_name: Option<&str>, user: &str| {
        format!(
            "  config_path = \"{}\"\n",
            kubeconfig(dir.path(), name, &ca, tls_name, &pki, user)
        )
    };
    let stranger = stranger_ca(dir.path());
    let refused_port = closed_port();
    let host = |host: &str, ca: &Path| {
        format!(
            "  host = \"{host}\"\n  cluster_ca_certificate = file(\"{}\")\n  token = \"unused\"\n",
            ca.display()
        )
    };
    let cases = [
        Case {
            name: "unknown_ca",
            settings: host(&server, &stranger),
            expected: vec![
                "Cannot reach Kubernetes: unknown certificate authority".into(),
                "not signed by a certificate authority gpufleet trusts".into(),
                format!("the API server {server}"),
            ],
        },
        Case {
            name: "name_mismatch",
            settings: config("name_mismatch", Some("elsewhere.gpufleet.test"), "provider"),
            expected: vec![
                "Cannot reach Kubernetes: certificate name mismatch".into(),
                "not valid for \"elsewhere.gpufleet.test\": it is for 127.0.0.1, ".into(),
                ", localhost, ".into(),
                format!("the API server {server}"),
            ],
        },
        Case {
            name: "expired_server",
            settings: config("expired_server", Some("expired.gpufleet.test"), "provider"),
            expected: vec![
                "Cannot reach Kubernetes: the API server's certificate has expired".into(),
                "expired at 2021-01-01 00:00:00 UTC".into(),
                format!("the API server {server}"),
            ],
        },
        Case {
            name: "future_server",
            settings: config("future_server", Some("future.gpufleet.test"), "provider"),
            expected: vec![
                "Cannot reach Kubernetes: the API server's certificate is not valid yet".into(),
                "valid only from 2099-01-01 00:00:00 UTC".into(),
                format!("the API server {server}"),
            ],
        },
        Case {
            name: "expired_client",
            settings: config("expired_client", None, "expired-client"),
            expected: vec![
                "Kubernetes did not accept the credentials".into(),
                "401 Unauthorized".into(),
                "the client certificate (CN=gpufleet-expired-client) expired at 2021-01-01 00:00:00 UTC"
                    .into(),
                format!("the API server {server}"),
            ],
        },
        Case {
            name: "refused",
            settings: host(&format!("https://127.0.0.1:{refused_port}"), &ca),
            expected: vec![
                "Cannot reach Kubernetes: connection refused".into(),
                format!("connecting to 127.0.0.1:{refused_port} was refused"),
                format!("the API server https://127.0.0.1:{refused_port}"),
            ],
        },
        Case {
            name: "unresolvable",
            settings: host("https://gpufleet-nowhere.invalid:6443", &ca),
            expected: vec![
                "Cannot reach Kubernetes: the host name does not resolve (DNS)".into(),
                "the host name \"gpufleet-nowhere.invalid\" does not resolve".into(),
                "the API server https://gpufleet-nowhere.invalid:6443".into(),
            ],
        },
        Case {
            name: "exec_plugin",
            settings: format!(
                "  host = \"{server}\"\n  cluster_ca_certificate = file(\"{}\")\n  exec = {{\n    api_version = \"client.authentication.k8s.io/v1\"\n    command     = \"sh\"\n    args        = [\"-c\", \"echo 'token service unavailable' >&2; exit 3\"]\n  }}\n",
                ca.display()
            ),
            expected: vec![
                "Cannot connect to Kubernetes: the exec credential plugin failed".into(),
                "the exec credential plugin `sh` exited with status 3, saying: token service unavailable"
                    .into(),
                format!("the API server {server}"),
            ],
        },
    ];
    // One configuration, one provider per case: a single apply meets every
    // failure, each in the diagnostic of its own resource.
    let mut main = preamble();
    for case in &cases {
        main.push_str(&format!(
            "provider \"gpufleet\" {{\n  alias = \"{}\"\n{}}}\n\n",
            case.name, case.settings
        ));
        let body = class(case.name, &unique_name("pc-conn"), 1, "")
            .replace("{\n", &format!("{{\n  provider = gpufleet.{}\n", case.name));
        main.push_str(&body);
    }
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        ws.config_raw(&main);
        let out = flat(&ws.apply_fails());
        for case in &cases {
            let diagnostic = diagnostic_of(&out, &format!("gpufleet_priority_class.{}", case.name));
            assert!(
                diagnostic.starts_with(&case.expected[0]),
                "{}: {}: summary is not {:?}:\n{diagnostic}",
                cli.name,
                case.name,
                case.expected[0]
            );
            for text in &case.expected[1..] {
                assert!(
                    diagnostic.contains(text.as_str()),
                    "{}: {}: {text:?} missing from:\n{diagnostic}",
                    cli.name,
                    case.name
                );
            }
        }
        ws.forget();
    });
}

/// `insecure = true` turns TLS verification off, so a kubeconfig trusting
/// the wrong CA works; configuring the provider warns at the attribute.
#[test]
fn insecure_turns_verification_off_and_warns() {
    let Some(pki) = pki() else {
        common::skipped(
            "insecure_turns_verification_off_and_warns",
            "the cluster has no cluster.sh certificates",
        );
        return;
    };
    each_cli(|cli| {
        let mut ws = Workspace::new(cli);
        let stranger = stranger_ca(ws.path());
        let kubeconfig = kubeconfig(ws.path(), "stranger", &stranger, None, &pki, "provider");
        let name = unique_name("pc-insecure");
        ws.config_raw(&format!(
            "{}provider \"gpufleet\" {{\n  config_path = \"{kubeconfig}\"\n  insecure    = true\n}}\n\n{}",
            preamble(),
            class("c", &name, 1, "")
        ));
        let run = ws.apply();
        let out = flat(&(run.stdout + &run.stderr));
        assert!(
            out.contains("Warning: TLS verification is off"),
            "{}: {out}",
            cli.name
        );
        assert!(out.contains("insecure = true"), "{}: {out}", cli.name);
        assert!(common::fixtures::live_priority_class(&name).is_some());
        ws.destroy();
    });
}
