//! The one retry policy for API calls: what is worth another attempt, how
//! long to pause between attempts, and when to give up.
//!
//! Worth retrying: a write conflict (409, a stale resourceVersion), the API
//! server asking clients to slow down (429) or failing on its side (5xx),
//! a connection refused, reset or silent (as while the API server
//! restarts), and a denial (403) while the API server is not ready, which
//! is what one that has just started answers until it has loaded its RBAC
//! rules (see [`RBAC_LOAD_WINDOW`]). Everything else (400, 401, 404, 422, TLS
//! failures, and a server this process has never connected to) is final at
//! once: waiting would not change the answer. Pauses grow exponentially with jitter and are at least
//! what the server's `Retry-After` asks for; an operation stops retrying at
//! its deadline (its resource's `timeouts`, or [`DEFAULT_TIMEOUT`]) and as
//! soon as Terraform asks the provider to stop.
//!
//! Every write gpufleet makes is idempotent (server-side apply, a patch with
//! a resourceVersion precondition, delete), so repeating one whose answer was
//! lost is safe. When the policy gives up after an attempt whose outcome is
//! unknown, [`GaveUp::maybe_applied`] tells the caller to look at the cluster
//! before reporting what it wrote.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use super::connection::Endpoint;
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use kube::core::{Status, response::StatusDetails};
use tokio::time::Instant;
use tower::{BoxError, Service};

use super::api::Kind;
use super::errors::{api_error, api_missing, causes, status};
use crate::framework::timeouts::{Operation, Timeouts};
use crate::protocol::{Diagnostic, Diagnostics, stop};

/// How long an operation may keep retrying when its resource's `timeouts`
/// say nothing: enough for an API server to restart.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long one attempt waits for its answer before counting it as lost.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the look at the cluster after an unknown outcome may take; it
/// runs even after StopProvider, to report what was written.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a plan may look at the cluster.
const PLAN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a call keeps retrying a 403 while the API server is not ready.
/// kube-apiserver serves requests before its RBAC authorizer has anything
/// to go by: the authorizer reads roles and bindings from the shared
/// informers' caches (kubernetes pkg/kubeapiserver/authorizer/config.go),
/// which start in the post-start hook `generic-apiserver-start-informers`
/// once the server listens (k8s.io/apiserver pkg/server/config.go); until
/// their first LIST has filled them, a rule may be missing, the RBAC
/// authorizer has no opinion (plugin/pkg/auth/authorizer/rbac/rbac.go) and
/// the request is denied exactly as a real denial is. `/readyz` answers
/// 200 only once those caches are filled (its `informer-sync` check, same
/// file), so a denial while it does is real and final at once; before, the
/// denial is retried. That first LIST reads what etcd holds at start: on
/// the testbed's loaded two cores the denials end 0.1 to 1 s after the API
/// server first answers. A denial that outlasts this window is reported
/// (with the API server's message) even if `/readyz` never answers 200,
/// as on a cluster that does not let every user read it.
pub const RBAC_LOAD_WINDOW: Duration = Duration::from_secs(5);
/// How long the look at `/readyz` after a denial may take.
const READY_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// When an operation stops retrying.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    at: Instant,
    budget: Duration,
    source: Source,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Source {
    Configured(Operation),
    Default(Operation),
    Check,
    Plan,
}

impl Deadline {
    /// The deadline of `operation`, starting now: its `timeouts` entry, or
    /// the default.
    pub fn of(timeouts: Option<&Timeouts>, operation: Operation) -> Self {
        match Timeouts::of(timeouts, operation) {
            Some(budget) => Self::after(budget, Source::Configured(operation)),
            None => Self::after(DEFAULT_TIMEOUT, Source::Default(operation)),
        }
    }

    /// The deadline of a look at the cluster while planning, which must
    /// not wait for a cluster it cannot reach.
    pub fn at_plan() -> Self {
        Self::after(PLAN_TIMEOUT, Source::Plan)
    }

    /// The deadline of the look at the cluster after an unknown outcome.
    fn check() -> Self {
        Self::after(CHECK_TIMEOUT, Source::Check)
    }

