//! HTTP faults: server errors (5xx) and connection resets on `tasks/get`
//! and `tools/call`.
//!
//! The loopback front of `support/http_server.rs` (127.0.0.1 only) relays
//! each POST to a `TestServer`, or misbehaves on the requests a test names:
//! it answers with a status and no body, or resets the connection (before
//! or after the server did the work). One exchange per connection, so a
//! reset hits exactly one request. Real sockets mean real time: waits are
//! short and every test is bounded.

#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/loopback.rs"]
mod loopback;
mod support;

use std::time::Duration;

use http_server::{Front, Mode, Scripted, Seen};
use mcp_tasks::testing::{TaskScript, TestServer};
use mcp_tasks::transport::Http;
use mcp_tasks::{Client, TaskState};
use serde_json::json;
use support::*;

/// Starts a front for `server`; `rule` decides what becomes of the n-th
/// (0-based) POST of each method: `None` relays it.
async fn start_front(
    server: &TestServer,
    rule: impl Fn(&str, usize) -> Option<Scripted> + Send + Sync + 'static,
) -> Front {
    let front = Front::start(server, Mode::Json).await;
    front.one_exchange_per_connection();
    front.script(move |seen: &Seen, n| rule(&seen.method, n));
    front
}

/// How many POSTs of `method` reached the front, whatever became of them.
fn count(front: &Front, method: &str) -> usize {
    front.seen_of(method).len()
}

/// Read every 20 ms, complete after `done_after` ms.
fn exporting(done_after: u64) -> TaskScript {
    TaskScript::new()
        .poll_interval(ms(20))
        .complete(ms(done_after), text("exported"))
}

async fn connect(front: &Front) -> Client {
    Client::builder()
        .request_timeout(Duration::from_secs(5))
        .connect(Http::new(&front.url).bearer_token("tok-secret"))
        .await
        .unwrap()
}

#[tokio::test]
async fn server_errors_and_resets_on_tasks_get_are_retried_within_the_deadline() {
    bounded(async {
        let server = export(exporting(150));
        let front = start_front(&server, |method, n| match (method, n) {
            ("tasks/get", 0) => Some(Scripted::status(503)),
            ("tasks/get", 1) => Some(Scripted::Reset),
            ("tasks/get", 2) => Some(Scripted::status(500)),
            ("tasks/get", 3) => Some(Scripted::ResetAfterRelay),
            _ => None,
        })
        .await;
        let client = connect(&front).await;
        let done = run_task(client.task().timeout(Duration::from_secs(10)), "export")
            .await
            .unwrap();
        assert_eq!(done.into_result().unwrap().joined_text(), "exported");
        assert!(
            count(&front, "tasks/get") >= 5,
            "{}",
            count(&front, "tasks/get")
        );
        assert_eq!(count(&front, "tools/call"), 1);
        assert_eq!(client.stats().pending_requests, 0);
        assert!(
            client.closed_reason().is_none(),
            "one bad exchange does not close the client"
        );
    })
    .await;
}

#[tokio::test]
async fn a_tasks_get_that_always_fails_ends_at_the_deadline_with_the_handle() {
    bounded(async {
        let server = export(exporting(60_000));
        let front = start_front(&server, |method, n| match method {
            "tasks/get" if n % 2 == 0 => Some(Scripted::status(502)),
            "tasks/get" => Some(Scripted::Reset),
            _ => None,
        })
        .await;
        let client = connect(&front).await;
        let err = run_task(client.task().timeout(Duration::from_secs(1)), "export")
            .await
            .unwrap_err();
        assert!(err.error().is_deadline(), "{}", err.error());
        assert!(matches!(err.into_task(), TaskState::Pending(_)));
        // Retries back off (100 ms, then the poll interval's floor of
        // 100 ms): a handful of reads in one second, not a storm.
        let gets = count(&front, "tasks/get");
        assert!((2..=12).contains(&gets), "{gets} reads");
        assert_eq!(client.stats().pending_requests, 0);
    })
    .await;
}

#[tokio::test]
async fn a_reset_on_tools_call_is_outcome_unknown_and_not_retried() {
    bounded(async {
        let server = export(exporting(60_000));
        let front = start_front(&server, |method, n| match (method, n) {
            ("tools/call", 0) => Some(Scripted::ResetAfterRelay),
            _ => None,
        })
        .await;
        let client = connect(&front).await;
        let e = client.call_tool("export", json!({})).await.unwrap_err();
        assert!(e.is_outcome_unknown() && e.is_transport(), "{e}");
        assert_eq!(count(&front, "tools/call"), 1, "never retried");
        assert_eq!(
            server.task_ids().len(),
            1,
            "the server started the work the client cannot see"
        );
        assert_eq!(client.stats().pending_requests, 0);
    })
    .await;
}

#[tokio::test]
async fn a_server_error_on_tools_call_is_outcome_unknown_and_not_retried() {
    bounded(async {
        let server = export(exporting(50));
        let front = start_front(&server, |method, n| match (method, n) {
            ("tools/call", 0) => Some(Scripted::status(500)),
            ("tools/call", 1) => Some(Scripted::Reset),
            _ => None,
        })
        .await;
        let client = connect(&front).await;
        for _ in 0..2 {
            let e = client.call_tool("export", json!({})).await.unwrap_err();
            assert!(e.is_outcome_unknown(), "{e}");
        }
        assert_eq!(count(&front, "tools/call"), 2, "one POST per call");
        // The third call goes through: the client is still usable.
        let r = client.call_tool("export", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "exported");
        assert_eq!(count(&front, "tools/call"), 3);
    })
    .await;
}
