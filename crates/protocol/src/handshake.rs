//! The go-plugin start-up contract: the magic cookie, the protocol version
//! and port range the client allows, and the handshake line on stdout.

use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;

use super::listener::Network;

/// The variable a go-plugin client sets to show it started us as a plugin.
pub const MAGIC_COOKIE_KEY: &str = "TF_PLUGIN_MAGIC_COOKIE";
/// The value Terraform and OpenTofu give [`MAGIC_COOKIE_KEY`].
pub const MAGIC_COOKIE_VALUE: &str =
    "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";
/// go-plugin's core protocol version; clients refuse anything else.
const CORE_PROTOCOL_VERSION: u32 = 1;
/// The only Terraform plugin protocol we speak.
pub const PROTOCOL_VERSION: u32 = 6;

/// What a person who runs the binary by hand is told.
pub const NOT_A_PLUGIN_MESSAGE: &str = "This binary is a plugin for Terraform and OpenTofu (the gpufleet provider).\n\
These are not meant to be executed directly. Add the provider to a configuration\n\
(source = \"gpufleet/gpufleet\") and run `terraform init`.";

/// Why the environment is not one we can serve in.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HandshakeError {
    /// The magic cookie is missing or wrong: not started by a plugin client.
    #[error("{NOT_A_PLUGIN_MESSAGE}")]
    NotAPlugin,
    /// `PLUGIN_PROTOCOL_VERSIONS` (quoted) does not offer version 6.
    #[error(
        "the client speaks plugin protocol versions {0:?}; this provider speaks only version 6"
    )]
    UnsupportedProtocol(String),
    /// `PLUGIN_MIN_PORT`/`PLUGIN_MAX_PORT` are not ports, or not in order.
    #[error("invalid port range {0}")]
    InvalidPortRange(String),
}

/// What the client told us through the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Environment {
    /// PEM certificate for AutoMTLS; `None` serves plaintext (TLS disabled by the client).
    pub client_cert: Option<String>,
    /// Lowest TCP port we may listen on (`PLUGIN_MIN_PORT`; 0 when unset).
    pub min_port: u16,
    /// Highest TCP port we may listen on (`PLUGIN_MAX_PORT`; 0 when unset).
    pub max_port: u16,
    /// Where to create a unix socket; the temporary directory when unset.
    pub unix_socket_dir: Option<PathBuf>,
    /// Group (name or id) to give the unix socket, with group write access.
    pub unix_socket_group: Option<String>,
}

impl Environment {
    /// Reads the contract from variables (`std::env::var` in production).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, HandshakeError> {
        if var(MAGIC_COOKIE_KEY).as_deref() != Some(MAGIC_COOKIE_VALUE) {
            return Err(HandshakeError::NotAPlugin);
        }
        if let Some(versions) = var("PLUGIN_PROTOCOL_VERSIONS").filter(|v| !v.trim().is_empty()) {
            let speaks_6 = versions
                .split(',')
                .any(|v| v.trim().parse::<u32>() == Ok(PROTOCOL_VERSION));
            if !speaks_6 {
                return Err(HandshakeError::UnsupportedProtocol(versions));
            }
        }
        let port = |name: &str| -> Result<u16, HandshakeError> {
            match var(name).filter(|v| !v.is_empty()) {
                None => Ok(0),
                Some(v) => v
                    .parse()
                    .map_err(|_| HandshakeError::InvalidPortRange(format!("{name}={v}"))),
            }
        };
        let (min_port, max_port) = (port("PLUGIN_MIN_PORT")?, port("PLUGIN_MAX_PORT")?);
        if min_port > max_port {
            return Err(HandshakeError::InvalidPortRange(format!(
                "{min_port}..{max_port}"
            )));
        }
        Ok(Self {
            client_cert: var("PLUGIN_CLIENT_CERT").filter(|c| !c.trim().is_empty()),
            min_port,
            max_port,
            unix_socket_dir: var("PLUGIN_UNIX_SOCKET_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
            unix_socket_group: var("PLUGIN_UNIX_SOCKET_GROUP").filter(|g| !g.is_empty()),
        })
    }
}

