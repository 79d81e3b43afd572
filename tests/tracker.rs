//! The tracker, in one process, on the memory store and the scripted
//! server: outcomes delivered until acknowledged, questions answered once,
//! cancels from elsewhere, tasks the server forgot, stale workers.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mcp_tasks::protocol::{ElicitResult, InputResponse, TaskId, TaskStatus};
use mcp_tasks::store::backend::{Claim, Fence, NewTask, Reservation};
use mcp_tasks::store::{
    Ending, Filter, Label, MemoryStore, RecordId, RecordState, TaskRecord, TaskStore, Tracker,
    Tracking,
};
use mcp_tasks::testing::{
    HookedStore, ScriptedTool, StoreCall, StoreReply, TaskScript, TestServer,
};
use mcp_tasks::{Client, TaskRef, TaskState};
use serde_json::json;
use support::*;
use tokio::sync::Semaphore;

fn server() -> TestServer {
    tracker_server()
}

/// The tracker's scripted server and a client connected to it.
async fn connected() -> (TestServer, Client) {
    let server = server();
    let client = client(&server).await;
    (server, client)
}

/// [`connected`], and worker `w1`'s tracker on a fresh memory store.
async fn tracked() -> (TestServer, Client, Tracker<MemoryStore, Client>) {
    let (server, client) = connected().await;
    let tracker = tracker(MemoryStore::new(), &client);
    (server, client, tracker)
}

fn tracker<S: TaskStore>(store: S, client: &Client) -> Tracker<S, Client> {
    Tracker::builder(store, client.clone())
        .worker("w1")
        .min_poll_interval(ms(5))
        .build()
}

/// Passes until `n` endings were acknowledged (bounded: a tracker that
/// never finishes fails the test instead of hanging it).
async fn endings<S: TaskStore>(tracker: &Tracker<S, Client>, n: usize) -> Vec<(RecordId, Ending)> {
    let mut out = Vec::new();
    for _ in 0..1_000 {
        tracker
            .pass(|d| {
                out.push((d.id(), d.ending().clone()));
                async { true }
            })
            .await
            .unwrap();
        if out.len() >= n {
            return out;
        }
        tokio::time::sleep(ms(5)).await;
    }
    panic!("only {} of {n} endings after 1,000 passes", out.len());
}

/// Five passes claim nothing and deliver nothing.
async fn assert_never_delivered_again<S: TaskStore>(tracker: &Tracker<S, Client>) {
    for _ in 0..5 {
        let pass = tracker
            .pass(|_| async { panic!("delivered twice") })
            .await
            .unwrap();
        assert_eq!(pass.claimed, 0);
    }
}

async fn record<S: TaskStore>(tracker: &Tracker<S, Client>, id: RecordId) -> TaskRecord {
    tracker.store().get(id).await.unwrap().expect("the record")
}

#[tokio::test]
async fn a_tracked_task_ends_and_its_outcome_is_delivered_once_acknowledged() {
    let (_server, client, tracker) = tracked().await;
    let id = tracker
        .call_tool(client.task(), "export", json!({}))
        .await
        .unwrap()
        .record()
        .expect("a task");
    let r = record(&tracker, id).await;
    assert_eq!(r.tool, "export");
    assert_eq!(r.status, TaskStatus::Working);

    let got = endings(&tracker, 1).await;
    assert_eq!(got.len(), 1);
    let (got_id, Ending::Completed { result }) = &got[0] else {
        panic!("{got:?}")
    };
    assert_eq!(*got_id, id);
    assert_eq!(*result, text("exported"));
    let r = record(&tracker, id).await;
    assert!(r.delivered);
    // Acknowledged: never again, however many passes.
    assert_never_delivered_again(&tracker).await;
}

#[tokio::test]
async fn an_unacknowledged_outcome_is_delivered_again() {
    let (_server, client) = connected().await;
    let tracker = Tracker::builder(MemoryStore::new(), client.clone())
        .min_poll_interval(ms(5))
        .lease(ms(30))
        .build();
    tracker
        .call_tool(client.task(), "export", ())
        .await
        .unwrap();
    let offered = AtomicUsize::new(0);
    for _ in 0..1_000 {
        tracker
            .pass(|_| {
                // Refused the first time, as a crash before the
                // acknowledgement would.
                let n = offered.fetch_add(1, Ordering::SeqCst);
                async move { n > 0 }
            })
            .await
            .unwrap();
        if offered.load(Ordering::SeqCst) == 2 {
            break;
        }
        tokio::time::sleep(ms(5)).await;
    }
    assert_eq!(
        offered.load(Ordering::SeqCst),
        2,
        "offered again after the lease"
    );
    let delivered = tracker
        .store()
        .list(&Filter::all().state(RecordState::Delivered))
        .await
        .unwrap();
    assert_eq!(delivered.len(), 1);
}

#[tokio::test]
async fn a_question_is_answered_once_by_the_handler_and_recorded() {
    let server = server();
    let calls = Arc::new(AtomicUsize::new(0));
    let client = client_with(&server, counting_forms(calls.clone())).await;
    let tracker = tracker(MemoryStore::new(), &client);
    let id = track(&tracker, &client, "approve").await;
    let got = endings(&tracker, 1).await;
    let Ending::Completed { result } = &got[0].1 else {
        panic!("{got:?}")
    };
    let answers = &result.structured_content.as_ref().unwrap()["inputResponses"];
    assert_eq!(answers["confirm"]["content"]["ok"], true);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the handler is asked once");
    assert_eq!(of(&server, "tasks/update").len(), 1, "one answer sent");
    let r = record(&tracker, id).await;
    assert!(r.answers["confirm"].taken, "{:?}", r.answers);
}

