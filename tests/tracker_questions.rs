//! The tracker and the questions tasks ask a person: kept in the store,
//! answered from anywhere and late, sent once; and a worker that never
//! stalls on what it awaits (a person, a slow read, a slow callback),
//! with leases kept alive meanwhile. Real time, short leases: what is at
//! stake is what happens when an await outlasts a lease.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, InputResponse, TaskStatus};
use mcp_tasks::store::{
    Ending, Filter, MemoryStore, QuestionKind, RecordId, Refusal, SqliteStore, TaskStore, Tracker,
};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, TaskState};
use serde_json::json;
use support::*;
use tokio::sync::Notify;

fn yes() -> InputResponse {
    ElicitResult::accept(json!({"ok": true})).into()
}

fn approve_script() -> TaskScript {
    TaskScript::new()
        .poll_interval(ms(20))
        .input(ms(10), requests(&["confirm"]))
        .complete_with_inputs(ms(10))
}

fn server() -> TestServer {
    TestServer::new()
        .tool(ScriptedTool::task("approve", approve_script()))
        .tool(ScriptedTool::task(
            "quick",
            TaskScript::new()
                .poll_interval(ms(20))
                .complete(ms(50), text("quick")),
        ))
        .tool(ScriptedTool::task(
            "two",
            TaskScript::new()
                .poll_interval(ms(20))
                .input(ms(10), requests(&["first", "second"]))
                .complete_with_inputs(ms(10)),
        ))
        .tool(ScriptedTool::task(
            "long",
            TaskScript::new()
                .poll_interval(ms(20))
                .working(Duration::from_secs(3600), "still going")
                .complete(ms(1), text("never")),
        ))
}

/// The endings a worker delivered, by record, with how often.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<BTreeMap<RecordId, (usize, Ending)>>>);

impl Seen {
    fn push(&self, id: RecordId, ending: Ending) {
        let mut seen = self.0.lock().unwrap();
        seen.entry(id).or_insert((0, ending)).0 += 1;
    }

    fn count(&self, id: RecordId) -> usize {
        self.0.lock().unwrap().get(&id).map_or(0, |(n, _)| *n)
    }

    fn ending(&self, id: RecordId) -> Option<Ending> {
        self.0.lock().unwrap().get(&id).map(|(_, e)| e.clone())
    }

    /// Waits (bounded) until `id` was delivered.
    async fn until(&self, id: RecordId) -> Ending {
        for _ in 0..2_000 {
            if let Some(e) = self.ending(id) {
                return e;
            }
            tokio::time::sleep(ms(10)).await;
        }
        panic!("record {id} was never delivered");
    }
}

/// Runs `tracker` in the background, delivering into `seen` after `delay`
/// per ending, until the handle is dropped.
fn spawn_worker<S: TaskStore + Clone>(
    tracker: &Tracker<S, Client>,
    seen: &Seen,
    delay: Duration,
) -> AbortOnDrop {
    let tracker = tracker.clone();
    let seen = seen.clone();
    AbortOnDrop(tokio::spawn(async move {
        tracker
            .run(move |d| {
                let seen = seen.clone();
                async move {
                    tokio::time::sleep(delay).await;
                    seen.push(d.id(), d.ending().clone());
                    true
                }
            })
            .await
            .unwrap();
    }))
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn worker<S: TaskStore>(
    store: S,
    client: &Client,
    name: &str,
    lease: Duration,
) -> Tracker<S, Client> {
    Tracker::builder(store, client.clone())
        .worker(name)
        .lease(lease)
        .idle(ms(20))
        .min_poll_interval(ms(5))
        .build()
}

/// Worker "w" (a 5 s lease) on a fresh memory store, running and
/// recording its endings in the returned [`Seen`] until the guard drops.
fn running_worker(client: &Client) -> (Tracker<MemoryStore, Client>, Seen, AbortOnDrop) {
    let tracker = worker(MemoryStore::new(), client, "w", Duration::from_secs(5));
    let seen = Seen::default();
    let run = spawn_worker(&tracker, &seen, Duration::ZERO);
    (tracker, seen, run)
}

/// A client of `server`, and worker "w" running on it ([`running_worker`]).
async fn connected_worker(
    server: &TestServer,
) -> (Client, Tracker<MemoryStore, Client>, Seen, AbortOnDrop) {
    let client = client(server).await;
    let (tracker, seen, run) = running_worker(&client);
    (client, tracker, seen, run)
}

/// A form handler that counts its calls and takes `takes` to answer.
fn slow_person(calls: Arc<AtomicUsize>, takes: Duration) -> InputHandlers {
    InputHandlers::new().elicitation_form(move |_| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(takes).await;
            Ok(ElicitResult::accept(json!({"ok": true})))
        }
    })
}

