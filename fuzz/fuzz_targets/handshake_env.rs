//! The go-plugin start-up contract read from arbitrary environment values:
//! every outcome is an environment or an error, never a panic, and an
//! accepted environment is usable (a port range that is not empty, a
//! certificate that is not blank).
#![no_main]

use arbitrary::Arbitrary;
use gpufleet::protocol::handshake::{
    Environment, HandshakeError, MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Vars {
    /// Most inputs should get past the cookie check to reach the rest.
    right_cookie: bool,
    cookie: Option<String>,
    protocol_versions: Option<String>,
    min_port: Option<String>,
    max_port: Option<String>,
    client_cert: Option<String>,
}

fuzz_target!(|vars: Vars| {
    let lookup = |name: &str| -> Option<String> {
        match name {
            MAGIC_COOKIE_KEY if vars.right_cookie => Some(MAGIC_COOKIE_VALUE.to_string()),
            MAGIC_COOKIE_KEY => vars.cookie.clone(),
            "PLUGIN_PROTOCOL_VERSIONS" => vars.protocol_versions.clone(),
            "PLUGIN_MIN_PORT" => vars.min_port.clone(),
            "PLUGIN_MAX_PORT" => vars.max_port.clone(),
            "PLUGIN_CLIENT_CERT" => vars.client_cert.clone(),
            _ => None,
        }
    };
    let cookie_ok = vars.right_cookie || vars.cookie.as_deref() == Some(MAGIC_COOKIE_VALUE);
    match Environment::from_vars(lookup) {
        Ok(env) => {
            assert!(cookie_ok, "started without the magic cookie");
            assert!(env.min_port <= env.max_port, "{env:?}");
            assert!(
                env.client_cert
                    .as_deref()
                    .is_none_or(|c| !c.trim().is_empty()),
                "{env:?}"
            );
        }
        Err(HandshakeError::NotAPlugin) => assert!(!cookie_ok, "refused the right cookie"),
        Err(e) => assert!(cookie_ok && !e.to_string().is_empty(), "{e:?}"),
    }
});