#[tokio::test]
async fn a_recorded_answer_is_sent_again_without_asking_the_handler() {
    let server = server();
    // First a worker whose client has no handler: the task waits with its
    // question, as it would after a crash between recording and sending.
    let bare = client(&server).await;
    let store = MemoryStore::new();
    let first = tracker(store.clone(), &bare);
    let id = track(&first, &bare, "approve").await;
    for _ in 0..1_000 {
        first.pass(|_| async { true }).await.unwrap();
        if record(&first, id).await.status == TaskStatus::InputRequired {
            break;
        }
        tokio::time::sleep(ms(5)).await;
    }
    assert_eq!(record(&first, id).await.status, TaskStatus::InputRequired);
    // The answer recorded, the write never sent.
    let held = store
        .claim(Claim {
            worker: "crashed",
            limit: 1,
            now: SystemTime::now(),
            lease: ms(1),
            record: Some(id),
        })
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let recorded: InputResponse = ElicitResult::accept(json!({"ok": false})).into();
    let fence = held.fence().unwrap();
    store
        .record_answer(id, fence, "confirm", &recorded)
        .await
        .unwrap();
    assert_eq!(of(&server, "tasks/update").len(), 0);

    // A worker that could ask a person does not: it sends what was recorded.
    let calls = Arc::new(AtomicUsize::new(0));
    let client = client_with(&server, counting_forms(calls.clone())).await;
    tokio::time::sleep(ms(5)).await;
    let got = endings(&tracker(store.clone(), &client), 1).await;
    let Ending::Completed { result } = &got[0].1 else {
        panic!("{got:?}")
    };
    let answers = &result.structured_content.as_ref().unwrap()["inputResponses"];
    assert_eq!(answers["confirm"]["content"]["ok"], false);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the handler is never asked"
    );
    assert_eq!(
        of(&server, "tasks/update").len(),
        1,
        "the server took one answer"
    );
}

#[tokio::test]
async fn a_cancel_asked_for_elsewhere_cancels_the_task_on_the_server() {
    let (server, client) = connected().await;
    let store = MemoryStore::new();
    let tracker = tracker(store.clone(), &client);
    let id = track(&tracker, &client, "long").await;
    tracker.pass(|_| async { true }).await.unwrap();
    // Another process shares the store, not the tracker.
    assert!(store.request_cancel(id, SystemTime::now()).await.unwrap());
    let got = endings(&tracker, 1).await;
    assert_eq!(got[0], (id, Ending::Cancelled));
    assert_eq!(of(&server, "tasks/cancel").len(), 1);
    assert!(!tracker.cancel(id).await.unwrap(), "already ended");
}

#[tokio::test]
async fn a_failed_task_is_delivered_as_failed() {
    let (_server, client, tracker) = tracked().await;
    tracker
        .call_tool(client.task(), "broken", ())
        .await
        .unwrap();
    let got = endings(&tracker, 1).await;
    let Ending::Failed { error } = &got[0].1 else {
        panic!("{got:?}")
    };
    assert_eq!(error.code, -32000);
    assert_eq!(error.message, "disk on fire");
}

#[tokio::test]
async fn a_task_the_server_does_not_know_ends_unreachable_once() {
    let (server, _client, tracker) = tracked().await;
    let reference = TaskRef::new(TaskId::new("forgotten-by-a-restart"), None)
        .with_protocol_version("2026-07-28");
    let id = tracker
        .store()
        .insert(working_task(reference, SystemTime::now(), None))
        .await
        .unwrap();
    let got = endings(&tracker, 1).await;
    assert_eq!(got[0].0, id);
    assert!(got[0].1.is_unreachable(), "{got:?}");
    assert_never_delivered_again(&tracker).await;
    assert_eq!(
        of(&server, "tasks/get").len(),
        1,
        "read once, never retried"
    );
}

#[tokio::test]
async fn a_tracked_task_can_be_taken_back_as_a_handle() {
    let (_server, client, tracker) = tracked().await;
    let id = track(&tracker, &client, "export").await;
    let state = tracker.take(id).await.unwrap();
    assert!(
        tracker.store().get(id).await.unwrap().is_none(),
        "no longer tracked"
    );
    let done = state.finish().await.unwrap();
    assert_eq!(done.outcome().result(), Some(&text("exported")));
    assert_eq!(tracker.pass(|_| async { true }).await.unwrap().claimed, 0);
}

#[tokio::test]
async fn a_read_is_next_due_one_server_interval_later() {
    let server = TestServer::new().tool(ScriptedTool::task(
        "slow",
        TaskScript::new()
            .poll_interval(ms(700))
            .working(Duration::from_secs(3600), "working"),
    ));
    let client = client(&server).await;
    let tracker = tracker(MemoryStore::new(), &client);
    let id = track(&tracker, &client, "slow").await;
    let before = SystemTime::now();
    assert_eq!(tracker.pass(|_| async { true }).await.unwrap().stepped, 1);
    let after = SystemTime::now();
    let r = record(&tracker, id).await;
    assert_eq!(r.poll_interval_ms, Some(700));
    assert!(
        r.due >= before + ms(700) && r.due <= after + ms(700),
        "{r:?}"
    );
    // Not due yet: the next pass reads nothing.
    assert_eq!(tracker.pass(|_| async { true }).await.unwrap().claimed, 0);
    assert_eq!(of(&server, "tasks/get").len(), 1);
}