    fn after(budget: Duration, source: Source) -> Self {
        Self {
            at: Instant::now() + budget,
            budget,
            source,
        }
    }

    /// Whether the deadline has passed: a wait for something else than a
    /// call (an object's finalizers) stops there.
    pub fn passed(&self) -> bool {
        self.remaining().is_zero()
    }

    fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// The deadline as messages name it: `the default deadline of 5m (set
    /// `timeouts.delete` to wait longer)`.
    pub fn describe(&self) -> String {
        let budget = human(self.budget);
        match self.source {
            Source::Configured(op) => {
                format!(
                    "the deadline of {budget} set by `timeouts.{}`",
                    op.attribute()
                )
            }
            Source::Default(op) => format!(
                "the default deadline of {budget} (set `timeouts.{}` to wait longer)",
                op.attribute()
            ),
            Source::Check => format!("the {budget} this check may take"),
            Source::Plan => format!("the {budget} a look at the cluster may take at plan"),
        }
    }
}

/// One API call, as diagnostics name it.
pub struct Call {
    /// What gpufleet was doing, e.g. `create PriorityClass "online"`.
    pub action: String,
    /// The request, e.g. `PATCH scheduling.k8s.io/v1 PriorityClass "online" (server-side apply as gpufleet)`.
    pub request: String,
    /// The API, named when it is not installed.
    pub api: Kind,
}

/// A call the policy gave up on.
#[derive(Debug)]
pub struct GaveUp {
    /// The last error, the call, how often it was tried and why it stopped.
    pub diagnostics: Diagnostics,
    /// Some attempt may have changed the cluster although none said so (its
    /// answer was lost, or it was cut short): look before reporting.
    pub maybe_applied: bool,
    /// The last answer said the API does not exist (a CRD not installed).
    pub not_installed: bool,
}

/// A failure before any call was made (no client, a bad request).
impl From<Diagnostics> for GaveUp {
    fn from(diagnostics: Diagnostics) -> Self {
        Self {
            diagnostics,
            maybe_applied: false,
            not_installed: false,
        }
    }
}

impl From<GaveUp> for Diagnostics {
    fn from(gave_up: GaveUp) -> Self {
        gave_up.diagnostics
    }
}

impl<M> From<GaveUp> for crate::framework::Failed<M> {
    fn from(gave_up: GaveUp) -> Self {
        gave_up.diagnostics.into()
    }
}

/// Why an attempt is worth repeating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Conflict,
    Forbidden,
    Throttled,
    ServerError(u16),
    Refused,
    ConnectionLost,
    NoAnswer,
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Conflict => write!(f, "conflict (409)"),
            Self::Forbidden => write!(f, "forbidden (403)"),
            Self::Throttled => write!(f, "throttled (429)"),
            Self::ServerError(code) => write!(f, "server error ({code})"),
            Self::Refused => write!(f, "connection refused"),
            Self::ConnectionLost => write!(f, "connection lost"),
            Self::NoAnswer => write!(f, "no answer"),
        }
    }
}

/// What one failed attempt means.
#[derive(Debug, PartialEq)]
struct Judgement {
    /// Why another attempt may succeed; `None` when none can.
    retry: Option<Cause>,
    /// The attempt may have changed the cluster.
    maybe_applied: bool,
    /// How long the server asked clients to wait.
    server_wait: Option<Duration>,
}

fn judge(error: &kube::Error, reached_before: bool) -> Judgement {
    let judgement = |retry, maybe_applied| Judgement {
        retry,
        maybe_applied,
        server_wait: None,
    };
    if let kube::Error::Api(status) = error {
        let server_wait = status
            .details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s.into()));
        let (retry, maybe_applied) = match status.code {
            403 => (Some(Cause::Forbidden), false),
            409 => (Some(Cause::Conflict), false),
            429 => (Some(Cause::Throttled), false),
            code @ 500..=599 => (Some(Cause::ServerError(code)), true),
            _ => (None, false),
        };
        return Judgement {
            server_wait,
            ..judgement(retry, maybe_applied)
        };
    }
    match connection_failure(error) {
        // A server this process never managed to connect to is likely the
        // wrong address, or a cluster that does not exist: say so now
        // rather than at the deadline.
        Some(failure) if failure.connecting && !reached_before => judgement(None, false),
        // A connection that never carried the request changed nothing.
        Some(failure) => judgement(Some(failure.cause), !failure.connecting),
        None => judgement(None, false),
    }
}

