//! Overloaded and rate-limiting servers (HTTP `429` and `503`, with and
//! without `Retry-After`), in paused time so that schedules are exact, and
//! the long opaque task ids gateways hand out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_tasks::TaskRef;
use mcp_tasks::protocol::TaskId;

use super::*;

/// Paused time runs through long schedules at once; this bounds a hung
/// test in that time.
async fn paused<F: Future<Output = ()>>(body: F) {
    tokio::time::timeout(Duration::from_secs(3_600), body)
        .await
        .expect("the test did not finish within an hour of paused time");
}

fn export(interval: Duration, done_after: Duration) -> TestServer {
    TestServer::new()
        .tool(ScriptedTool::task(
            "export",
            TaskScript::new()
                .poll_interval(interval)
                .working(ms(10), "exporting")
                .complete(done_after, CallToolResult::text("exported")),
        ))
        .tool(ScriptedTool::immediate(
            "ping",
            CallToolResult::text("pong"),
        ))
}

/// Starts `export` and waits for it to finish, with a long deadline.
async fn run_export(client: Client) -> String {
    let state = client
        .task()
        .timeout(Duration::from_secs(1_800))
        .call_tool("export", json!({}))
        .await
        .unwrap();
    let done = state.finish().await.unwrap();
    done.outcome().result().unwrap().joined_text()
}

fn gaps(reads: &[Seen]) -> Vec<Duration> {
    reads.windows(2).map(|w| w[1].at - w[0].at).collect()
}

