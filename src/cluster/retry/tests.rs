use super::*;
use std::sync::atomic::AtomicU32;

fn api(code: u16, retry_after: u32) -> kube::Error {
    let status = status_with_retry_after(
        b"Too many requests, please try again later.",
        code,
        retry_after,
    );
    kube::Error::Api(Box::new(status))
}

fn io(kind: std::io::ErrorKind) -> kube::Error {
    kube::Error::Service(Box::new(std::io::Error::new(kind, "test")))
}

fn call_named() -> Call {
    Call {
        action: "create PriorityClass \"x\"".into(),
        request: "PATCH scheduling.k8s.io/v1 PriorityClass \"x\" (server-side apply as gpufleet)"
            .into(),
        api: Kind::new("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses"),
    }
}

#[test]
fn what_is_worth_another_attempt() {
    let retried = |e: &kube::Error| judge(e, true).retry;
    assert_eq!(retried(&api(409, 0)), Some(Cause::Conflict));
    assert_eq!(retried(&api(429, 1)), Some(Cause::Throttled));
    assert_eq!(retried(&api(503, 0)), Some(Cause::ServerError(503)));
    assert_eq!(retried(&api(403, 0)), Some(Cause::Forbidden));
    for final_code in [400, 401, 404, 422] {
        assert_eq!(retried(&api(final_code, 0)), None, "{final_code}");
    }
    assert_eq!(
        judge(&api(429, 3), true).server_wait,
        Some(Duration::from_secs(3))
    );
    use std::io::ErrorKind::*;
    assert_eq!(retried(&io(ConnectionRefused)), Some(Cause::Refused));
    assert_eq!(retried(&io(ConnectionReset)), Some(Cause::ConnectionLost));
    assert_eq!(retried(&io(TimedOut)), Some(Cause::NoAnswer));
    assert_eq!(retried(&io(InvalidData)), None, "a TLS failure is final");
    // A reset that an io::Error of another kind wraps (as the TLS
    // handshake's errors come), which hides it from `source()`.
    let wrapped = std::io::Error::other(std::io::Error::new(ConnectionReset, "reset"));
    assert_eq!(
        retried(&kube::Error::Service(Box::new(wrapped))),
        Some(Cause::ConnectionLost)
    );
    // A server never reached is not waited for; one that accepted the
    // connection is.
    assert_eq!(judge(&io(ConnectionRefused), false).retry, None);
    assert_eq!(
        judge(&io(ConnectionReset), false).retry,
        Some(Cause::ConnectionLost)
    );
    // Only an answer that may have been lost leaves the outcome open.
    assert!(!judge(&io(ConnectionRefused), true).maybe_applied);
    assert!(judge(&io(ConnectionReset), true).maybe_applied);
    assert!(judge(&api(500, 0), true).maybe_applied);
    assert!(!judge(&api(429, 0), true).maybe_applied);
}

#[test]
fn plain_text_throttling_keeps_its_message_and_gains_retry_after() {
    let status = status_with_retry_after(b"Too many requests, please try again later.\n", 429, 2);
    assert_eq!(status.message, "Too many requests, please try again later.");
    assert_eq!(status.code, 429);
    assert_eq!(status.details.unwrap().retry_after_seconds, 2);
    let json =
        br#"{"kind":"Status","code":504,"message":"timeout","details":{"retryAfterSeconds":5}}"#;
    let status = status_with_retry_after(json, 504, 1);
    assert_eq!(
        status.details.unwrap().retry_after_seconds,
        5,
        "the body's own value wins"
    );
}

#[test]
fn pauses_grow_with_jitter_and_honour_the_server() {
    let mut backoff = Backoff::default();
    let pauses: Vec<Duration> = (0..8)
        .map(|_| backoff.pause(Cause::Refused, None))
        .collect();
    assert!(pauses[0] >= Duration::from_millis(100) && pauses[0] <= Duration::from_millis(200));
    assert!(pauses[7] >= Duration::from_millis(2500) && pauses[7] <= Duration::from_secs(5));
    let conflict = backoff.pause(Cause::Conflict, None);
    assert!(
        conflict <= Duration::from_millis(10),
        "conflicts back off on their own"
    );
    let throttled = Backoff::default().pause(Cause::Throttled, Some(Duration::from_secs(3)));
    assert!(throttled >= Duration::from_secs(3) && throttled <= Duration::from_millis(3750));
}