/// A failure below HTTP.
struct ConnectionFailure {
    cause: Cause,
    /// While connecting (TCP or TLS): the request was never sent.
    connecting: bool,
}

/// The connection-level failure behind an error, if that is what it is.
/// Its causes are walked as [`causes`] does: a reset in the TLS handshake
/// comes as an `io::Error` that hides the one it wraps from `source()`.
fn connection_failure(error: &kube::Error) -> Option<ConnectionFailure> {
    use std::io::ErrorKind;
    let mut connecting = false;
    for error in causes(error) {
        if let Some(client) = error.downcast_ref::<hyper_util::client::legacy::Error>() {
            connecting |= client.is_connect();
        }
        let found = |cause| {
            Some(ConnectionFailure {
                cause,
                connecting: connecting || cause == Cause::Refused,
            })
        };
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            match io.kind() {
                ErrorKind::ConnectionRefused => return found(Cause::Refused),
                ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::BrokenPipe
                | ErrorKind::UnexpectedEof
                | ErrorKind::NotConnected => return found(Cause::ConnectionLost),
                ErrorKind::TimedOut => return found(Cause::NoAnswer),
                _ => {}
            }
        }
        if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() || hyper.is_closed() || hyper.is_canceled() {
                return found(Cause::ConnectionLost);
            }
            if hyper.is_timeout() {
                return found(Cause::NoAnswer);
            }
        }
    }
    None
}

/// Pauses between attempts: exponential, half of each pause random, so
/// that many clients throttled together do not come back together.
/// Conflicts clear in milliseconds, RBAC rules load in a fraction of a
/// second; a restarting server takes seconds.
#[derive(Default)]
struct Backoff {
    conflicts: u32,
    denials: u32,
    others: u32,
}

impl Backoff {
    fn pause(&mut self, cause: Cause, server_wait: Option<Duration>) -> Duration {
        let (first, cap, count) = match cause {
            Cause::Conflict => (
                Duration::from_millis(10),
                Duration::from_secs(1),
                &mut self.conflicts,
            ),
            Cause::Forbidden => (
                Duration::from_millis(100),
                Duration::from_secs(1),
                &mut self.denials,
            ),
            _ => (
                Duration::from_millis(200),
                Duration::from_secs(5),
                &mut self.others,
            ),
        };
        let ceiling = first.saturating_mul(1 << (*count).min(16)).min(cap);
        *count += 1;
        let ours = ceiling / 2 + ceiling.mul_f64(fastrand::f64() / 2.0);
        match server_wait {
            Some(wait) => ours.max(wait + wait.mul_f64(fastrand::f64() / 4.0)),
            None => ours,
        }
    }
}