#[tokio::test(start_paused = true)]
async fn a_429_with_retry_after_moves_the_next_read_of_every_waiting_task() {
    paused(async {
        let front = Front::start(&export(ms(100), ms(2_000)), Mode::Json).await;
        front.script(|s, n| {
            (s.method == "tasks/get" && n == 3).then(|| Scripted::retry_after(429, "3"))
        });
        let client = connect(&front).await;
        let first = tokio::spawn(run_export(client.clone()));
        // A second task, half an interval behind the first.
        tokio::time::sleep(ms(50)).await;
        let second = tokio::spawn(run_export(client.clone()));
        assert_eq!(first.await.unwrap(), "exported");
        assert_eq!(second.await.unwrap(), "exported");

        let reads = front.seen_of("tasks/get");
        let refused = &reads[3];
        let after: Vec<&Seen> = reads[4..].iter().collect();
        let mut tasks: Vec<String> = after
            .iter()
            .map(|s| s.body["params"]["taskId"].to_string())
            .collect();
        tasks.sort();
        tasks.dedup();
        assert_eq!(tasks.len(), 2, "both tasks were read again");
        for read in &after {
            let waited = read.at - refused.at;
            assert!(
                waited >= Duration::from_secs(3),
                "a read came {waited:?} after the 429"
            );
        }
        // The pause is not a hang: both read again right after it.
        let next = after.iter().map(|s| s.at - refused.at).min().unwrap();
        assert!(next < Duration::from_secs(3) + ms(150), "{next:?}");
        assert_eq!(rejected(&front), []);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_503_without_retry_after_backs_off_exponentially_to_a_cap() {
    paused(async {
        let front = Front::start(&export(ms(1_000), ms(5_000)), Mode::Json).await;
        front.script(|s, n| (s.method == "tasks/get" && n < 9).then(|| Scripted::status(503)));
        let client = connect(&front).await;
        assert_eq!(run_export(client).await, "exported");

        let reads = front.seen_of("tasks/get");
        assert_eq!(reads.len(), 10, "nine refusals, then the completed read");
        let cap = Duration::from_secs(30);
        for (k, gap) in gaps(&reads).into_iter().enumerate() {
            // One interval after the first refusal, doubling after each
            // one, less a jitter of at most a quarter, up to the cap.
            let full = (Duration::from_secs(1) * (1 << k)).min(cap);
            assert!(
                gap >= full * 3 / 4 && gap >= Duration::from_secs(1),
                "retry {k} came after {gap:?}"
            );
            assert!(gap <= full + ms(50), "retry {k} came after {gap:?}");
        }
        let last = gaps(&reads)[8];
        assert!(last >= cap * 3 / 4 && last <= cap + ms(50), "{last:?}");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn retry_after_zero_does_not_poll_faster_than_the_interval() {
    paused(async {
        let front = Front::start(&export(ms(500), ms(4_000)), Mode::Json).await;
        front.script(|s, n| {
            (s.method == "tasks/get" && n < 6).then(|| Scripted::retry_after(429, "0"))
        });
        let client = connect(&front).await;
        assert_eq!(run_export(client).await, "exported");

        let reads = front.seen_of("tasks/get");
        assert!(reads.len() >= 7, "{}", reads.len());
        for (k, gap) in gaps(&reads).into_iter().enumerate() {
            assert!(
                gap >= ms(500),
                "read {} came {gap:?} after the one before",
                k + 1
            );
        }
    })
    .await;
}

/// An HTTP-date `Retry-After` ten seconds ahead of the system clock.
fn ten_seconds_ahead() -> String {
    http_date(SystemTime::now() + Duration::from_secs(10))
}

/// `t` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let (mut days, clock) = (secs / 86_400, secs % 86_400);
    let weekday = DAYS[(days % 7) as usize];
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let mut year = 1970;
    while days >= if leap(year) { 366 } else { 365 } {
        days -= if leap(year) { 366 } else { 365 };
        year += 1;
    }
    let lengths = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while days >= lengths[month] {
        days -= lengths[month];
        month += 1;
    }
    format!(
        "{weekday}, {:02} {} {year} {:02}:{:02}:{:02} GMT",
        days + 1,
        MONTHS[month],
        clock / 3_600,
        clock % 3_600 / 60,
        clock % 60
    )
}

#[test]
fn the_test_dates_are_imf_fixdates() {
    assert_eq!(
        http_date(UNIX_EPOCH + Duration::from_secs(784_111_777)),
        "Sun, 06 Nov 1994 08:49:37 GMT"
    );
    assert_eq!(
        http_date(UNIX_EPOCH + Duration::from_secs(1_709_164_800)),
        "Thu, 29 Feb 2024 00:00:00 GMT"
    );
}

#[tokio::test(start_paused = true)]
async fn an_http_date_retry_after_is_honoured_and_capped() {
    paused(async {
        let front = Front::start(&export(ms(100), ms(20_000)), Mode::Json).await;
        front.script(|s, n| match (s.method.as_str(), n) {
            ("tasks/get", 2) => Some(Scripted::retry_after(503, ten_seconds_ahead())),
            // A gateway's date next century counts as five minutes.
            ("tasks/get", 4) => Some(Scripted::retry_after(429, "Fri, 01 Jan 2100 00:00:00 GMT")),
            _ => None,
        });
        let client = connect(&front).await;
        assert_eq!(run_export(client).await, "exported");

        let reads = front.seen_of("tasks/get");
        let gaps = gaps(&reads);
        // HTTP-dates count whole seconds: between nine and ten seconds.
        assert!(
            gaps[2] > Duration::from_secs(9) && gaps[2] <= Duration::from_secs(10) + ms(50),
            "{:?}",
            gaps[2]
        );
        assert!(gaps[3] < ms(150), "{:?}", gaps[3]);
        let five_minutes = Duration::from_secs(300);
        assert!(
            gaps[4] >= five_minutes && gaps[4] <= five_minutes + ms(50),
            "{:?}",
            gaps[4]
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_tools_call_that_got_503_is_not_sent_again() {
    paused(async {
        let front = Front::start(&export(ms(100), ms(1_000)), Mode::Json).await;
        front.script(|s, n| {
            (s.method == "tools/call" && n == 1).then(|| Scripted::retry_after(503, "2"))
        });
        let client = connect(&front).await;
        let waiting = tokio::spawn(run_export(client.clone()));
        // Between two reads of the task.
        tokio::time::sleep(ms(275)).await;

        let e = client.call_tool("ping", json!({})).await.unwrap_err();
        assert!(e.is_overloaded(), "{e}");
        assert_eq!(e.http_status(), Some(503));
        assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
        // A 503 may come from a gateway after the tool ran.
        assert!(e.is_outcome_unknown() && e.is_transport(), "{e}");

        tokio::time::sleep(Duration::from_secs(10)).await;
        let calls = front.seen_of("tools/call");
        assert_eq!(calls.len(), 2, "the refused call was never sent again");
        // The pause it asked for held the waiting task's reads back too.
        assert_eq!(waiting.await.unwrap(), "exported");
        let refused = &calls[1];
        for read in front.seen_of("tasks/get") {
            assert!(
                read.at <= refused.at || read.at - refused.at >= Duration::from_secs(2),
                "a read came {:?} after the 503",
                read.at - refused.at
            );
        }
        // The transport is fine.
        let r = client.call_tool("ping", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "pong");
        assert_eq!(client.stats().pending_requests, 0);
    })
    .await;
}

/// What a gateway makes of a server's task id: long (hundreds of bytes),
/// with a leading space, quotes, non-ASCII text, a tab and the base64
/// sentinel's markers, and a tail that must never be shown.
fn opaque(inner: &str) -> String {
    format!(
        " gw/v1 {{\"tenant\": \"Zürich ☕\"}}\t=?base64?{inner}?= {}SECRET-TAIL",
        "ø".repeat(150)
    )
}

#[tokio::test]
async fn a_gateway_s_opaque_task_id_goes_through_a_whole_lifecycle() {
    bounded(async {
        let server = approval();
        let front = Front::start(&server, Mode::Sse).await;
        front.rewrite_task_ids(opaque);
        // Once set, reads are refused with a body that quotes the id as
        // JSON, past the length an error message quotes.
        let refuse = Arc::new(AtomicBool::new(false));
        let refusing = refuse.clone();
        front.script(move |s, _| {
            (s.method == "tasks/get" && refusing.load(Ordering::SeqCst)).then(|| {
                let id = serde_json::to_string(&s.body["params"]["taskId"]).unwrap();
                let body = format!(r#"{{"error":"unknown task {}"}}"#, &id[1..id.len() - 1]);
                Scripted::Reply(404, "application/json", body)
            })
        });
        let client = Client::builder()
            .input_handlers(yes())
            .connect(http(&front))
            .await
            .unwrap();

        // Created, saved, dropped, resumed from the saved reference.
        let TaskState::Pending(task) = client.task().call_tool("approve", json!({})).await.unwrap()
        else {
            panic!("a task")
        };
        let handle = front.handles()[0].clone();
        assert!(handle.len() > 300, "{}", handle.len());
        assert_eq!(task.id().expose(), handle);
        let saved = serde_json::to_string(&task.reference()).unwrap();
        for shown in [format!("{task:?}"), format!("{:?}", task.reference())] {
            assert!(
                !shown.contains("SECRET") && !shown.contains("øø"),
                "{shown}"
            );
        }
        drop(task);
        let back: TaskRef = serde_json::from_str(&saved).unwrap();
        assert_eq!(back.task_id().expose(), handle);
        // Shown as its digest, the same after the round trip, never its text.
        let shown = back.task_id().redacted();
        assert_eq!(
            shown,
            mcp_tasks::protocol::TaskId::new(handle.as_str()).redacted()
        );
        assert!(shown.starts_with('#') && !shown.contains("gw"), "{shown}");
        let done = client
            .task()
            .resume(&back)
            .await
            .unwrap()
            .finish()
            .await
            .unwrap();
        let result = done.outcome().result().expect("completed");
        assert_eq!(
            result.structured_content.as_ref().unwrap()["inputResponses"]["confirm"]["action"],
            "accept"
        );
        assert_eq!(done.id().unwrap().expose(), handle);

        // A second one, cancelled.
        let state = client.task().call_tool("approve", json!({})).await.unwrap();
        let TaskState::Pending(task) = state else {
            panic!("a task")
        };
        let cancelled = task.cancel_and_wait().await.unwrap();
        assert!(matches!(cancelled.outcome(), Outcome::Cancelled));

        // Every tasks/* request named its handle, in the body and (as
        // base64, since it is not plain visible ASCII) in Mcp-Name; the
        // front checks both agree, and relays the server's own id.
        assert_eq!(rejected(&front), []);
        let handles = front.handles();
        assert_eq!(handles.len(), 2);
        let methods: Vec<String> = front
            .seen()
            .into_iter()
            .filter(|s| s.method.starts_with("tasks/"))
            .map(|s| {
                let id = s.body["params"]["taskId"].as_str().unwrap().to_owned();
                assert!(handles.contains(&id), "{}", s.method);
                let header = s.header("mcp-name").unwrap();
                assert!(header.starts_with("=?base64?"), "{header}");
                assert_eq!(decode(header).as_deref(), Some(id.as_str()));
                s.method
            })
            .collect();
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            assert!(
                methods.iter().any(|m| m == method),
                "no {method}: {methods:?}"
            );
        }
        let ids: Vec<String> = server
            .task_ids()
            .iter()
            .map(|id| opaque(id.expose()))
            .collect();
        assert_eq!(ids, handles, "the server saw its own ids");

        // An error that echoes the id shows its short form only.
        refuse.store(true, Ordering::SeqCst);
        let id = TaskId::new(handle.as_str());
        let e = client.get_task(&id).await.unwrap_err();
        assert_eq!(e.http_status(), Some(404));
        assert_eq!(e.task_id(), Some(&id));
        for shown in [e.to_string(), format!("{e:?}")] {
            for secret in ["SECRET", "øøøø", "Zürich"] {
                assert!(!shown.contains(secret), "{shown}");
            }
            assert!(shown.contains(&id.redacted()), "{shown}");
        }
    })
    .await;
}