/// A memory store whose every `save` comes after another worker (`w2`)
/// took the record over, as for a worker stopped past its lease; `fences`
/// gets the other worker's fence for each.
fn overtaken(fences: &Arc<Mutex<Vec<Fence>>>) -> HookedStore<MemoryStore> {
    let inner = MemoryStore::new();
    let fences = fences.clone();
    HookedStore::new(inner.clone()).before_async(move |call| {
        let saved = match *call {
            StoreCall::Save { id, .. } => Some(id),
            _ => None,
        };
        let (inner, fences) = (inner.clone(), fences.clone());
        async move {
            let Some(id) = saved else { return Ok(()) };
            let later = SystemTime::now() + Duration::from_secs(3600);
            let other = inner
                .claim(Claim {
                    worker: "w2",
                    limit: 1,
                    now: later,
                    lease: Duration::from_secs(30),
                    record: Some(id),
                })
                .await?;
            let fence = other[0].as_ref().unwrap().fence().unwrap();
            fences.lock().unwrap().push(fence);
            Ok(())
        }
    })
}

#[tokio::test]
async fn a_worker_overtaken_after_its_lease_cannot_write() {
    let (_server, client) = connected().await;
    let fences = Arc::default();
    let store = overtaken(&fences);
    let tracker = tracker(store.clone(), &client);
    let id = track(&tracker, &client, "long").await;
    let pass = tracker.pass(|_| async { true }).await.unwrap();
    assert_eq!((pass.stepped, pass.stale), (0, 1), "{pass:?}");
    let r = store.inner().get(id).await.unwrap().unwrap();
    let lease = r.lease.unwrap();
    assert_eq!(lease.owner, "w2", "the newer holder keeps it");
    assert_eq!(lease.fence, fences.lock().unwrap()[0]);
    assert_eq!(r.status_message, None, "the stale snapshot was not written");
}