/// How an attempt failed.
enum Failure {
    Api(kube::Error),
    NoAnswer(Duration),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum End {
    /// The last error is final.
    Final,
    /// The deadline came first.
    Deadline,
    /// Terraform asked the provider to stop.
    Stopped,
}

/// How the policy asks whether the API server is ready (its `/readyz`
/// answers 200), which tells a real denial from one while its RBAC rules
/// load.
pub trait Readiness {
    /// Whether the API server says it is ready; `false` without an answer.
    fn ready(&self) -> impl Future<Output = bool> + Send;
}

/// Whether `server` says it is ready within [`READY_CHECK_TIMEOUT`]; not
/// without an answer.
async fn ready(server: &impl Readiness) -> bool {
    tokio::time::timeout(READY_CHECK_TIMEOUT, server.ready())
        .await
        .unwrap_or(false)
}

/// Runs `attempt` until it succeeds or the policy gives up. `reached` says
/// whether the API server has ever answered this process; `server` is
/// asked whether it is ready after a denial.
pub async fn call<T, F, Fut>(
    cluster: &Endpoint,
    reached: &AtomicBool,
    server: &impl Readiness,
    deadline: Deadline,
    call: &Call,
    mut attempt: F,
) -> Result<T, GaveUp>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let started = Instant::now();
    let mut backoff = Backoff::default();
    let mut attempts = 0;
    let mut maybe_applied = false;
    let mut last = None;
    let mut first_denial = None;
    let end = loop {
        attempts += 1;
        let limit = deadline.remaining().min(ATTEMPT_TIMEOUT);
        let outcome = tokio::select! {
            biased;
            () = stop::requested() => {
                // Cut short in flight: a write may have landed.
                maybe_applied = true;
                break End::Stopped;
            }
            outcome = tokio::time::timeout(limit, attempt()) => outcome,
        };
        let (failure, judgement) = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => {
                let judgement = judge(&error, reached.load(Ordering::Relaxed));
                (Failure::Api(error), judgement)
            }
            Err(_) => (
                Failure::NoAnswer(limit),
                Judgement {
                    retry: Some(Cause::NoAnswer),
                    maybe_applied: true,
                    server_wait: None,
                },
            ),
        };
        last = Some(failure);
        maybe_applied |= judgement.maybe_applied;
        let Some(cause) = judgement.retry else {
            break End::Final;
        };
        let pause = backoff.pause(cause, judgement.server_wait);
        if cause == Cause::Forbidden {
            let denied_for = first_denial.get_or_insert_with(Instant::now).elapsed();
            if denied_for + pause > RBAC_LOAD_WINDOW || ready(server).await {
                break End::Final;
            }
        }
        if pause >= deadline.remaining() {
            break End::Deadline;
        }
        tracing::warn!(
            "retry: {} ({}) failed: {cause}; attempt {attempts}, next in {}",
            call.action,
            call.request,
            human(pause)
        );
        tokio::select! {
            biased;
            () = stop::requested() => break End::Stopped,
            () = tokio::time::sleep(pause) => {}
        }
    };
    let not_installed = matches!(&last, Some(Failure::Api(e)) if api_missing(e));
    Err(GaveUp {
        not_installed,
        diagnostics: Tries {
            end,
            attempts,
            elapsed: started.elapsed(),
            deadline,
        }
        .diagnostics(cluster, call, last.as_ref()),
        maybe_applied,
    })
}

/// Runs `attempt` once more for the look at the cluster after an unknown
/// outcome: briefly, with the same policy, and even after StopProvider.
pub async fn check<T, F, Fut>(
    cluster: &Endpoint,
    reached: &AtomicBool,
    server: &impl Readiness,
    call: &Call,
    attempt: F,
) -> Result<T, GaveUp>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let unstoppable = tokio_util::sync::CancellationToken::new();
    stop::scope(
        unstoppable,
        self::call(cluster, reached, server, Deadline::check(), call, attempt),
    )
    .await
}

/// How the attempts at one call went, for its diagnostics.
struct Tries {
    end: End,
    attempts: u32,
    elapsed: Duration,
    deadline: Deadline,
}

