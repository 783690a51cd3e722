//! How to reach the cluster, from the provider block (attribute names as in
//! the hashicorp/kubernetes provider) and the usual environment variables.

use std::collections::BTreeMap;

use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::framework::validators::Validator;
use crate::protocol::{AttributePath, Diagnostics};

/// An exec credential plugin: a command that prints credentials.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ExecSettings {
    /// The ExecCredential API version, e.g. `client.authentication.k8s.io/v1`.
    pub api_version: String,
    /// The command to run.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Environment variables it gets.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
}

/// The provider block's connection attributes (secrets stay in memory only
/// and are never logged: `Debug` is not derived).
#[derive(Clone, Default, Deserialize, Serialize)]
pub struct Connection {
    /// Path of a kubeconfig file.
    pub config_path: Option<String>,
    /// Context of the kubeconfig to use.
    pub config_context: Option<String>,
    /// API server URL; when set, no kubeconfig is read.
    pub host: Option<String>,
    /// Bearer token for `host`.
    pub token: Option<String>,
    /// PEM CA certificate of the API server.
    pub cluster_ca_certificate: Option<String>,
    /// PEM client certificate for `host`.
    pub client_certificate: Option<String>,
    /// PEM key of `client_certificate`.
    pub client_key: Option<String>,
    /// Skip verifying the API server's certificate.
    pub insecure: Option<bool>,
    /// An exec credential plugin.
    pub exec: Option<ExecSettings>,
}

impl Connection {
    /// The kubeconfig file to read when no `host` is given: `config_path`,
    /// then `KUBE_CONFIG_PATH`, then the first entry of `KUBECONFIG`.
    pub fn kubeconfig_path(&self, var: impl Fn(&str) -> Option<String>) -> Option<String> {
        self.config_path
            .clone()
            .or_else(|| var("KUBE_CONFIG_PATH"))
            .or_else(|| {
                var("KUBECONFIG")
                    .and_then(|v| v.split(':').find(|p| !p.is_empty()).map(str::to_string))
            })
            .filter(|p| !p.is_empty())
    }

    /// Where the settings come from, for messages: the kubeconfig and its
    /// context; `None` for `host`.
    fn source(&self) -> Option<String> {
        if self.host.is_some() {
            return None;
        }
        let path = self.kubeconfig_path(|k| std::env::var(k).ok())?;
        Some(match &self.config_context {
            Some(ctx) => format!("context {ctx:?} of kubeconfig {path}"),
            None => format!("the current context of kubeconfig {path}"),
        })
    }

    /// What is known of the endpoint before the settings are read.
    pub fn configured_endpoint(&self) -> Endpoint {
        Endpoint {
            server: self.host.clone(),
            source: self.source(),
            ..Default::default()
        }
    }

    /// Where the cluster is, for messages (never a secret), before the
    /// settings are read.
    pub fn describe(&self) -> String {
        self.configured_endpoint().describe()
    }

    /// Builds the client configuration. Everything goes through one
    /// kubeconfig model so explicit settings and files behave alike.
    pub async fn kube_config(&self) -> Result<kube::Config, String> {
        let kubeconfig = match &self.host {
            Some(_) => self.explicit_kubeconfig()?,
            None => {
                let path = self.kubeconfig_path(|k| std::env::var(k).ok()).ok_or(
                    "no cluster configured: set `host` or `config_path` in the provider block, or KUBECONFIG / KUBE_CONFIG_PATH",
                )?;
                let path = expand_home(&path);
                Kubeconfig::read_from(&path)
                    .map_err(|e| format!("cannot read kubeconfig {path}: {e}"))?
            }
        };
        let options = KubeConfigOptions {
            context: if self.host.is_some() {
                None
            } else {
                self.config_context.clone()
            },
            ..Default::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| e.to_string())?;
        // The provider setting wins over the kubeconfig's, in both directions
        // only when given: verification stays on unless someone turns it off.
        if let Some(insecure) = self.insecure {
            config.accept_invalid_certs = insecure;
        }
        Ok(config)
    }