/// Starts `tool` as a tracked task and waits (bounded) until it asks:
/// its id and record.
async fn asked<S: TaskStore>(
    tracker: &Tracker<S, Client>,
    client: &Client,
    tool: &str,
) -> (RecordId, mcp_tasks::store::TaskRecord) {
    let id = track(tracker, client, tool).await;
    (id, asking(tracker.store(), id).await)
}

/// Waits (bounded) until `id` asks, as its record shows.
async fn asking<S: TaskStore>(store: &S, id: RecordId) -> mcp_tasks::store::TaskRecord {
    for _ in 0..1_000 {
        let r = store.get(id).await.unwrap().unwrap();
        if r.open_questions().next().is_some() {
            return r;
        }
        tokio::time::sleep(ms(10)).await;
    }
    panic!("record {id} never asked");
}

#[tokio::test]
async fn a_person_who_has_not_answered_holds_up_no_other_task() {
    bounded(async {
        let server = server();
        let release = Arc::new(Notify::new());
        let asked = Arc::new(AtomicUsize::new(0));
        let handlers = {
            let (release, asked) = (release.clone(), asked.clone());
            InputHandlers::new().elicitation_form(move |_| {
                let (release, asked) = (release.clone(), asked.clone());
                async move {
                    asked.fetch_add(1, Ordering::SeqCst);
                    // A person: answers only when the test lets them.
                    release.notified().await;
                    Ok(ElicitResult::accept(json!({"ok": true})))
                }
            })
        };
        let client = client_with(&server, handlers).await;
        let tracker = Tracker::builder(MemoryStore::new(), client.clone())
            .lease(Duration::from_secs(30))
            .answer_within(Duration::from_secs(30))
            .idle(ms(20))
            .build();
        let seen = Seen::default();
        let _run = spawn_worker(&tracker, &seen, Duration::ZERO);
        let slow = track(&tracker, &client, "approve").await;
        while asked.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(ms(5)).await;
        }
        // The person is thinking; a quick task started now ends and is
        // delivered meanwhile.
        let quick = track(&tracker, &client, "quick").await;
        assert!(seen.until(quick).await.is_completed());
        assert_eq!(seen.count(slow), 0, "the slow task still waits");
        release.notify_one();
        assert!(seen.until(slow).await.is_completed());
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    })
    .await;
}

#[tokio::test]
async fn a_person_slower_than_the_lease_is_asked_once() {
    bounded(async {
        let server = server();
        let calls = Arc::new(AtomicUsize::new(0));
        let store = MemoryStore::new();
        let a = client_with(&server, slow_person(calls.clone(), Duration::from_secs(4))).await;
        let b = client_with(&server, slow_person(calls.clone(), Duration::from_secs(4))).await;
        let lease = Duration::from_secs(1);
        let wa = worker(store.clone(), &a, "a", lease);
        let wb = worker(store.clone(), &b, "b", lease);
        let seen = Seen::default();
        let _ra = spawn_worker(&wa, &seen, Duration::ZERO);
        let _rb = spawn_worker(&wb, &seen, Duration::ZERO);
        let id = track(&wa, &a, "approve").await;
        assert!(seen.until(id).await.is_completed());
        assert_eq!(calls.load(Ordering::SeqCst), 1, "the person is asked once");
        let counts = server.counters();
        assert_eq!(counts.tasks.values().next().unwrap().answers["confirm"], 1);
        assert_eq!(seen.count(id), 1);
    })
    .await;
}