/// `1|6|NETWORK|ADDRESS|grpc|CERT`, e.g. `1|6|unix|/tmp/plugin-gpufleet-7-0|grpc|MIIB...`:
/// the certificate is the DER of our server certificate in unpadded
/// standard base64, empty for plaintext.
pub fn handshake_line(network: Network, address: &str, server_cert_der: Option<&[u8]>) -> String {
    let cert = server_cert_der
        .map(|der| STANDARD_NO_PAD.encode(der))
        .unwrap_or_default();
    let network = network.as_str();
    format!("{CORE_PROTOCOL_VERSION}|{PROTOCOL_VERSION}|{network}|{address}|grpc|{cert}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> Result<Environment, HandshakeError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Environment::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn refuses_to_run_without_the_magic_cookie() {
        assert_eq!(env(&[]), Err(HandshakeError::NotAPlugin));
        assert_eq!(
            env(&[(MAGIC_COOKIE_KEY, "wrong")]),
            Err(HandshakeError::NotAPlugin)
        );
        assert!(
            HandshakeError::NotAPlugin
                .to_string()
                .contains("not meant to be executed directly")
        );
    }

    #[test]
    fn accepts_protocol_lists_that_contain_6_in_any_order() {
        for versions in ["6", "5,6", "6,5", " 5 , 6 ", ""] {
            let e = env(&[
                (MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE),
                ("PLUGIN_PROTOCOL_VERSIONS", versions),
            ]);
            assert!(e.is_ok(), "{versions:?}: {e:?}");
        }
        let e = env(&[
            (MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE),
            ("PLUGIN_PROTOCOL_VERSIONS", "4,5"),
        ]);
        assert_eq!(e, Err(HandshakeError::UnsupportedProtocol("4,5".into())));
    }

    #[test]
    fn reads_port_range_and_client_certificate() {
        let e = env(&[
            (MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE),
            ("PLUGIN_MIN_PORT", "10000"),
            ("PLUGIN_MAX_PORT", "25000"),
            ("PLUGIN_CLIENT_CERT", "-----BEGIN CERTIFICATE-----"),
            ("PLUGIN_UNIX_SOCKET_DIR", "/run/plugins"),
            ("PLUGIN_UNIX_SOCKET_GROUP", "terraform"),
        ])
        .unwrap();
        assert_eq!((e.min_port, e.max_port), (10000, 25000));
        assert!(e.client_cert.is_some());
        assert_eq!(e.unix_socket_dir, Some(PathBuf::from("/run/plugins")));
        assert_eq!(e.unix_socket_group.as_deref(), Some("terraform"));
        let bad = env(&[
            (MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE),
            ("PLUGIN_MIN_PORT", "9"),
            ("PLUGIN_MAX_PORT", "5"),
        ]);
        assert!(matches!(bad, Err(HandshakeError::InvalidPortRange(_))));
        let bad = env(&[
            (MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE),
            ("PLUGIN_MIN_PORT", "x"),
        ]);
        assert!(matches!(bad, Err(HandshakeError::InvalidPortRange(_))));
    }

    #[test]
    fn handshake_line_has_six_fields_and_unpadded_certificate() {
        let tcp = "127.0.0.1:12345";
        assert_eq!(
            handshake_line(Network::Tcp, tcp, None),
            "1|6|tcp|127.0.0.1:12345|grpc|"
        );
        let line = handshake_line(Network::Tcp, tcp, Some(&[1, 2, 3, 4]));
        assert_eq!(line, "1|6|tcp|127.0.0.1:12345|grpc|AQIDBA");
        assert_eq!(line.split('|').count(), 6);
        assert_eq!(
            handshake_line(
                Network::Unix,
                "/tmp/plugin-gpufleet-7-0",
                Some(&[1, 2, 3, 4])
            ),
            "1|6|unix|/tmp/plugin-gpufleet-7-0|grpc|AQIDBA"
        );
    }
}