#[tokio::test]
async fn a_finished_handle_is_given_back_not_tracked() {
    let server = TestServer::new().tool(ScriptedTool::immediate("now", text("at once")));
    let client = client(&server).await;
    let tracker = tracker(MemoryStore::new(), &client);
    let state = client.task().call_tool("now", ()).await.unwrap();
    assert!(matches!(state, TaskState::Finished(_)));
    let started = tracker.track(state, Label::tool("now")).await.unwrap();
    assert!(started.record().is_none());
    assert!(
        tracker
            .store()
            .list(&Filter::all())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_task_the_store_refused_comes_back_live() {
    let (_server, client, tracker) = tracked().await;
    let label = Label::tool("export").key("order-23");
    let first = client.task().call_tool("export", json!({})).await.unwrap();
    tracker.track(first, label.clone()).await.unwrap();
    // The key names a task already: the store refuses the second one.
    let second = client.task().call_tool("export", json!({})).await.unwrap();
    let e = tracker.track(second, label).await.unwrap_err();
    assert!(e.store_error().is_some_and(|s| s.is_duplicate()), "{e:?}");
    assert!(e.call_error().is_none());
    assert!(e.to_string().contains("already"), "{e}");
    let Some(TaskState::Pending(task)) = e.into_task() else {
        panic!("the live handle, given back")
    };
    let done = task.finish().await.unwrap();
    assert_eq!(done.into_result().unwrap(), text("exported"));
}

/// `n` starts of the same label at once, each as a fresh caller would.
async fn start_many(
    tracker: &Tracker<MemoryStore, Client>,
    client: &Client,
    label: Label,
    n: usize,
) -> Vec<Tracking> {
    let starts = (0..n).map(|_| tracker.call_tool(client.task(), label.clone(), json!({})));
    futures_join_all(starts)
        .await
        .into_iter()
        .map(|s| s.expect("a start"))
        .collect()
}

/// Runs every future to the end, concurrently, keeping their order.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = (0..pinned.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, f) in out.iter_mut().zip(pinned.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(Option::unwrap).collect()
}

#[tokio::test]
async fn a_key_starts_one_call_however_often_it_is_started() {
    let (server, client, tracker) = tracked().await;
    let label = Label::tool("export").key("order-17");
    let first = tracker
        .call_tool(client.task(), label.clone(), json!({}))
        .await
        .unwrap();
    let Tracking::Tracked(id) = first else {
        panic!("{first:?}")
    };
    let again = tracker
        .call_tool(client.task(), label.clone(), json!({}))
        .await
        .unwrap();
    assert!(
        matches!(again, Tracking::Known(known) if known == id),
        "{again:?}"
    );
    assert_eq!(server.count("tools/call"), 1);

    // Eight callers at once: one call, one record.
    let all = start_many(&tracker, &client, Label::tool("export").key("order-18"), 8).await;
    assert_eq!(server.count("tools/call"), 2, "{all:?}");
    let tracked: Vec<RecordId> = all
        .iter()
        .filter_map(|s| match s {
            Tracking::Tracked(id) => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(tracked.len(), 1, "{all:?}");
    assert!(
        all.iter().all(|s| s.record() == Some(tracked[0])),
        "{all:?}"
    );
    let keyed = tracker
        .store()
        .list(&Filter::all().key("order-18"))
        .await
        .unwrap();
    assert_eq!(keyed.len(), 1);
    let r = keyed[0].as_ref().unwrap();
    assert!(r.is_started() && r.unique_key);
    assert_eq!(r.status, TaskStatus::Working);

    // The tracked task runs to its end like any other.
    let got = endings(&tracker, 2).await;
    assert!(got.iter().all(|(_, e)| e.is_completed()), "{got:?}");
}

#[tokio::test]
async fn a_shared_key_calls_every_time() {
    let (server, client, tracker) = tracked().await;
    let label = Label::tool("export").key("nightly").shared_key();
    let all = start_many(&tracker, &client, label, 3).await;
    assert_eq!(server.count("tools/call"), 3);
    let ids: std::collections::BTreeSet<_> = all.iter().filter_map(Tracking::record).collect();
    assert_eq!(ids.len(), 3, "{all:?}");
}

#[tokio::test]
async fn a_call_that_certainly_failed_frees_its_key() {
    let (server, client, tracker) = tracked().await;
    let label = Label::tool("no-such-tool").key("order-19");
    for calls in 1..=2 {
        let e = tracker
            .call_tool(client.task(), label.clone(), json!({}))
            .await
            .unwrap_err();
        assert!(
            e.call_error().is_some() && e.store_error().is_none(),
            "{e:?}"
        );
        assert!(e.into_task().is_none(), "no task to give back");
        assert_eq!(
            server.count("tools/call"),
            calls,
            "called again: the key was free"
        );
        let kept = tracker.store().list(&Filter::all().key("order-19")).await;
        assert!(kept.unwrap().is_empty(), "the reservation was removed");
    }
}

#[tokio::test]
async fn an_answer_without_a_task_uses_its_key() {
    let server = TestServer::new().tool(ScriptedTool::immediate("ping", text("pong")));
    let client = client(&server).await;
    let tracker = tracker(MemoryStore::new(), &client);
    let label = Label::tool("ping").key("once");
    let first = tracker
        .call_tool(client.task(), label.clone(), json!({}))
        .await
        .unwrap();
    assert!(matches!(first, Tracking::Immediate(_)), "{first:?}");
    let again = tracker
        .call_tool(client.task(), label, json!({}))
        .await
        .unwrap();
    let Tracking::Known(id) = again else {
        panic!("{again:?}")
    };
    assert_eq!(server.count("tools/call"), 1);
    let r = record(&tracker, id).await;
    assert!(r.delivered, "the caller had the answer: nothing to deliver");
    assert!(matches!(&r.ending, Some(Ending::Completed { result }) if *result == text("pong")));
}

#[tokio::test]
async fn a_reservation_whose_caller_stopped_ends_start_unknown_without_a_call() {
    let (server, client) = connected().await;
    let store = MemoryStore::new();
    let tracker = tracker(store.clone(), &client);
    // What a process that died while its call ran leaves: a reserved key
    // whose lease ran out.
    let reserved = store
        .reserve(
            NewTask {
                key: Some("order-20".into()),
                unique_key: true,
                ..working_task(
                    TaskRef::new(TaskId::new(String::new()), None),
                    SystemTime::now(),
                    None,
                )
            },
            "gone",
            std::time::SystemTime::now() - Duration::from_secs(1),
        )
        .await
        .unwrap();
    let Reservation::Reserved { id, .. } = reserved else {
        panic!("{reserved:?}")
    };
    let got = endings(&tracker, 1).await;
    assert_eq!(got, [(id, Ending::StartUnknown)]);
    assert_eq!(server.count("tools/call"), 0);
    assert_eq!(server.count("tasks/get"), 0, "nothing to read");
    // And the key still names it: starting it again calls nothing.
    let again = tracker
        .call_tool(
            client.task(),
            Label::tool("export").key("order-20"),
            json!({}),
        )
        .await
        .unwrap();
    assert!(
        matches!(again, Tracking::Known(known) if known == id),
        "{again:?}"
    );
    assert_eq!(server.count("tools/call"), 0);
}

#[tokio::test]
async fn a_delivered_record_states_how_its_task_ended() {
    let (_server, client) = connected().await;
    let store = MemoryStore::new();
    let tracker = tracker(store.clone(), &client);
    let mut ids = Vec::new();
    for tool in ["export", "broken", "long"] {
        let started = tracker.call_tool(client.task(), tool, ()).await.unwrap();
        ids.push(started.record().expect("a task"));
    }
    tracker.pass(|_| async { true }).await.unwrap();
    assert!(
        store
            .request_cancel(ids[2], SystemTime::now())
            .await
            .unwrap()
    );
    // What the application is handed, and what the store keeps after.
    let mut delivered = Vec::new();
    for _ in 0..1_000 {
        tracker
            .pass(|d| {
                delivered.push((d.id(), d.ending().clone(), d.record().status));
                async { true }
            })
            .await
            .unwrap();
        if delivered.len() == ids.len() {
            break;
        }
        tokio::time::sleep(ms(5)).await;
    }
    assert_eq!(delivered.len(), ids.len(), "{delivered:?}");
    for (id, ending, status) in &delivered {
        let expected = match ending {
            Ending::Completed { .. } => TaskStatus::Completed,
            Ending::Failed { .. } => TaskStatus::Failed,
            Ending::Cancelled => TaskStatus::Cancelled,
            other => panic!("{other:?}"),
        };
        assert_eq!(*status, expected, "handed over with {ending:?}");
        assert_eq!(record(&tracker, *id).await.status, expected, "{ending:?}");
    }
}

/// One fenced write a [`logging`] store passed on, and how it went.
#[derive(Debug, Clone)]
struct Write {
    by: &'static str,
    what: &'static str,
    id: RecordId,
    fence: Fence,
    ok: bool,
    stale: bool,
}

/// A memory store seen by one tracker (`by`): it logs every fenced write
/// with its result.
fn logging(
    inner: &MemoryStore,
    by: &'static str,
    log: &Arc<Mutex<Vec<Write>>>,
) -> HookedStore<MemoryStore> {
    let log = log.clone();
    HookedStore::new(inner.clone()).after(move |call, reply| {
        if let (Some(id), Some(fence)) = (call.id(), call.fence()) {
            log.lock().unwrap().push(Write {
                by,
                what: call.name(),
                id,
                fence,
                ok: reply.is_ok(),
                stale: reply.is_err_and(|e| e.is_stale()),
            });
        }
        Ok(())
    })
}

/// `store`, holding every `save` until the returned gate gets permits,
/// as a worker stopped mid-step would.
fn gated(store: HookedStore<MemoryStore>) -> (HookedStore<MemoryStore>, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let store = store.before_async({
        let gate = gate.clone();
        move |call| {
            let (save, gate) = (matches!(call, StoreCall::Save { .. }), gate.clone());
            async move {
                if save {
                    gate.acquire().await.unwrap().forget();
                }
                Ok(())
            }
        }
    });
    (store, gate)
}

/// Each claim a store saw: the records asked for, the records given, and
/// the reads the server had seen by then.
type Claims = Arc<Mutex<Vec<(usize, usize, usize)>>>;

/// `store`, noting each claim.
fn noting_claims(
    store: HookedStore<MemoryStore>,
    server: &TestServer,
) -> (HookedStore<MemoryStore>, Claims) {
    let claims = Arc::new(Mutex::new(Vec::new()));
    let store = store.after({
        let (claims, server) = (claims.clone(), server.clone());
        move |call, reply| {
            if let (StoreCall::Claim { claim }, Ok(StoreReply::Records(given))) = (call, reply) {
                let reads = server.count("tasks/get");
                claims
                    .lock()
                    .unwrap()
                    .push((claim.limit, given.len(), reads));
            }
            Ok(())
        }
    });
    (store, claims)
}

/// A lease no test outlives: a record it holds is claimable only if it
/// was given back.
const HOUR: Duration = Duration::from_secs(3600);

/// A worker named `name` on `store`, with leases of an hour.
fn named<S: TaskStore>(store: S, client: &Client, name: &str) -> Tracker<S, Client> {
    Tracker::builder(store, client.clone())
        .worker(name)
        .lease(HOUR)
        .min_poll_interval(ms(5))
        .stop_within(ms(20))
        .build()
}

/// Waits (bounded) until every record of `ids` is held by `worker` and
/// `server` took `reads` reads.
async fn held_by(
    store: &MemoryStore,
    server: &TestServer,
    ids: &[RecordId],
    worker: &str,
    reads: usize,
) {
    for _ in 0..2_000 {
        let mut all = server.count("tasks/get") >= reads;
        for id in ids {
            let r = store.get(*id).await.unwrap().unwrap();
            all &= r
                .lease
                .is_some_and(|l| l.owner == worker && l.until > SystemTime::now() + HOUR / 2);
        }
        if all {
            return;
        }
        tokio::time::sleep(ms(5)).await;
    }
    panic!("{worker} never held {ids:?} with {reads} reads");
}

/// `n` running tasks of the `long` tool, tracked by `tracker`.
async fn long_tasks<S: TaskStore>(
    tracker: &Tracker<S, Client>,
    client: &Client,
    n: usize,
) -> Vec<RecordId> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let started = tracker.call_tool(client.task(), "long", ()).await.unwrap();
        ids.push(started.record().expect("a task"));
    }
    ids
}

/// An ended task awaiting delivery.
async fn ended(store: &MemoryStore) -> RecordId {
    store
        .insert(working_task(
            TaskRef::new(TaskId::new("ended-secret"), None),
            SystemTime::now(),
            Some(Ending::Cancelled),
        ))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_worker_shut_down_gives_its_records_back_at_once() {
    bounded(async {
        let (server, client) = connected().await;
        let store = MemoryStore::new();
        let log = Arc::default();
        // The stopping worker holds three reads whose write waits, two
        // endings whose delivery never returns, and one the application
        // declined (held until its lease runs out, to be offered again).
        let (hooked, _gate) = gated(logging(&store, "A", &log));
        let first = named(hooked, &client, "export-1");
        let mut ids = long_tasks(&first, &client, 3).await;
        for _ in 0..3 {
            ids.push(ended(&store).await);
        }
        let declined = Arc::new(AtomicUsize::new(0));
        let run = {
            let (first, declined, decline) = (first.clone(), declined.clone(), ids[5]);
            tokio::spawn(async move {
                first
                    .run(move |d| {
                        let refuse = d.id() == decline;
                        if refuse {
                            declined.fetch_add(1, Ordering::SeqCst);
                        }
                        async move {
                            if !refuse {
                                std::future::pending::<()>().await;
                            }
                            false
                        }
                    })
                    .await
            })
        };
        held_by(&store, &server, &ids, "export-1", 3).await;
        while declined.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(ms(5)).await;
        }

        first.shutdown().await;
        assert!(run.is_finished(), "run returned before shutdown did");
        run.await.unwrap().unwrap();
        assert!(first.is_shut_down());
        assert_eq!(first.pass(|_| async { true }).await.unwrap().claimed, 0);
        first.run(|_| async { true }).await.unwrap();
        let given: Vec<_> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|w| w.what == "release" && w.ok)
            .map(|w| w.id)
            .collect();
        assert_eq!(given.len(), 6, "{given:?}");

        // Another worker takes all six in its first pass, an hour before
        // the leases would have run out: each read once more, each ending
        // delivered.
        let second = named(store.clone(), &client, "export-2");
        let mut delivered = Vec::new();
        let pass = second
            .pass(|d| {
                delivered.push(d.id());
                async { true }
            })
            .await
            .unwrap();
        assert_eq!(
            (pass.claimed, pass.stepped, pass.delivered),
            (6, 3, 3),
            "{pass:?}"
        );
        assert_eq!(
            server.count("tasks/get"),
            6,
            "each open task read once more"
        );
        assert_eq!(delivered, ids[3..]);
    })
    .await;
}