    /// What messages say about the cluster `config` reaches.
    pub fn endpoint(&self, config: &kube::Config) -> Endpoint {
        let url = &config.cluster_url;
        let port = url
            .port_u16()
            .unwrap_or(if url.scheme_str() == Some("http") {
                80
            } else {
                443
            });
        Endpoint {
            server: Some(url.to_string().trim_end_matches('/').to_string()),
            host: url.host().map(|h| h.trim_matches(['[', ']']).to_string()),
            authority: url.host().map(|h| format!("{h}:{port}")),
            tls_server_name: config.tls_server_name.clone(),
            source: self.source(),
            client_certificate: client_certificate(&config.auth_info),
            exec_command: config
                .auth_info
                .exec
                .as_ref()
                .and_then(|exec| exec.command.clone()),
            ca_certificates: config.root_cert.clone().unwrap_or_default(),
            explain_denial: None,
        }
    }

    fn explicit_kubeconfig(&self) -> Result<Kubeconfig, String> {
        use base64::Engine;
        let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem.as_bytes());
        let exec = self.exec.as_ref().map(|e| {
            json!({
                "apiVersion": e.api_version,
                "command": e.command,
                "args": e.args,
                "env": e.env.as_ref().map(|env| env.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>()),
                // Prompts would land in Terraform's log, never on a terminal.
                "interactiveMode": "Never",
            })
        });
        let document = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "gpufleet", "cluster": {
                "server": self.host,
                "certificate-authority-data": self.cluster_ca_certificate.as_deref().map(b64),
                "insecure-skip-tls-verify": self.insecure,
            }}],
            "users": [{"name": "gpufleet", "user": {
                "token": self.token,
                "client-certificate-data": self.client_certificate.as_deref().map(b64),
                "client-key-data": self.client_key.as_deref().map(b64),
                "exec": exec,
            }}],
            "contexts": [{"name": "gpufleet", "context": {"cluster": "gpufleet", "user": "gpufleet"}}],
            "current-context": "gpufleet",
        });
        serde_json::from_value(strip_nulls(document))
            .map_err(|e| format!("invalid connection settings: {e}"))
    }
}

/// What is wrong with the kubeconfig `config_path` names, known before any
/// request: it cannot be read or parsed, or it lacks `config_context`
/// (errors); it does not exist (a warning: a configuration may write it
/// during apply, and plans of new objects need no cluster). Only an
/// explicit `config_path` (and only without `host`) is read here; one from
/// the environment is read at the first request.
pub fn kubeconfig_problems(connection: &Connection) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    let (None, Some(path)) = (&connection.host, &connection.config_path) else {
        return diagnostics;
    };
    let path = expand_home(path);
    if !std::path::Path::new(&path).exists() {
        diagnostics.push(
            crate::protocol::Diagnostic::warning(
                "The kubeconfig does not exist",
                format!(
                    "The kubeconfig {path} (`config_path`) does not exist, so every request to the cluster will fail until it does. Check the path, or create the file before anything reads or changes cluster objects."
                ),
            )
            .at(AttributePath::attr("config_path")),
        );
        return diagnostics;
    }
    match Kubeconfig::read_from(&path) {
        Err(e) => diagnostics.error_at(
            AttributePath::attr("config_path"),
            "Cannot read the kubeconfig",
            format!("The kubeconfig {path} cannot be read: {e}"),
        ),
        Ok(kubeconfig) => {
            if let Some(context) = &connection.config_context
                && !kubeconfig.contexts.iter().any(|c| &c.name == context)
            {
                let names: Vec<&str> = kubeconfig
                    .contexts
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect();
                diagnostics.error_at(
                    AttributePath::attr("config_context"),
                    "No such kubeconfig context",
                    format!(
                        "The kubeconfig {path} has no context {context:?}; it has {}.",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            format!("{names:?}")
                        }
                    ),
                );
            }
        }
    }
    diagnostics
}

/// An API server URL: `https://` (or `http://`) and a host.
pub fn server_url() -> Validator {
    Validator::string_with(
        "An `https://` (or `http://`) URL with a host, e.g. `https://10.0.0.1:6443`.",
        |s| {
            let uri: http::Uri = s
                .parse()
                .map_err(|e| format!("host {s:?} is not a URL: {e}; give the API server's URL, e.g. \"https://10.0.0.1:6443\""))?;
            match (uri.scheme_str(), uri.host()) {
                (Some("https" | "http"), Some(h)) if !h.is_empty() => Ok(()),
                (Some(scheme @ ("https" | "http")), _) => {
                    Err(format!("host {s:?} names no server after {scheme}://"))
                }
                (Some(scheme), _) => Err(format!(
                    "host {s:?} has scheme {scheme:?}; the API server speaks https (or http), e.g. \"https://10.0.0.1:6443\""
                )),
                (None, _) => Err(format!(
                    "host {s:?} is not a URL: it has no scheme; give the API server's URL, e.g. \"https://10.0.0.1:6443\""
                )),
            }
        },
    )
}