impl Tries {
    fn diagnostics(&self, cluster: &Endpoint, call: &Call, last: Option<&Failure>) -> Diagnostics {
        let endpoint = cluster;
        let denied = matches!(last, Some(Failure::Api(e)) if status(e) == Some(403));
        let cluster = endpoint.describe();
        let last = match last {
            Some(Failure::Api(error)) => {
                api_error(endpoint, &call.action, &call.api.to_string(), error)
            }
            Some(Failure::NoAnswer(after)) => Diagnostic::error(
                "Kubernetes did not answer",
                format!(
                    "Could not {}: {cluster} did not answer within {}.",
                    call.action,
                    human(*after)
                ),
            )
            .into(),
            None => Diagnostics::default(),
        };
        let mut diagnostics = if self.end == End::Stopped {
            let mut detail = format!(
                "Terraform asked the provider to stop (StopProvider) while it was trying to {} on {cluster}.",
                call.action
            );
            if let Some(last) = last.0.first() {
                detail += &format!(" The last attempt failed: {} {}", last.summary, last.detail);
            }
            Diagnostic::error("Operation cancelled", detail).into()
        } else {
            last
        };
        let mut note = format!("API call: {}.", call.request);
        if self.attempts > 1 {
            note += &format!(" Tried {} times in {}.", self.attempts, human(self.elapsed));
        }
        if denied && self.end == End::Final && self.attempts > 1 {
            note += &format!(
                " A denial is retried for up to {} while the API server is not ready (one that has just started denies what its RBAC rules allow until it has loaded them); this one lasted.",
                human(RBAC_LOAD_WINDOW)
            );
        }
        if self.end == End::Deadline {
            note += &format!(" Stopped retrying at {}.", self.deadline.describe());
        }
        for diagnostic in &mut diagnostics.0 {
            diagnostic.detail = format!("{}\n\n{note}", diagnostic.detail);
        }
        diagnostics
    }
}

/// `250ms`, `4.2s`, `2m0s`.
fn human(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 1.0 {
        format!("{}ms", duration.as_millis())
    } else if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{}s", duration.as_secs() / 60, duration.as_secs() % 60)
    }
}

/// The layer between kube and the connection that gives the policy what it
/// needs from the server's answers: that the server answered at all, and
/// the `Retry-After` of an error. kube keeps only an error response's body,
/// and the API server's own throttling answers in plain text, saying when to
/// come back only in that header; so the header is carried into the
/// `Status` kube reports, where the API server puts it in its JSON errors
/// (`details.retryAfterSeconds`).
#[derive(Clone)]
pub struct Answers<S> {
    inner: S,
    reached: Arc<AtomicBool>,
}

impl<S> Answers<S> {
    /// Wraps `inner`, recording in `reached` that the server answered.
    pub fn new(inner: S, reached: Arc<AtomicBool>) -> Self {
        Self { inner, reached }
    }
}

impl<S, B> Service<http::Request<kube::client::Body>> for Answers<S>
where
    S: Service<http::Request<kube::client::Body>, Response = http::Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<Either<B, Full<Bytes>>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let answer = self.inner.call(request);
        let reached = self.reached.clone();
        Box::pin(async move {
            let response = answer.await.map_err(Into::into)?;
            reached.store(true, Ordering::Relaxed);
            let code = response.status();
            let retry_after = response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()?.trim().parse::<u32>().ok());
            let Some(seconds) = retry_after
                .filter(|_| code == http::StatusCode::TOO_MANY_REQUESTS || code.is_server_error())
            else {
                return Ok(response.map(Either::Left));
            };
            let (mut parts, body) = response.into_parts();
            let body = body.collect().await.map_err(Into::into)?.to_bytes();
            let status = status_with_retry_after(&body, code.as_u16(), seconds);
            parts.headers.remove(http::header::CONTENT_LENGTH);
            parts.headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            let json = serde_json::to_vec(&status).map_err(BoxError::from)?;
            Ok(http::Response::from_parts(
                parts,
                Either::Right(Full::new(json.into())),
            ))
        })
    }
}

/// The `Status` of an error response's `body`, with `retry_after_seconds`.
fn status_with_retry_after(body: &[u8], code: u16, retry_after_seconds: u32) -> Status {
    let mut status = serde_json::from_slice::<Status>(body).unwrap_or_else(|_| {
        let reason = match code {
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        Status::failure(String::from_utf8_lossy(body).trim(), reason).with_code(code)
    });
    let details = status.details.get_or_insert_with(|| StatusDetails {
        name: String::new(),
        group: String::new(),
        kind: String::new(),
        uid: String::new(),
        causes: Vec::new(),
        retry_after_seconds: 0,
    });
    if details.retry_after_seconds == 0 {
        details.retry_after_seconds = retry_after_seconds;
    }
    status
}

#[cfg(test)]
mod tests;