#[tokio::test]
async fn a_worker_restarted_under_its_name_takes_its_records_back_at_once() {
    bounded(async {
        let (server, client) = connected().await;
        let store = MemoryStore::new();
        // What a worker killed mid-step leaves: records it held, and a key
        // it reserved whose call was never answered.
        let starter = named(store.clone(), &client, "starter");
        let ids = long_tasks(&starter, &client, 2).await;
        for id in &ids {
            let held = store
                .claim(Claim {
                    worker: "export-1",
                    limit: 1,
                    now: SystemTime::now(),
                    lease: HOUR,
                    record: Some(*id),
                })
                .await
                .unwrap();
            assert_eq!(held.len(), 1);
        }
        let reserved = store
            .reserve(
                NewTask {
                    key: Some("order-21".into()),
                    unique_key: true,
                    ..working_task(
                        TaskRef::new(TaskId::new(String::new()), None),
                        SystemTime::now(),
                        None,
                    )
                },
                "export-1",
                SystemTime::now() + HOUR,
            )
            .await
            .unwrap();
        let Reservation::Reserved { id: key, .. } = reserved else {
            panic!("{reserved:?}")
        };

        // Another name, or the default one, waits for the leases.
        let other = named(store.clone(), &client, "export-2");
        assert_eq!(other.pass(|_| async { true }).await.unwrap().claimed, 0);
        let unnamed = Tracker::builder(store.clone(), client.clone()).build();
        assert_eq!(unnamed.pass(|_| async { true }).await.unwrap().claimed, 0);
        assert_eq!(server.count("tasks/get"), 0);

        // The same name takes them back in its first pass.
        let restarted = named(store.clone(), &client, "export-1");
        let mut endings = Vec::new();
        let pass = restarted
            .pass(|d| {
                endings.push((d.id(), d.ending().clone()));
                async { true }
            })
            .await
            .unwrap();
        assert_eq!((pass.claimed, pass.stepped), (3, 3), "{pass:?}");
        assert_eq!(server.count("tasks/get"), 2);
        assert_eq!(endings, [(key, Ending::StartUnknown)]);
        assert_eq!(server.count("tools/call"), 2, "the key was not called");
    })
    .await;
}

