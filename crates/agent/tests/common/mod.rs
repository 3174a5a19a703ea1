//! What the agent's end-to-end tests share: bounded waiting.

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Polls `f` until it gives a value, failing the test with `what` after `timeout`.
pub async fn wait_within<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`wait_within`] 20 seconds.
pub async fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_within(what, Duration::from_secs(20), f).await
}