/// PEM text whose blocks all decode and carry a label `expected` accepts;
/// `what` names the content in errors (`certificate`, `private key`).
fn pem(
    description: &'static str,
    what: &'static str,
    expected: fn(&str) -> bool,
    single: bool,
) -> Validator {
    Validator::string_with(description, move |s| {
        pem_problem(s, what, expected, single).map_err(|problem| format!("The value {problem}"))
    })
}

fn pem_problem(
    s: &str,
    what: &str,
    expected: fn(&str) -> bool,
    single: bool,
) -> Result<(), String> {
    {
        let mut labels = Vec::new();
        for block in x509_parser::pem::Pem::iter_from_buffer(s.as_bytes()) {
            let block = block.map_err(|e| format!("is not a readable PEM {what}: {e}"))?;
            if !expected(&block.label) {
                return Err(format!(
                    "holds a PEM block labelled {:?}, not a {what}",
                    block.label
                ));
            }
            labels.push(block.label);
        }
        if labels.is_empty() {
            return Err(format!(
                "is not a PEM {what}: it has no \"-----BEGIN ...-----\" line"
            ));
        }
        if single && labels.len() > 1 {
            return Err(format!(
                "holds {} PEM blocks; give one {what}",
                labels.len()
            ));
        }
        Ok(())
    }
}

/// One or more PEM certificates.
pub fn pem_certificates() -> Validator {
    pem(
        "PEM certificates (`-----BEGIN CERTIFICATE-----`).",
        "certificate",
        |label| label == "CERTIFICATE",
        false,
    )
}

/// One PEM private key (PKCS #8, PKCS #1 or SEC 1).
pub fn pem_private_key() -> Validator {
    pem(
        "A PEM private key (`-----BEGIN PRIVATE KEY-----`, or RSA or EC).",
        "private key",
        |label| matches!(label, "PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY"),
        true,
    )
}

/// Environment variable names an exec credential plugin can get: not
/// empty, without `=`, whitespace or NUL.
pub fn environment_names() -> Validator {
    Validator::new("Names without `=`, whitespace or NUL.", |v| {
        match v.entries() {
            Some(entries) => entries.keys().try_for_each(|name| {
                if name.is_empty() {
                    Err("an environment variable name is empty".to_string())
                } else if name.contains(['=', '\0']) || name.contains(char::is_whitespace) {
                    Err(format!(
                        "{name:?} is not an environment variable name: it must not contain '=', whitespace or NUL"
                    ))
                } else {
                    Ok(())
                }
            }),
            None => Ok(()),
        }
    })
}

/// The ExecCredential API versions kube's exec plugin support speaks.
pub const EXEC_API_VERSIONS: &[&str] = &[
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
];

/// Settings that only `host` uses: without it a kubeconfig is read and they
/// would be silently ignored.
pub const HOST_ONLY: &[&str] = &[
    "token",
    "cluster_ca_certificate",
    "client_certificate",
    "client_key",
    "exec",
];

/// The rule (and the kind of role it goes in) that would grant what a 403's
/// message says was denied; `None` when the message names no RBAC rule.
/// The layer that knows what every resource needs hands it down
/// ([`crate::cluster::Kubernetes::explaining_denials`]).
pub type ExplainDenial = fn(&str) -> Option<String>;

/// The API server a client talks to, for messages and for telling why a
/// connection failed. It holds no secret: the client certificate is public.
#[derive(Clone, Debug, Default)]
pub struct Endpoint {
    /// The API server URL, once the settings have been read.
    pub server: Option<String>,
    /// Its host, without brackets around an IPv6 address.
    pub host: Option<String>,
    /// `host:port` it connects to.
    pub authority: Option<String>,
    /// The name the server's certificate is checked against when it is not
    /// the URL's host (the kubeconfig's `tls-server-name`).
    pub tls_server_name: Option<String>,
    /// Where the settings came from, e.g. `the current context of kubeconfig
    /// /k`; `None` for the provider's `host`.
    pub source: Option<String>,
    /// The client certificate (PEM), to tell why the server rejected it.
    pub client_certificate: Option<Vec<u8>>,
    /// The exec credential plugin's command (not its arguments or
    /// environment, which may carry secrets).
    pub exec_command: Option<String>,
    /// The CA certificates (DER) the API server's certificate is checked
    /// against, as the settings give them.
    pub ca_certificates: Vec<Vec<u8>>,
    /// How a denial is explained; none names no rule.
    pub explain_denial: Option<ExplainDenial>,
}