#[tokio::test]
async fn two_workers_under_one_name_never_write_a_record_both() {
    bounded(async {
        let (server, client) = connected().await;
        let store = MemoryStore::new();
        let log: Arc<Mutex<Vec<Write>>> = Arc::default();
        // The first holds three records mid-step: read, not yet written.
        let (hooked, gate) = gated(logging(&store, "A", &log));
        let first = named(hooked, &client, "export-1");
        let ids = long_tasks(&first, &client, 3).await;
        let stuck = {
            let first = first.clone();
            tokio::spawn(async move { first.pass(|_| async { true }).await })
        };
        held_by(&store, &server, &ids, "export-1", 3).await;

        // A second process starts under the same name by mistake: it takes
        // the records over and writes them.
        let second = named(logging(&store, "B", &log), &client, "export-1");
        let pass = second.pass(|_| async { true }).await.unwrap();
        assert_eq!((pass.claimed, pass.stepped), (3, 3), "{pass:?}");

        // The first one's writes come late, under its old fences: refused.
        gate.add_permits(100);
        let pass = stuck.await.unwrap().unwrap();
        assert_eq!((pass.stepped, pass.stale), (0, 3), "{pass:?}");

        let log = log.lock().unwrap().clone();
        let refused: Vec<_> = log.iter().filter(|w| w.by == "A").collect();
        assert!(
            refused.len() == 3 && refused.iter().all(|w| w.stale && w.what == "save"),
            "{log:?}"
        );
        for id in &ids {
            let writers: std::collections::BTreeSet<_> = log
                .iter()
                .filter(|w| w.id == *id && w.ok)
                .map(|w| w.by)
                .collect();
            assert_eq!(writers, ["B"].into(), "record {id}: {log:?}");
            let r = record(&second, *id).await;
            let fence = r.lease.unwrap().fence;
            assert!(
                log.iter()
                    .filter(|w| w.id == *id && w.ok)
                    .all(|w| w.fence == fence)
            );
        }
    })
    .await;
}

