//! The one mapping from Kubernetes API errors to diagnostics, and the few
//! facts about errors the rest of the cluster layer decides on. A request
//! that got no answer is explained by its causes: the server's certificate
//! (unknown authority, expired, not yet valid, another name), a refused TLS
//! handshake, a refused or timed-out connection, DNS, or the exec credential
//! plugin; a 401 by the client certificate's dates; a 403 by the RBAC rule
//! that would allow the request.

use super::connection::Endpoint;
use crate::protocol::{Diagnostic, Diagnostics};

/// The HTTP status of an API error, if the server answered.
pub fn status(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Whether a 404 says that the API itself (the group, version or resource)
/// does not exist. The API server answers an unknown API path with a plain
/// text "404 page not found" (kube reports it with a reason other than
/// `NotFound`), or with a `NotFound` status "the server could not find the
/// requested resource"; a missing object is a `NotFound` status naming it.
pub fn api_missing(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(response) => {
            response.code == 404
                && (response.reason != "NotFound"
                    || response
                        .message
                        .contains("the server could not find the requested resource"))
        }
        _ => false,
    }
}

/// Whether an error says the object does not exist (and its API does).
pub fn object_missing(error: &kube::Error) -> bool {
    status(error) == Some(404) && !api_missing(error)
}

/// The diagnostic for a failed API call on `endpoint`. `action` says what
/// was being done (`create PriorityClass "online-inference"`), `kind` names
/// the API (`karpenter.sh/v1 NodePool`) for the not-installed case.
pub fn api_error(
    endpoint: &Endpoint,
    action: &str,
    kind: &str,
    error: &kube::Error,
) -> Diagnostics {
    let cluster = endpoint.describe();
    let (summary, detail) = match error {
        _ if api_missing(error) => (
            format!("{kind} is not installed"),
            format!(
                "Could not {action}: the API {kind} does not exist on {cluster}. Install its CustomResourceDefinition (for example Karpenter's CRDs) and try again."
            ),
        ),
        kube::Error::Api(response) => match response.code {
            401 => (
                "Kubernetes did not accept the credentials".to_string(),
                format!(
                    "Could not {action}: {cluster} answered 401 Unauthorized: {}",
                    rejected_credentials(endpoint)
                ),
            ),
            403 => (
                "Permission denied by Kubernetes".to_string(),
                format!(
                    "Could not {action} on {cluster}: {}. {}",
                    response.message,
                    missing_permission(endpoint, &response.message)
                ),
            ),
            409 => (
                "Conflict with another writer".to_string(),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
            422 | 400 => (
                "Kubernetes rejected the object".to_string(),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
            _ => (
                format!("Kubernetes API error ({})", response.code),
                format!("Could not {action} on {cluster}: {}", response.message),
            ),
        },
        other => {
            let cause = unanswered(endpoint, other);
            (
                format!("Cannot reach Kubernetes: {}", cause.what),
                format!(
                    "Could not {action}: the connection to {cluster} failed: {}",
                    cause.why
                ),
            )
        }
    };
    Diagnostic::error(summary, detail).into()
}

/// The diagnostic for a client that could not be built for `endpoint`
/// (unreadable credentials, a failing exec credential plugin).
pub fn client_error(endpoint: &Endpoint, error: &kube::Error) -> Diagnostic {
    let cause = unanswered(endpoint, error);
    Diagnostic::error(
        format!("Cannot connect to Kubernetes: {}", cause.what),
        format!(
            "Could not set up a client for {}: {}",
            endpoint.describe(),
            cause.why
        ),
    )
}

/// The rule an RBAC denial calls for, as the endpoint's
/// [`super::connection::ExplainDenial`] names it, and where the whole role is.
fn missing_permission(endpoint: &Endpoint, message: &str) -> String {
    let rule = match endpoint.explain_denial.and_then(|explain| explain(message)) {
        Some(rule) => format!("To the user the provider runs as, {rule}\n"),
        None => String::new(),
    };
    format!(
        "{rule}Grant the user the provider runs as this permission (RBAC); docs/rbac.yaml has the ClusterRole (and Role) with every permission gpufleet uses."
    )
}

/// Why the API server did not accept the credentials, as far as can be
/// told from here: a client certificate outside its validity period, or
/// else the usual reasons.
fn rejected_credentials(endpoint: &Endpoint) -> String {
    let certificate = endpoint
        .client_certificate
        .as_deref()
        .and_then(|pem| certificate_dates(pem).ok());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    match certificate {
        Some(c) if now > c.not_after => format!(
            "the client certificate ({}) expired at {}. Get a new one (a fresh kubeconfig) and try again.",
            c.subject,
            utc(c.not_after)
        ),
        Some(c) if now < c.not_before => format!(
            "the client certificate ({}) is valid only from {} (it is now {}); check this machine's clock.",
            c.subject,
            utc(c.not_before),
            utc(now)
        ),
        _ => "the token or client certificate is not valid for this cluster: it may have expired or been revoked, or belong to another cluster. Get fresh credentials (a new kubeconfig, token or exec plugin login) and try again.".to_string(),
    }
}

struct CertificateDates {
    subject: String,
    not_before: i64,
    not_after: i64,
}

fn certificate_dates(pem: &[u8]) -> Result<CertificateDates, String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).map_err(|e| e.to_string())?;
    let certificate = pem.parse_x509().map_err(|e| e.to_string())?;
    let validity = certificate.validity();
    Ok(CertificateDates {
        subject: certificate.subject().to_string(),
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
    })
}