/// An API server that says whether it is ready, and counts the asking.
struct Server {
    ready: bool,
    asked: AtomicU32,
}

impl Server {
    fn ready(ready: bool) -> Self {
        Self {
            ready,
            asked: AtomicU32::new(0),
        }
    }
}

impl Readiness for Server {
    async fn ready(&self) -> bool {
        self.asked.fetch_add(1, Ordering::Relaxed);
        self.ready
    }
}

async fn run(
    budget: Duration,
    reached: bool,
    errors: impl Fn(u32) -> Option<kube::Error>,
) -> (Result<u32, GaveUp>, u32) {
    run_against(&Server::ready(true), budget, reached, errors).await
}

async fn run_against(
    server: &Server,
    budget: Duration,
    reached: bool,
    errors: impl Fn(u32) -> Option<kube::Error>,
) -> (Result<u32, GaveUp>, u32) {
    let tries = AtomicU32::new(0);
    let deadline = Deadline::after(budget, Source::Configured(Operation::Create));
    let endpoint = Endpoint {
        server: Some("https://k".to_string()),
        ..Endpoint::default()
    };
    let result = call(
        &endpoint,
        &AtomicBool::new(reached),
        server,
        deadline,
        &call_named(),
        || {
            let n = tries.fetch_add(1, Ordering::Relaxed);
            let outcome = errors(n).map_or(Ok(n), Err);
            async move { outcome }
        },
    )
    .await;
    (result, tries.load(Ordering::Relaxed))
}

#[tokio::test(start_paused = true)]
async fn retries_until_it_works() {
    let (result, tries) = run(Duration::from_secs(60), true, |n| {
        (n < 3).then(|| api(503, 0))
    })
    .await;
    assert_eq!(result.unwrap(), 3);
    assert_eq!(tries, 4);
}

#[tokio::test(start_paused = true)]
async fn a_final_error_is_not_repeated() {
    let (result, tries) = run(Duration::from_secs(60), true, |_| Some(api(422, 0))).await;
    let gave_up = result.unwrap_err();
    assert_eq!(tries, 1);
    assert!(!gave_up.maybe_applied);
    let d = &gave_up.diagnostics.0[0];
    assert_eq!(d.summary, "Kubernetes rejected the object");
    assert!(
        d.detail
            .contains("API call: PATCH scheduling.k8s.io/v1 PriorityClass \"x\""),
        "{}",
        d.detail
    );
    assert!(!d.detail.contains("Tried"), "{}", d.detail);
}

/// A 403 as kube-apiserver's RBAC authorizer gives it.
fn denied() -> kube::Error {
    let message = "priorityclasses.scheduling.k8s.io \"x\" is forbidden: User \"gpufleet-provider\" cannot patch resource \"priorityclasses\" in API group \"scheduling.k8s.io\" at the cluster scope";
    kube::Error::Api(Box::new(
        Status::failure(message, "Forbidden").with_code(403),
    ))
}

