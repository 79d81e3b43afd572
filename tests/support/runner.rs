//! A minimal test runner for test binaries that are also their own stdio
//! server (`harness = false`): libtest would write to stdout, which belongs
//! to the protocol in server mode.

use std::future::Future;
use std::pin::Pin;

use crate::time::bounded;

/// One test case: a function returning its future.
pub type Case = fn() -> Pin<Box<dyn Future<Output = ()>>>;

/// Runs each case (filtered by the first non-flag argument) on a fresh
/// runtime, bounded by `time::LIMIT` (a test past it fails with a panic
/// that says so), prints libtest-like lines and the closing
/// `N passed, N failed`, and exits non-zero on any failure.
pub fn run(args: &[String], cases: &[(&str, Case)]) {
    if run_each(args, cases.iter().copied()) > 0 {
        std::process::exit(1);
    }
}

/// As [`run`], for cases that are any closure making the test's future
/// (a test given a fixture, say); returns how many failed, so that the
/// caller can clean up before it exits.
pub fn run_each<'a, F>(args: &[String], cases: impl IntoIterator<Item = (&'a str, F)>) -> usize
where
    F: FnOnce() -> Pin<Box<dyn Future<Output = ()>>>,
{
    let filter = args.iter().skip(1).find(|a| !a.starts_with('-'));
    let (mut passed, mut failed) = (0, 0);
    for (name, case) in cases {
        if filter.is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let rt = tokio::runtime::Runtime::new().unwrap();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(bounded(case()))
        }));
        match outcome {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok");
            }
            Err(_) => {
                failed += 1;
                println!("test {name} ... FAILED");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    failed
}

/// The cases of a list of test functions (each an `async fn()`), named
/// after them, as [`run`] takes them; or of `name => future` pairs.
macro_rules! cases {
    ($($name:ident => $run:expr),* $(,)?) => {
        [$((stringify!($name), (|| Box::pin($run)) as $crate::runner::Case)),*]
    };
    ($($test:ident),* $(,)?) => {
        [$((stringify!($test), (|| Box::pin($test())) as $crate::runner::Case)),*]
    };
}
pub(crate) use cases;