/// Why a request got no answer: a short `what` for the summary, and `why`
/// in full, naming the server and what to check.
struct Unanswered {
    what: String,
    why: String,
}

impl Unanswered {
    fn new(what: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            why: why.into(),
        }
    }
}

/// The errors behind `error`, outermost first. An `io::Error` hides the
/// error it wraps from `source()` (it returns that error's own source), so
/// the wrapped one is taken from it directly.
pub(super) fn causes<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut chain = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        chain.push(e);
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    chain
}

/// Classifies a failure that never got an HTTP answer by walking its causes:
/// TLS (the server's certificate, or the server refusing ours), TCP, DNS,
/// and the exec credential plugin.
fn unanswered(endpoint: &Endpoint, error: &kube::Error) -> Unanswered {
    let chain = causes(error);
    let server = endpoint
        .authority
        .clone()
        .unwrap_or_else(|| "the server".to_string());
    for cause in &chain {
        if let Some(auth) = cause.downcast_ref::<kube::client::AuthError>() {
            return exec_failure(endpoint, auth);
        }
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return tls_failure(endpoint, tls);
        }
    }
    for cause in &chain {
        let text = cause.to_string();
        if text == "dns error" || text.starts_with("failed to lookup address") {
            let host = endpoint.host.clone().unwrap_or_default();
            let reason = chain.last().map(|e| e.to_string()).unwrap_or(text);
            return Unanswered::new(
                "the host name does not resolve (DNS)",
                format!(
                    "the host name {host:?} does not resolve: {reason}. Check the server address (`host`, or the kubeconfig's server) and this machine's DNS."
                ),
            );
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind;
            match io.kind() {
                ErrorKind::ConnectionRefused => {
                    return Unanswered::new(
                        "connection refused",
                        format!(
                            "connecting to {server} was refused: nothing listens there. Is the API server running, and are the address and port right?"
                        ),
                    );
                }
                ErrorKind::TimedOut => {
                    return Unanswered::new(
                        "connection timed out",
                        format!(
                            "{server} did not answer in time: the server is down or overloaded, or a firewall drops the traffic."
                        ),
                    );
                }
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => {
                    return Unanswered::new(
                        "connection reset",
                        format!(
                            "{server} closed the connection ({io}): the API server may be restarting, or something in between cut it."
                        ),
                    );
                }
                _ => {}
            }
        }
    }
    let mut texts: Vec<String> = Vec::new();
    for cause in chain {
        let text = cause.to_string();
        if !texts.last().is_some_and(|last| last.contains(&text)) {
            texts.push(text);
        }
    }
    Unanswered::new("no answer", format!("{server}: {}", texts.join(": ")))
}

