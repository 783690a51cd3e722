//! The one retry policy for cluster writes.

use std::future::Future;
use std::time::Duration;

use super::errors::status;

/// Retries `attempt` while it fails with a write conflict (HTTP 409, a stale
/// resourceVersion), with a short growing pause; other errors end at once.
pub async fn retry_on_conflict<T, F, Fut>(mut attempt: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    const ATTEMPTS: u32 = 20;
    let mut pause = Duration::from_millis(10);
    for _ in 1..ATTEMPTS {
        match attempt().await {
            Err(e) if status(&e) == Some(409) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            other => return other,
        }
    }
    attempt().await
}