#[tokio::test]
async fn a_read_slower_than_the_lease_is_never_made_twice_at_once() {
    bounded(async {
        let server = TestServer::new()
            .tool(ScriptedTool::task(
                "export",
                TaskScript::new()
                    .poll_interval(ms(10))
                    .complete(Duration::from_secs(3), text("done")),
            ))
            .read_delay(Duration::from_secs(2));
        let store = MemoryStore::new();
        let a = client(&server).await;
        let b = client(&server).await;
        let lease = Duration::from_secs(1);
        let wa = worker(store.clone(), &a, "a", lease);
        let wb = worker(store.clone(), &b, "b", lease);
        let seen = Seen::default();
        let _ra = spawn_worker(&wa, &seen, Duration::ZERO);
        let _rb = spawn_worker(&wb, &seen, Duration::ZERO);
        let id = track(&wa, &a, "export").await;
        assert!(seen.until(id).await.is_completed());
        let counts = server.counters();
        let task = counts.tasks.values().next().unwrap();
        assert!(task.reads >= 2, "{task:?}");
        assert_eq!(task.overlapping_reads, 0, "{task:?}");
        assert_eq!(seen.count(id), 1);
    })
    .await;
}

#[tokio::test]
async fn a_callback_slower_than_the_lease_delivers_each_ending_once() {
    bounded(async {
        let server = server();
        let store = MemoryStore::new();
        let a = client(&server).await;
        let b = client(&server).await;
        let lease = Duration::from_secs(1);
        let wa = worker(store.clone(), &a, "a", lease);
        let wb = worker(store.clone(), &b, "b", lease);
        let seen = Seen::default();
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(track(&wa, &a, "quick").await);
        }
        let slow = Duration::from_secs(3);
        let _ra = spawn_worker(&wa, &seen, slow);
        let _rb = spawn_worker(&wb, &seen, slow);
        for id in &ids {
            assert!(seen.until(*id).await.is_completed());
        }
        // Past another lease and a half: nothing delivered again.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        for id in ids {
            assert_eq!(seen.count(id), 1, "record {id}");
        }
    })
    .await;
}

#[tokio::test]
async fn endings_are_delivered_side_by_side_up_to_the_concurrency() {
    bounded(async {
        let server = server();
        let client = client(&server).await;
        let tracker = Tracker::builder(MemoryStore::new(), client.clone())
            .concurrency(8)
            .idle(ms(20))
            .build();
        let mut ids = Vec::new();
        for _ in 0..8 {
            ids.push(track(&tracker, &client, "quick").await);
        }
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let done = Seen::default();
        let run = {
            let (tracker, now, most, done) =
                (tracker.clone(), now.clone(), most.clone(), done.clone());
            AbortOnDrop(tokio::spawn(async move {
                tracker
                    .run(move |d| {
                        let (now, most, done) = (now.clone(), most.clone(), done.clone());
                        async move {
                            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(n, Ordering::SeqCst);
                            tokio::time::sleep(ms(500)).await;
                            now.fetch_sub(1, Ordering::SeqCst);
                            done.push(d.id(), d.ending().clone());
                            true
                        }
                    })
                    .await
                    .unwrap();
            }))
        };
        for id in &ids {
            done.until(*id).await;
        }
        drop(run);
        assert!(
            most.load(Ordering::SeqCst) > 1,
            "callbacks ran one at a time"
        );
    })
    .await;
}