/// A failed exec credential plugin: its command, exit status and error
/// output; never its arguments, environment or standard output, which may
/// hold secrets.
fn exec_failure(endpoint: &Endpoint, error: &kube::client::AuthError) -> Unanswered {
    use kube::client::AuthError;
    let what = "the exec credential plugin failed";
    let command = endpoint.exec_command.as_deref().unwrap_or("(unnamed)");
    match error {
        AuthError::AuthExecRun { out, .. } => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stderr = stderr.trim();
            let said = if stderr.is_empty() {
                " and printed no error.".to_string()
            } else {
                let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!(", saying: {}", tail.join("\n"))
            };
            let ended = match out.status.code() {
                Some(code) => format!("exited with status {code}"),
                None => format!("ended with {}", out.status),
            };
            Unanswered::new(
                what,
                format!("the exec credential plugin `{command}` {ended}{said}"),
            )
        }
        AuthError::AuthExecStart(e) => Unanswered::new(
            what,
            format!(
                "the exec credential plugin `{command}` could not be started: {e}. Is it installed and on PATH?"
            ),
        ),
        AuthError::AuthExecParse(e) => Unanswered::new(
            what,
            format!("the exec credential plugin `{command}` did not print an ExecCredential: {e}"),
        ),
        AuthError::ExecPluginFailed => Unanswered::new(
            what,
            format!(
                "the exec credential plugin `{command}` printed an ExecCredential without a status (no credentials)."
            ),
        ),
        other => Unanswered::new(
            "cannot load the credentials",
            format!("the credentials could not be loaded: {other}"),
        ),
    }
}