#[tokio::test]
async fn a_worker_behind_claims_a_batch_and_again_once_none_waits() {
    bounded(async {
        let (server, client) = connected().await;
        let store = MemoryStore::new();
        let log = Arc::default();
        let (hooked, gate) = gated(logging(&store, "A", &log));
        let (hooked, claims) = noting_claims(hooked, &server);
        let tracker = Tracker::builder(hooked, client.clone())
            .worker("w")
            .lease(HOUR)
            .batch(16)
            .concurrency(8)
            .min_poll_interval(ms(5))
            .stop_within(ms(20))
            .build();
        // Forty due, eight slots; every save waits on the gate.
        let ids = long_tasks(&tracker, &client, 40).await;
        let run = tokio::spawn({
            let tracker = tracker.clone();
            async move { tracker.run(|_| async { true }).await }
        });
        let saves = |log: &Arc<Mutex<Vec<Write>>>| {
            log.lock()
                .unwrap()
                .iter()
                .filter(|w| w.what == "save")
                .count()
        };
        // A step gives its slot up while its save waits to be written: all
        // forty are read though no save went through.
        while server.count("tasks/get") < 40 {
            tokio::time::sleep(ms(5)).await;
        }
        tokio::time::sleep(ms(20)).await;
        assert_eq!(server.count("tasks/get"), 40, "each read once");
        assert_eq!(saves(&log), 0);
        // The first claim took sixteen: eight in work, eight waiting. The
        // next came only once none waited: the eight waiting had taken the
        // slots the first eight gave up, and one of them was read.
        let seen = claims.lock().unwrap().clone();
        let given: Vec<(usize, usize)> = seen.iter().map(|&(asked, got, _)| (asked, got)).collect();
        assert_eq!(given[..3], [(16, 16), (16, 16), (16, 8)], "{seen:?}");
        assert!(given[3..].iter().all(|&(_, got)| got == 0), "{seen:?}");
        assert_eq!(seen[0].2, 0);
        assert!(
            seen[1].2 >= 9,
            "the second claim came with records waiting: {seen:?}"
        );
        assert!(
            seen[2].2 >= 25,
            "the third claim came with records waiting: {seen:?}"
        );
        // The gate opens: every save is written.
        gate.add_permits(1000);
        while saves(&log) < 40 {
            tokio::time::sleep(ms(1)).await;
        }
        tracker.shutdown().await;
        run.await.unwrap().unwrap();
        for id in ids {
            let r = store.get(id).await.unwrap().unwrap();
            assert!(
                r.lease
                    .as_ref()
                    .is_none_or(|l| l.until <= SystemTime::now()),
                "{id} still held: {:?}",
                r.lease
            );
        }
    })
    .await;
}

#[tokio::test]
async fn records_waiting_behind_a_stuck_slot_are_given_back_to_others() {
    bounded(async {
        let (server, client) = connected().await;
        let store = MemoryStore::new();
        let log = Arc::default();
        // A's one slot is stuck: its save waits on a gate never opened.
        let (hooked, _gate) = gated(logging(&store, "A", &log));
        let a = Tracker::builder(hooked, client.clone())
            .worker("a")
            .lease(ms(400))
            .batch(8)
            .concurrency(1)
            .min_poll_interval(ms(5))
            .stop_within(ms(20))
            .build();
        let ids = long_tasks(&a, &client, 8).await;
        let run_a = tokio::spawn({
            let a = a.clone();
            async move { a.run(|_| async { true }).await }
        });
        // A claims all eight, works one and keeps seven waiting; before
        // half their lease is gone it gives them back.
        let released = || {
            log.lock()
                .unwrap()
                .iter()
                .filter(|w| w.what == "release" && w.ok)
                .map(|w| w.id)
                .collect::<std::collections::BTreeSet<_>>()
        };
        while released().len() < 7 {
            tokio::time::sleep(ms(5)).await;
        }
        assert_eq!(
            server.count("tasks/get"),
            1,
            "A read only the one in its slot"
        );
        // Another worker, with free slots, reads them.
        let b = named(store.clone(), &client, "b");
        let run_b = tokio::spawn({
            let b = b.clone();
            async move { b.run(|_| async { true }).await }
        });
        while server.count("tasks/get") < 8 {
            tokio::time::sleep(ms(5)).await;
        }
        let given = released();
        let in_work: Vec<_> = ids.iter().filter(|id| !given.contains(id)).collect();
        assert_eq!(
            in_work.len(),
            1,
            "all but the one in work given back: {given:?}"
        );
        b.shutdown().await;
        a.shutdown().await;
        run_a.await.unwrap().unwrap();
        run_b.await.unwrap().unwrap();
    })
    .await;
}