/// The cross-process case on a real file: a worker with no one to ask,
/// and an answer given through another connection to the same file, as a
/// web server would, with one, two and three workers.
#[tokio::test]
async fn a_question_answered_later_from_elsewhere_is_sent_once() {
    for workers in 1..=3 {
        bounded(async {
            let dir = std::env::temp_dir().join(format!(
                "mcp-tasks-questions-{}-{workers}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("tasks.db");
            let server = server();
            let mut runs = Vec::new();
            let mut trackers = Vec::new();
            let seen = Seen::default();
            for n in 0..workers {
                let client = client(&server).await;
                let store = SqliteStore::open(&path).await.unwrap();
                let t = worker(store, &client, &format!("w{n}"), ms(500));
                runs.push(spawn_worker(&t, &seen, Duration::ZERO));
                trackers.push((t, client));
            }
            let (first, client) = &trackers[0];
            let id = track(first, client, "two").await;

            // Elsewhere: the inbox lists what waits, with its schema.
            let inbox = SqliteStore::open(&path).await.unwrap();
            asking(&inbox, id).await;
            let listed = inbox.list(&Filter::all().asking()).await.unwrap();
            assert_eq!(listed.len(), 1);
            let record = listed[0].as_ref().unwrap();
            let open: Vec<&str> = record.open_questions().map(|(k, _)| k).collect();
            assert_eq!(open, ["first", "second"]);
            let (_, q) = record.open_questions().next().unwrap();
            assert_eq!(q.kind(), QuestionKind::Form);
            assert_eq!(q.schema().unwrap()["required"], json!(["ok"]));

            // One answer now, the other later: partial answers go out.
            inbox
                .answer(id, "first", &yes(), SystemTime::now())
                .await
                .unwrap();
            for _ in 0..500 {
                let counts = server.counters();
                if counts.totals.answers > 0 {
                    break;
                }
                tokio::time::sleep(ms(10)).await;
            }
            tokio::time::sleep(ms(200)).await;
            let second: InputResponse = ElicitResult::decline().into();
            inbox
                .answer(id, "second", &second, SystemTime::now())
                .await
                .unwrap();
            let Ending::Completed { result } = seen.until(id).await else {
                panic!("not completed")
            };
            let sent = &result.structured_content.as_ref().unwrap()["inputResponses"];
            assert_eq!(sent["first"]["content"]["ok"], true);
            assert_eq!(sent["second"]["action"], "decline");
            let counts = server.counters();
            let task = counts.tasks.values().next().unwrap();
            assert_eq!(task.answers["first"], 1, "{workers} workers: {task:?}");
            assert_eq!(task.answers["second"], 1, "{workers} workers: {task:?}");
            assert_eq!(seen.count(id), 1);
            let r = inbox.get(id).await.unwrap().unwrap();
            assert!(r.answers.values().all(|a| a.taken));
            assert!(r.questions.values().all(|q| q.is_closed()));
            drop(runs);
            let _ = std::fs::remove_dir_all(&dir);
        })
        .await;
    }
}

#[tokio::test]
async fn a_refused_answer_stores_nothing_and_the_task_still_asks() {
    bounded(async {
        let server = server();
        let (client, tracker, seen, _run) = connected_worker(&server).await;
        let (id, _) = asked(&tracker, &client, "approve").await;
        let refusal =
            |r: mcp_tasks::store::StoreResult<()>| r.unwrap_err().refusal().cloned().unwrap();
        let missing = tracker
            .answer(id, "confirm", ElicitResult::accept(json!({})))
            .await;
        assert!(matches!(refusal(missing), Refusal::Invalid { .. }));
        let wrong = tracker
            .answer(id, "confirm", ElicitResult::accept(json!({"ok": "yes"})))
            .await;
        let Refusal::Invalid { reason, .. } = refusal(wrong) else {
            panic!()
        };
        assert!(reason.reason().contains("ok"), "{reason}");
        let unknown = tracker.answer(id, "nope", ElicitResult::decline()).await;
        assert!(matches!(refusal(unknown), Refusal::NoSuchQuestion { .. }));
        tokio::time::sleep(ms(100)).await;
        let r = tracker.store().get(id).await.unwrap().unwrap();
        assert!(r.answers.is_empty());
        assert_eq!(r.status, TaskStatus::InputRequired);
        assert_eq!(server.count("tasks/update"), 0);
        // A good one goes through, once.
        tracker
            .answer(id, "confirm", ElicitResult::accept(json!({"ok": false})))
            .await
            .unwrap();
        let twice = tracker.answer(id, "confirm", ElicitResult::decline()).await;
        assert!(matches!(refusal(twice), Refusal::Answered { .. }));
        assert!(seen.until(id).await.is_completed());
        assert_eq!(server.count("tasks/update"), 1);
    })
    .await;
}

#[tokio::test]
async fn a_cancelled_task_closes_its_questions_and_refuses_late_answers() {
    bounded(async {
        let server = TestServer::new().tool(ScriptedTool::task(
            "approve",
            TaskScript::new()
                .poll_interval(ms(20))
                .input(ms(10), requests(&["confirm"]))
                .complete_with_inputs(ms(10)),
        ));
        let (client, tracker, seen, _run) = connected_worker(&server).await;
        let (id, _) = asked(&tracker, &client, "approve").await;
        assert!(tracker.cancel(id).await.unwrap());
        assert_eq!(seen.until(id).await, Ending::Cancelled);
        let r = tracker.store().get(id).await.unwrap().unwrap();
        assert!(r.questions["confirm"].is_closed());
        let late = tracker.answer(id, "confirm", yes()).await.unwrap_err();
        assert!(
            matches!(late.refusal(), Some(Refusal::Closed { .. })),
            "{late}"
        );
        assert_eq!(server.count("tasks/update"), 0, "never sent");
    })
    .await;
}

#[tokio::test]
async fn a_handler_past_its_bound_leaves_the_question_to_someone_else() {
    bounded(async {
        let server = server();
        let calls = Arc::new(AtomicUsize::new(0));
        let client =
            client_with(&server, slow_person(calls.clone(), Duration::from_secs(60))).await;
        let tracker = Tracker::builder(MemoryStore::new(), client.clone())
            .answer_within(ms(100))
            .idle(ms(20))
            .build();
        let seen = Seen::default();
        let _run = spawn_worker(&tracker, &seen, Duration::ZERO);
        let (id, _) = asked(&tracker, &client, "approve").await;
        while calls.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(ms(5)).await;
        }
        tracker.answer(id, "confirm", yes()).await.unwrap();
        assert!(seen.until(id).await.is_completed());
        assert_eq!(calls.load(Ordering::SeqCst), 1, "asked once by this worker");
        assert_eq!(server.count("tasks/update"), 1);
    })
    .await;
}

#[tokio::test]
async fn each_new_question_is_offered_to_the_application_until_acknowledged() {
    bounded(async {
        let server = server();
        let client = client(&server).await;
        let offers = Arc::new(Mutex::new(Vec::new()));
        let tracker = {
            let offers = offers.clone();
            Tracker::builder(MemoryStore::new(), client.clone())
                .idle(ms(20))
                .min_poll_interval(ms(5))
                .on_question(move |asking| {
                    let offers = offers.clone();
                    async move {
                        let mut offers = offers.lock().unwrap();
                        offers.push((
                            asking.id(),
                            asking.key().to_owned(),
                            asking.tool().to_owned(),
                        ));
                        // Refused the first time, as a failed email would be.
                        offers.len() > 1
                    }
                })
                .build()
        };
        let seen = Seen::default();
        let _run = spawn_worker(&tracker, &seen, Duration::ZERO);
        let (id, r) = asked(&tracker, &client, "approve").await;
        for _ in 0..500 {
            if tracker.store().get(id).await.unwrap().unwrap().questions["confirm"].offered {
                break;
            }
            tokio::time::sleep(ms(10)).await;
        }
        assert_eq!(r.questions.len(), 1);
        // Many reads later: offered twice (refused, then taken), never again.
        tokio::time::sleep(ms(300)).await;
        let offered = offers.lock().unwrap().clone();
        assert_eq!(offered.len(), 2, "{offered:?}");
        assert!(
            offered
                .iter()
                .all(|(i, k, t)| *i == id && k == "confirm" && t == "approve")
        );
        tracker.answer(id, "confirm", yes()).await.unwrap();
        assert!(seen.until(id).await.is_completed());
    })
    .await;
}

// The four places the tracker's schedule had drifted from the in-process
// wait.

#[tokio::test]
async fn a_tracked_task_with_a_ttl_is_cancelled_at_its_ttl_and_ends_expired() {
    bounded(async {
        let server = server();
        let (client, tracker, seen, _run) = connected_worker(&server).await;
        let id = tracker
            .call_tool(client.task().with_ttl(ms(300)), "long", ())
            .await
            .unwrap()
            .record()
            .unwrap();
        let r = tracker.store().get(id).await.unwrap().unwrap();
        assert!(r.schedule.deadline().is_some(), "the TTL is in the record");
        assert_eq!(seen.until(id).await, Ending::Expired);
        assert_eq!(server.count("tasks/cancel"), 1);
        // The same task, waited on in process, ends the same way.
        let state = client
            .task()
            .with_ttl(ms(300))
            .call_tool("long", ())
            .await
            .unwrap();
        let TaskState::Pending(task) = state else {
            panic!("{state:?}")
        };
        assert_eq!(
            task.finish().await.unwrap().into_outcome(),
            mcp_tasks::Outcome::Expired
        );
    })
    .await;
}

#[tokio::test]
async fn the_builders_poll_settings_hold_in_the_tracker() {
    bounded(async {
        let server = TestServer::new().tool(ScriptedTool::task(
            "export",
            // No interval suggested: the builder's floor and interval rule.
            TaskScript::new()
                .working(ms(10), "going")
                .complete(ms(900), text("done")),
        ));
        let client = client(&server).await;
        // The tracker would read every 5 ms; the task's builder says 150.
        let tracker = Tracker::builder(MemoryStore::new(), client.clone())
            .poll_interval(ms(5))
            .min_poll_interval(ms(1))
            .idle(ms(5))
            .build();
        let seen = Seen::default();
        let _run = spawn_worker(&tracker, &seen, Duration::ZERO);
        let task = client
            .task()
            .poll_interval(ms(150))
            .min_poll_interval(ms(150));
        let id = tracker
            .call_tool(task, "export", ())
            .await
            .unwrap()
            .record()
            .unwrap();
        assert!(seen.until(id).await.is_completed());
        let gaps = gaps(&server, "tasks/get");
        assert!(gaps.len() >= 2, "{gaps:?}");
        assert!(gaps.iter().all(|g| *g >= ms(140)), "{gaps:?}");
    })
    .await;
}

#[tokio::test]
async fn an_answer_the_server_took_is_never_sent_again_while_it_still_lists_the_key() {
    bounded(async {
        let asking = || {
            json!({
                "resultType": "complete", "taskId": "t-9", "status": "input_required",
                "ttlMs": null, "pollIntervalMs": 10,
                "inputRequests": {"first": {"method": "elicitation/create",
                    "params": {"message": "OK?", "requestedSchema": {"type": "object"}}}}
            })
        };
        let (canned, transport) = CannedPeer::start(vec![
            (
                "tools/call",
                json!({"resultType": "task", "taskId": "t-9", "status": "working", "ttlMs": null, "pollIntervalMs": 10}),
            ),
            ("tasks/get", asking()),
            ("tasks/update", json!({"resultType": "complete"})),
            ("tasks/get", asking()),
            ("tasks/get", asking()),
            (
                "tasks/get",
                json!({"resultType": "complete", "taskId": "t-9", "status": "completed", "ttlMs": null,
                "result": {"content": [{"type": "text", "text": "done"}]}}),
            ),
        ]);
        let calls = Arc::new(AtomicUsize::new(0));
        let client = Client::builder()
            .input_handlers(slow_person(calls.clone(), Duration::ZERO))
            .connect(transport)
            .await
            .unwrap();
        let (tracker, seen, _run) = running_worker(&client);
        let id = track(&tracker, &client, "approve").await;
        assert!(seen.until(id).await.is_completed());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let updates = canned.methods().iter().filter(|m| *m == "tasks/update").count();
        assert_eq!(updates, 1, "{:?}", canned.methods());
    })
    .await;
}