/// A TLS failure: what is wrong with the server's certificate, or that the
/// server refused the handshake (usually our client certificate).
fn tls_failure(endpoint: &Endpoint, error: &rustls::Error) -> Unanswered {
    use rustls::CertificateError as C;
    let name = endpoint
        .certificate_name()
        .unwrap_or_else(|| "the server".to_string());
    let ca_hint = "Give the CA that signed the API server's certificate in `cluster_ca_certificate` or the kubeconfig's certificate-authority-data.";
    match error {
        rustls::Error::InvalidCertificate(certificate) => match certificate {
            C::UnknownIssuer => Unanswered::new(
                "unknown certificate authority",
                format!(
                    "the API server's certificate is not signed by a certificate authority gpufleet trusts (unknown certificate authority). {ca_hint}"
                ),
            ),
            C::BadSignature => Unanswered::new(
                "unknown certificate authority",
                format!(
                    "the API server's certificate does not verify against the trusted certificate authority (bad signature). {ca_hint}"
                ),
            ),
            C::Expired => Unanswered::new(
                "the API server's certificate has expired",
                "the API server's certificate has expired; the cluster needs a new serving certificate.",
            ),
            C::ExpiredContext { time, not_after } => Unanswered::new(
                "the API server's certificate has expired",
                format!(
                    "the API server's certificate expired at {} (it is now {}); the cluster needs a new serving certificate.",
                    utc(not_after.as_secs() as i64),
                    utc(time.as_secs() as i64)
                ),
            ),
            C::NotValidYet => Unanswered::new(
                "the API server's certificate is not valid yet",
                "the API server's certificate is not valid yet; check the clocks of this machine and the server.",
            ),
            C::NotValidYetContext { time, not_before } => Unanswered::new(
                "the API server's certificate is not valid yet",
                format!(
                    "the API server's certificate is valid only from {} (it is now {}); check the clocks of this machine and the server.",
                    utc(not_before.as_secs() as i64),
                    utc(time.as_secs() as i64)
                ),
            ),
            C::NotValidForName => Unanswered::new(
                "certificate name mismatch",
                format!(
                    "the API server's certificate is not valid for {name:?}. Connect by a name the certificate carries (the kubeconfig's server or tls-server-name, or `host`)."
                ),
            ),
            C::NotValidForNameContext {
                expected,
                presented,
            } => Unanswered::new(
                "certificate name mismatch",
                format!(
                    "the API server's certificate is not valid for {:?}: it is for {}. Connect by one of those names (the kubeconfig's server or tls-server-name, or `host`).",
                    expected.to_str(),
                    presented
                        .iter()
                        .map(|name| presented_name(name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            other => Unanswered::new(
                "the API server's certificate was rejected",
                format!("the API server's certificate was rejected: {other:?}."),
            ),
        },
        rustls::Error::AlertReceived(alert) => Unanswered::new(
            "the API server refused the TLS handshake",
            format!(
                "the API server ended the TLS handshake with the alert {alert:?}, which usually means it did not accept the client certificate."
            ),
        ),
        other => Unanswered::new("TLS failed", format!("TLS with {name} failed: {other}")),
    }
}

/// A name a certificate presents, as rustls spells it (`DnsName("a.b")`,
/// `IpAddress(10.0.0.1)`), the way people write it.
fn presented_name(name: &str) -> &str {
    let inner = name
        .strip_prefix("DnsName(")
        .or_else(|| name.strip_prefix("IpAddress("))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or(name);
    inner.trim_matches('"')
}

/// A Unix time as `2021-01-01 00:00:00 UTC` (the proleptic Gregorian
/// calendar, computed from the day count).
fn utc(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Days since 0000-03-01, in 400-year eras of 146097 days; a year starts
    // in March so that the leap day comes last.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn error(reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, reason).with_code(404).boxed())
    }

    #[test]
    fn a_missing_api_is_told_apart_from_a_missing_object() {
        let plain = error("Failed to parse error data", "404 page not found");
        let status = error(
            "NotFound",
            "the server could not find the requested resource",
        );
        let object = error("NotFound", "nodepools.karpenter.sh \"x\" not found");
        assert!(api_missing(&plain));
        assert!(api_missing(&status));
        assert!(!api_missing(&object));
        assert!(object_missing(&object));
        let endpoint = Endpoint {
            server: Some("https://k".into()),
            ..Default::default()
        };
        let d = api_error(
            &endpoint,
            "create NodePool \"x\"",
            "karpenter.sh/v1 NodePool",
            &plain,
        );
        assert_eq!(d.0[0].summary, "karpenter.sh/v1 NodePool is not installed");
        assert!(d.0[0].detail.contains("the API server https://k"));
    }

    #[test]
    fn a_denial_names_the_missing_rule() {
        let denied = kube::Error::Api(
            Status::failure(
                "nodepools.karpenter.sh \"x\" is forbidden: User \"u\" cannot delete resource \"nodepools\" in API group \"karpenter.sh\" at the cluster scope",
                "Forbidden",
            )
            .with_code(403)
            .boxed(),
        );
        let endpoint = Endpoint {
            explain_denial: Some(|message| {
                message
                    .contains("cannot delete")
                    .then(|| "a ClusterRole needs the rule R".to_string())
            }),
            ..Default::default()
        };
        let d = api_error(
            &endpoint,
            "delete NodePool \"x\"",
            "karpenter.sh/v1 NodePool",
            &denied,
        );
        assert_eq!(d.0[0].summary, "Permission denied by Kubernetes");
        assert!(
            d.0[0]
                .detail
                .contains("To the user the provider runs as, a ClusterRole needs the rule R\n"),
            "{}",
            d.0[0].detail
        );
    }

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_609_459_200), "2021-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400 + 3661), "2000-02-29 01:01:01 UTC");
        assert_eq!(utc(4_102_444_799), "2099-12-31 23:59:59 UTC");
        assert_eq!(utc(-1), "1969-12-31 23:59:59 UTC");
    }

    #[test]
    fn the_dates_of_a_client_certificate_are_read() {
        let mut params = rcgen::CertificateParams::new(vec!["x".to_string()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "gpufleet-expired");
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        let dates = certificate_dates(pem.as_bytes()).unwrap();
        assert_eq!(dates.subject, "CN=gpufleet-expired");
        assert_eq!(utc(dates.not_before), "2020-01-01 00:00:00 UTC");
        assert_eq!(utc(dates.not_after), "2021-01-01 00:00:00 UTC");
        let endpoint = Endpoint {
            client_certificate: Some(pem.into_bytes()),
            ..Default::default()
        };
        assert!(
            rejected_credentials(&endpoint).starts_with(
                "the client certificate (CN=gpufleet-expired) expired at 2021-01-01 00:00:00 UTC"
            ),
            "{}",
            rejected_credentials(&endpoint)
        );
    }
}
