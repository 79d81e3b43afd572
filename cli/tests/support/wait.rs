//! Waiting for a child process, bounded in time: no test may hang on one.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Waits for `child` at most `limit`: its exit status, or `None` once it
/// has run past `limit` and been killed.
pub fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("its status") {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