/// Everything logged through a `fmt` subscriber, as text.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    /// What was logged so far.
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Logs every event to the returned [`Logs`] while the guard lives.
fn capture_logs() -> (Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .with_ansi(false)
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_worker_whose_writes_keep_being_refused_warns_once() {
    let (logs, _guard) = capture_logs();
    bounded(async {
        let (_server, client) = connected().await;
        // Every save finds its record taken by another worker first.
        let fences: Arc<Mutex<Vec<Fence>>> = Arc::default();
        let tracker = tracker(overtaken(&fences), &client);
        long_tasks(&tracker, &client, 7).await;
        let run = tokio::spawn({
            let tracker = tracker.clone();
            async move { tracker.run(|_| async { true }).await }
        });
        while fences.lock().unwrap().len() < 7 {
            tokio::time::sleep(ms(5)).await;
        }
        tracker.shutdown().await;
        run.await.unwrap().unwrap();
    })
    .await;
    let text = logs.text();
    let warned = text
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("5 records in a row were taken"))
        .count();
    assert_eq!(warned, 1, "one warning for seven refused writes:\n{text}");
}

#[tokio::test]
async fn a_record_taken_from_a_worker_whose_lease_ran_out_is_logged_once() {
    let (logs, _guard) = capture_logs();
    bounded(async {
        let (server, client) = connected().await;
        let store = MemoryStore::new();
        let tracker = named(store.clone(), &client, "healthy");
        let ids = long_tasks(&tracker, &client, 1).await;
        // A worker claims the record and dies: its lease runs out.
        let held = store
            .claim(Claim {
                worker: "dead",
                limit: 1,
                now: SystemTime::now(),
                lease: ms(1),
                record: Some(ids[0]),
            })
            .await
            .unwrap();
        assert_eq!(held.len(), 1);
        tokio::time::sleep(ms(20)).await;
        // Taken over once; read again later, it is no takeover.
        for _ in 0..3 {
            tracker.pass(|_| async { true }).await.unwrap();
            tokio::time::sleep(ms(20)).await;
        }
        assert!(server.count("tasks/get") >= 2, "read more than once");
    })
    .await;
    let text = logs.text();
    let taken: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("INFO") && l.contains("took over a record"))
        .collect();
    assert_eq!(taken.len(), 1, "{text}");
    assert!(taken[0].contains("from=dead"), "{}", taken[0]);
    assert!(!taken[0].contains("secret"), "no task id: {}", taken[0]);
}

/// `store`, noting the size of each `save_all` and each `save`.
fn noting_saves(store: MemoryStore) -> (HookedStore<MemoryStore>, Arc<Mutex<Vec<&'static str>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let store = HookedStore::new(store).before({
        let seen = seen.clone();
        move |call| {
            match call {
                StoreCall::SaveAll { saves } => seen.lock().unwrap().push(if saves.len() == 4 {
                    "4 together"
                } else {
                    "fewer"
                }),
                StoreCall::Save { .. } => seen.lock().unwrap().push("save"),
                _ => {}
            }
            Ok(())
        }
    });
    (store, seen)
}

#[tokio::test]
async fn the_saves_of_a_workers_slots_are_written_together() {
    bounded(async {
        let (server, client) = connected().await;
        // Four slots: the four steps' saves go in one `save_all`.
        let (store, seen) = noting_saves(MemoryStore::new());
        let tracker = Tracker::builder(store, client.clone())
            .lease(HOUR)
            .concurrency(4)
            .build();
        let ids = long_tasks(&tracker, &client, 4).await;
        seen.lock().unwrap().clear();
        let pass = tracker.pass(|_| async { true }).await.unwrap();
        assert_eq!(pass.stepped, 4);
        assert_eq!(server.count("tasks/get"), 4);
        assert_eq!(
            *seen.lock().unwrap(),
            ["4 together", "save", "save", "save", "save"]
        );
        for id in ids {
            let r = tracker.store().get(id).await.unwrap().unwrap();
            assert!(
                r.lease.is_none_or(|l| l.until <= SystemTime::now()),
                "given up"
            );
            assert!(r.due > SystemTime::now(), "due again later");
        }
        // One slot: each save alone.
        let (store, seen) = noting_saves(MemoryStore::new());
        let tracker = Tracker::builder(store, client.clone())
            .lease(HOUR)
            .concurrency(1)
            .build();
        long_tasks(&tracker, &client, 2).await;
        seen.lock().unwrap().clear();
        tracker.pass(|_| async { true }).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), ["save", "save"]);
    })
    .await;
}

#[tokio::test]
async fn a_slow_store_slows_the_reads_instead_of_piling_up_saves() {
    bounded(async {
        let (server, client) = connected().await;
        let store = MemoryStore::new();
        let log = Arc::default();
        // Every save waits on the gate: the store has stopped answering.
        let (hooked, gate) = gated(logging(&store, "A", &log));
        let tracker = Tracker::builder(hooked, client.clone())
            .worker("w")
            .lease(HOUR)
            .batch(2)
            .concurrency(2)
            .min_poll_interval(ms(5))
            .stop_within(ms(20))
            .build();
        long_tasks(&tracker, &client, 20).await;
        let run = tokio::spawn({
            let tracker = tracker.clone();
            async move { tracker.run(|_| async { true }).await }
        });
        // Room for two batches' saves (four), then the two slots hold
        // their reads' saves: six reads, not twenty.
        while server.count("tasks/get") < 6 {
            tokio::time::sleep(ms(5)).await;
        }
        tokio::time::sleep(ms(100)).await;
        assert_eq!(server.count("tasks/get"), 6);
        gate.add_permits(1000);
        while server.count("tasks/get") < 20 {
            tokio::time::sleep(ms(5)).await;
        }
        tracker.shutdown().await;
        run.await.unwrap().unwrap();
    })
    .await;
}