#[tokio::test(start_paused = true)]
async fn a_denial_while_rbac_rules_load_is_retried() {
    let loading = Server::ready(false);
    let started = Instant::now();
    let (result, tries) = run_against(&loading, Duration::from_secs(60), true, |n| {
        (n < 4).then(denied)
    })
    .await;
    assert_eq!(result.unwrap(), 4);
    assert_eq!(tries, 5);
    assert_eq!(loading.asked.load(Ordering::Relaxed), 4);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_denial_by_a_ready_server_is_final_at_once_with_its_message() {
    let ready = Server::ready(true);
    let (result, tries) =
        run_against(&ready, Duration::from_secs(60), true, |_| Some(denied())).await;
    let gave_up = result.unwrap_err();
    assert_eq!((tries, ready.asked.load(Ordering::Relaxed)), (1, 1));
    let d = &gave_up.diagnostics.0[0];
    assert_eq!(d.summary, "Permission denied by Kubernetes");
    assert!(
        d.detail.contains("User \"gpufleet-provider\" cannot patch"),
        "{}",
        d.detail
    );
    assert!(!d.detail.contains("Tried"), "{}", d.detail);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_does_not_say_it_is_ready_is_not() {
    struct Silent;
    impl Readiness for Silent {
        async fn ready(&self) -> bool {
            std::future::pending().await
        }
    }
    let started = Instant::now();
    assert!(!ready(&Silent).await);
    assert_eq!(started.elapsed(), READY_CHECK_TIMEOUT);
    assert!(ready(&Server::ready(true)).await);
}

#[tokio::test(start_paused = true)]
async fn a_lasting_denial_is_final_within_the_window_with_its_message() {
    // A server that never says it is ready (one whose `/readyz` is not
    // everyone's to read), and even at plan, whose look at the cluster has
    // 10 s: the denial is what is reported, not a deadline.
    let started = Instant::now();
    let (result, tries) = run_against(
        &Server::ready(false),
        PLAN_TIMEOUT,
        true,
        |_| Some(denied()),
    )
    .await;
    let gave_up = result.unwrap_err();
    assert!(
        started.elapsed() <= RBAC_LOAD_WINDOW,
        "{:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= RBAC_LOAD_WINDOW / 2,
        "{:?}",
        started.elapsed()
    );
    assert!(tries > 3, "{tries}");
    assert!(!gave_up.maybe_applied);
    let d = &gave_up.diagnostics.0[0];
    assert_eq!(d.summary, "Permission denied by Kubernetes");
    assert!(
        d.detail.contains("User \"gpufleet-provider\" cannot patch"),
        "{}",
        d.detail
    );
    assert!(
        d.detail.contains("A denial is retried for up to 5.0s"),
        "{}",
        d.detail
    );
    assert!(!d.detail.contains("Stopped retrying"), "{}", d.detail);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_ends_retries_with_the_last_error() {
    let started = Instant::now();
    let (result, tries) = run(Duration::from_secs(10), true, |_| {
        Some(io(std::io::ErrorKind::ConnectionReset))
    })
    .await;
    let gave_up = result.unwrap_err();
    assert!(started.elapsed() <= Duration::from_secs(10));
    assert!(tries > 3, "{tries}");
    assert!(gave_up.maybe_applied);
    let detail = &gave_up.diagnostics.0[0].detail;
    assert!(
        detail.contains("Could not create PriorityClass \"x\""),
        "{detail}"
    );
    assert!(detail.contains(&format!("Tried {tries} times")), "{detail}");
    assert!(
        detail.contains("the deadline of 10.0s set by `timeouts.create`"),
        "{detail}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_servers_retry_after_sets_the_pace() {
    let started = Instant::now();
    let (result, tries) = run(Duration::from_secs(60), true, |n| {
        (n < 2).then(|| api(429, 4))
    })
    .await;
    assert_eq!(result.unwrap(), 2);
    assert_eq!(tries, 3);
    assert!(started.elapsed() >= Duration::from_secs(8));
}

#[tokio::test(start_paused = true)]
async fn stop_ends_the_wait_at_once() {
    let token = tokio_util::sync::CancellationToken::new();
    let stopper = {
        let token = token.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            token.cancel();
        }
    };
    let started = Instant::now();
    let running = stop::scope(
        token,
        run(Duration::from_secs(600), true, |_| Some(api(503, 0))),
    );
    let ((result, _), ()) = tokio::join!(running, stopper);
    let gave_up = result.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(6));
    let d = &gave_up.diagnostics.0[0];
    assert_eq!(d.summary, "Operation cancelled");
    assert!(
        d.detail.contains("server error") || d.detail.contains("503"),
        "{}",
        d.detail
    );
}