impl Endpoint {
    /// `the API server https://10.0.0.1:6443 (context "x" of kubeconfig /k)`.
    pub fn describe(&self) -> String {
        match (&self.server, &self.source) {
            (Some(server), Some(source)) => format!("the API server {server} ({source})"),
            (Some(server), None) => format!("the API server {server}"),
            (None, Some(source)) => format!("the cluster of {source}"),
            (None, None) => "the cluster (no host and no kubeconfig configured)".to_string(),
        }
    }

    /// The name the server's certificate must carry.
    pub fn certificate_name(&self) -> Option<String> {
        self.tls_server_name.clone().or_else(|| self.host.clone())
    }
}

/// The PEM client certificate of a kubeconfig user: inline, or the file it
/// names.
fn client_certificate(user: &kube::config::AuthInfo) -> Option<Vec<u8>> {
    use base64::Engine;
    match (&user.client_certificate_data, &user.client_certificate) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .ok(),
        (None, Some(path)) => std::fs::read(expand_home(path)).ok(),
        (None, None) => None,
    }
}

fn strip_nulls(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(strip_nulls).collect())
        }
        other => other,
    }
}

fn expand_home(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_path_prefers_provider_setting_then_environment() {
        let env = |k: &str| match k {
            "KUBECONFIG" => Some(":/a/config:/b/config".to_string()),
            _ => None,
        };
        assert_eq!(
            Connection::default().kubeconfig_path(env).as_deref(),
            Some("/a/config")
        );
        let explicit = Connection {
            config_path: Some("/x".into()),
            ..Default::default()
        };
        assert_eq!(explicit.kubeconfig_path(env).as_deref(), Some("/x"));
        let both = |k: &str| match k {
            "KUBE_CONFIG_PATH" => Some("/k".to_string()),
            _ => env(k),
        };
        assert_eq!(
            Connection::default().kubeconfig_path(both).as_deref(),
            Some("/k")
        );
    }

    #[tokio::test]
    async fn explicit_host_and_token_build_a_config_without_any_file() {
        let c = Connection {
            host: Some("https://127.0.0.1:6443".into()),
            token: Some("secret-token".into()),
            insecure: Some(true),
            ..Default::default()
        };
        let config = c.kube_config().await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:6443/");
        assert!(config.accept_invalid_certs);
        assert!(!c.describe().contains("secret-token"));
    }

    #[tokio::test]
    async fn tls_verification_is_on_unless_insecure_is_true() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        let kubeconfig = |insecure: bool| {
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n    insecure-skip-tls-verify: {insecure}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
            )
        };
        let with = |insecure: Option<bool>| Connection {
            config_path: Some(path.to_string_lossy().into_owned()),
            insecure,
            ..Default::default()
        };
        std::fs::write(&path, kubeconfig(false)).unwrap();
        assert!(!with(None).kube_config().await.unwrap().accept_invalid_certs);
        assert!(
            with(Some(true))
                .kube_config()
                .await
                .unwrap()
                .accept_invalid_certs
        );
        std::fs::write(&path, kubeconfig(true)).unwrap();
        assert!(with(None).kube_config().await.unwrap().accept_invalid_certs);
        assert!(
            !with(Some(false))
                .kube_config()
                .await
                .unwrap()
                .accept_invalid_certs
        );
        let host = Connection {
            host: Some("https://10.0.0.1:6443".into()),
            token: Some("t".into()),
            ..Default::default()
        };
        let config = host.kube_config().await.unwrap();
        assert!(!config.accept_invalid_certs);
        let endpoint = host.endpoint(&config);
        assert_eq!(endpoint.describe(), "the API server https://10.0.0.1:6443");
        assert_eq!(endpoint.authority.as_deref(), Some("10.0.0.1:6443"));
        assert_eq!(endpoint.certificate_name().as_deref(), Some("10.0.0.1"));
    }

    #[tokio::test]
    async fn missing_kubeconfig_is_a_clear_error() {
        let c = Connection {
            config_path: Some("/nonexistent/kubeconfig".into()),
            ..Default::default()
        };
        let e = c.kube_config().await.unwrap_err();
        assert!(e.contains("/nonexistent/kubeconfig"), "{e}");
    }
}
