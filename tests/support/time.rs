//! Time helpers shared by every test binary, the `harness = false` ones
//! included (they take this file by path, without the rest of `support`).

use std::future::Future;
use std::time::Duration;

/// How long one test may run before it counts as hung.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs a test body with a bound of [`LIMIT`], so no test can hang.
pub async fn bounded<F: Future<Output = ()>>(body: F) {
    tokio::time::timeout(LIMIT, body)
        .await
        .unwrap_or_else(|_| panic!("the test did not finish in {LIMIT:?}"));
}
