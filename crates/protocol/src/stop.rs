//! StopProvider as the code running an operation sees it. Terraform calls
//! StopProvider on Ctrl-C and then waits for the operations in flight, so
//! they must not be dropped (an apply would lose what it wrote) but must stop
//! waiting and retrying, and say what they did. The server runs every
//! operation inside [`scope`]; whatever it awaits, however deep, can ask
//! [`requested`] without the signal being passed through every signature.

use std::future::Future;

use tokio_util::sync::CancellationToken;

tokio::task_local! {
    static STOP: CancellationToken;
}

/// Runs `work` with `token` as its stop signal.
pub async fn scope<F: Future>(token: CancellationToken, work: F) -> F::Output {
    STOP.scope(token, work).await
}

/// Resolves once Terraform has asked the provider to stop the operation
/// this runs in; never outside an operation.
pub async fn requested() {
    match STOP.try_with(CancellationToken::clone) {
        Ok(token) => token.cancelled_owned().await,
        Err(_) => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn only_the_scoped_operation_sees_its_stop() {
        let token = CancellationToken::new();
        let waiting = tokio::spawn(scope(token.clone(), requested()));
        let unscoped = tokio::spawn(requested());
        token.cancel();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the scoped wait ends on stop")
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!unscoped.is_finished());
        unscoped.abort();
    }
}
