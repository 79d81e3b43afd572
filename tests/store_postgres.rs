//! `PostgresStore` against a real Postgres: the store contract, workers
//! racing for the same records, answers racing each other and a worker's
//! save, a database written by version 1 of the schema, a lost
//! connection, corrupt rows and a schema from the future.
//!
//! One throwaway cluster serves the whole binary (see
//! `support/postgres.rs`), each test in a database of its own. The binary
//! has its own `main` so that the cluster is stopped and its folder
//! deleted after the last test, whatever the tests did. Run with
//! `-- --measure` to print the time a claim of 64 and a save take.

#[path = "support/postgres.rs"]
mod postgres;
#[path = "store_postgres/production.rs"]
mod production;
#[path = "support/runner.rs"]
#[allow(
    dead_code,
    unused_imports,
    unused_macros,
    reason = "only `run_each` is used here"
)]
mod runner;
#[path = "support/time.rs"]
#[allow(dead_code, reason = "only `bounded` is used here")]
mod time;

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant, SystemTime};

use mcp_tasks::TaskRef;
use mcp_tasks::protocol::{
    ElicitResult, InputRequest, InputRequests, InputResponse, TaskId, TaskStatus,
};
use mcp_tasks::store::backend::{Claim, Fence, NewTask, Reservation, StepReport};
use mcp_tasks::store::{
    Filter, History, PostgresStore, RecordId, RecordState, Refusal, Schedule, StoreResult,
    TaskRecord, TaskStore,
};
use postgres::Pg;

/// A moment well clear of the real clock, so that the tests set time.
fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000 + secs)
}

fn task(n: u32, due: SystemTime) -> NewTask {
    NewTask {
        unique_key: false,
        reference: TaskRef::new(TaskId::new(format!("task-{n}-secret")), Some("srv".into()))
            .with_protocol_version("2026-07-28"),
        tool: "export".into(),
        key: None,
        scope: "tenant".into(),
        status: TaskStatus::Working,
        status_message: None,
        poll_interval_ms: Some(1_000),
        due,
        ending: None,
        schedule: Schedule::default(),
    }
}

fn claim(worker: &str, limit: usize, now: SystemTime) -> Claim<'_> {
    Claim {
        worker,
        limit,
        now,
        lease: Duration::from_secs(30),
        record: None,
    }
}

/// What a read found: `status`, due again at `due`, nothing else.
fn step(status: TaskStatus, due: SystemTime) -> StepReport {
    StepReport {
        status,
        status_message: None,
        poll_interval_ms: None,
        failed_reads: 0,
        due,
        taken: Vec::new(),
        offered: Vec::new(),
    }
}

fn ids(records: &[StoreResult<TaskRecord>]) -> Vec<RecordId> {
    records
        .iter()
        .map(|r| r.as_ref().expect("a readable record").id)
        .collect()
}

/// A migrated database and a store on it that takes the times the test
/// passes as they are (the tests set time).
async fn store(pg: &Pg) -> (PostgresStore, String) {
    let url = pg.database().await;
    PostgresStore::migrate(&url).await.expect("migrate");
    (on_worker_clock(&url).await, url)
}

/// A store on the database at `url`, on the tests' clock: another worker.
async fn on_worker_clock(url: &str) -> PostgresStore {
    PostgresStore::builder(url)
        .worker_clock()
        .connect()
        .await
        .expect("connect")
}

/// The schema versions recorded in the database, oldest first.
async fn schema_versions(raw: &tokio_postgres::Client) -> Vec<i64> {
    raw.query("SELECT version FROM mcp_tasks_schema ORDER BY version", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The database `url` names: its last `dbname=`, or a URL's path.
fn dbname(url: &str) -> String {
    let name = match url.split_once("://") {
        Some((_, rest)) => rest.rsplit('/').next().unwrap_or_default(),
        None => url
            .split_whitespace()
            .rev()
            .find_map(|kv| kv.strip_prefix("dbname="))
            .unwrap_or_default(),
    };
    name.split('?').next().unwrap_or_default().to_owned()
}

async fn the_contract_holds(pg: Pg) {
    let (store, _) = store(&pg).await;
    mcp_tasks::store::contract(&store).await;
}

async fn concurrent_claims_never_share_a_record(pg: Pg) {
    let (a, url) = store(&pg).await;
    let b = on_worker_clock(&url).await;
    let mut inserted = BTreeSet::new();
    for n in 0..300 {
        inserted.insert(a.insert(task(n, t(u64::from(n % 17)))).await.unwrap());
    }
    // Eight workers on two connections claim small batches at once, each
    // until it finds nothing left.
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..8 {
        let store = if w % 2 == 0 { a.clone() } else { b.clone() };
        workers.spawn(async move {
            let name = format!("w{w}");
            let mut got = Vec::new();
            loop {
                let batch = store.claim(claim(&name, 7, t(100))).await.unwrap();
                if batch.is_empty() {
                    return got;
                }
                got.extend(ids(&batch));
            }
        });
    }
    let mut claimed = Vec::new();
    while let Some(got) = workers.join_next().await {
        claimed.extend(got.unwrap());
    }
    // A worker may stop while rows it skipped were still locked: take
    // what is left, then every record was claimed exactly once.
    claimed.extend(ids(&a.claim(claim("last", 1_000, t(100))).await.unwrap()));
    let unique: BTreeSet<RecordId> = claimed.iter().copied().collect();
    assert_eq!(unique.len(), claimed.len(), "a record was claimed twice");
    assert_eq!(unique, inserted);
}

/// A claim of each limit from 1 to 90 on one connection (more limits than
/// it prepares a claim of their own for): each takes at most its limit,
/// the earliest due first, and no record twice.
async fn claims_of_every_limit_take_the_earliest_once(pg: Pg) {
    let (store, _) = store(&pg).await;
    let mut due = Vec::new();
    for n in 0..4_200 {
        let at = t(u64::from((n * 7_919) % 4_200));
        due.push((at, store.insert(task(n, at)).await.unwrap()));
    }
    due.sort();
    let mut expected = due.into_iter().map(|(_, id)| id);
    let mut seen = BTreeSet::new();
    for limit in 1..=90 {
        let got = ids(&store.claim(claim("w", limit, t(5_000))).await.unwrap());
        let want: Vec<RecordId> = expected.by_ref().take(limit).collect();
        assert_eq!(got, want, "a claim of {limit}");
        for id in got {
            assert!(seen.insert(id), "record {id} claimed twice");
        }
    }
}

async fn workers_starting_together_migrate_once(pg: Pg) {
    let url = pg.database().await;
    let mut connects = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let url = url.clone();
        connects.spawn(async move { PostgresStore::migrate(&url).await.map(|_| ()) });
    }
    while let Some(done) = connects.join_next().await {
        done.unwrap().expect("every worker connects");
    }
    let raw = postgres::connect(&url).await;
    let versions = schema_versions(&raw).await;
    assert_eq!(versions, [1, 2, 3, 4, 5, 6], "each migration, applied once");
}

fn form() -> InputRequest {
    InputRequest::form(
        "Approve?",
        serde_json::json!({
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
        }),
    )
}

fn asked(keys: &[&str]) -> InputRequests {
    keys.iter().map(|k| ((*k).to_owned(), form())).collect()
}

fn yes() -> InputResponse {
    ElicitResult::accept(serde_json::json!({"ok": true})).into()
}

fn no() -> InputResponse {
    ElicitResult::accept(serde_json::json!({"ok": false})).into()
}

/// A record held by worker `w` (claimed alone), asking `keys`; its fence.
async fn asking(store: &PostgresStore, n: u32, keys: &[&str]) -> (RecordId, Fence) {
    let id = store.insert(task(n, t(0))).await.unwrap();
    let got = store
        .claim(Claim {
            record: Some(id),
            ..claim("w", 1, t(0))
        })
        .await
        .unwrap();
    let fence = got[0].as_ref().unwrap().fence().unwrap();
    store.ask(id, fence, &asked(keys), t(1)).await.unwrap();
    (id, fence)
}

/// Two answers to one question at once, on one connection (pipelined) and
/// on two: exactly one is stored, the other refused as answered.
async fn concurrent_answers_store_exactly_one(pg: Pg) {
    let (a, url) = store(&pg).await;
    let b = on_worker_clock(&url).await;
    for round in 0..20u32 {
        let (id, fence) = asking(&a, round, &["q"]).await;
        // Given up until later, as a worker's step does.
        let progress = step(TaskStatus::InputRequired, t(5_000));
        a.save(id, fence, progress).await.unwrap();
        let other = if round % 2 == 0 { &a } else { &b };
        let (yes, no) = (yes(), no());
        let (first, second) = tokio::join!(
            a.answer(id, "q", &yes, t(10)),
            other.answer(id, "q", &no, t(10)),
        );
        let (lost, winner) = match (first, second) {
            (Ok(()), Err(e)) => (e, yes),
            (Err(e), Ok(())) => (e, no),
            (first, second) => panic!("round {round}: {first:?} and {second:?}"),
        };
        assert!(lost.is_refused(), "{lost}");
        assert!(
            matches!(lost.refusal(), Some(Refusal::Answered { key }) if key == "q"),
            "{lost}"
        );
        let r = a.get(id).await.unwrap().unwrap();
        assert_eq!(r.answers.len(), 1);
        assert_eq!(r.answers["q"].response, winner, "the stored answer won");
        assert_eq!(r.due, t(10), "due at once");
    }
}

/// Saves made at once on one store (one connection, its statements in
/// flight together, as a worker's jobs make them) are each answered on
/// their own: written, refused for a stale fence, refused for a record
/// removed; two saves of one record land in the order made.
async fn saves_made_at_once_are_each_answered(pg: Pg) {
    let (store, url) = store(&pg).await;
    let other = on_worker_clock(&url).await;
    let mut ids = Vec::new();
    for n in 0..4 {
        ids.push(store.insert(task(900 + n, t(0))).await.unwrap());
    }
    let claimed = store.claim(claim("w", 10, t(0))).await.unwrap();
    let fence = |id: RecordId| {
        claimed
            .iter()
            .flatten()
            .find(|r| r.id == id)
            .and_then(TaskRecord::fence)
            .expect("claimed")
    };
    let [a, b, c, d] = ids[..] else {
        unreachable!()
    };
    // b's lease runs out and another worker takes it; c is removed.
    let taken = other
        .claim(Claim {
            record: Some(b),
            ..claim("other", 1, t(100))
        })
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    store.remove(c, fence(c)).await.unwrap();
    let said = |message: &str, due| StepReport {
        status_message: Some(message.into()),
        ..step(TaskStatus::Working, due)
    };
    let (d_saved, a_first, b_saved, c_saved, a_second) = tokio::join!(
        store.save(d, fence(d), said("d", t(300))),
        store.save(a, fence(a), said("one", t(300))),
        store.save(b, fence(b), said("stale", t(300))),
        store.save(c, fence(c), said("gone", t(300))),
        store.save(a, fence(a), said("two", t(400))),
    );
    d_saved.unwrap();
    a_first.unwrap();
    a_second.unwrap();
    let stale = b_saved.unwrap_err();
    assert!(stale.is_stale() && stale.record() == Some(b), "{stale}");
    let gone = c_saved.unwrap_err();
    assert!(gone.is_not_found() && gone.record() == Some(c), "{gone}");

    let r = store.get(a).await.unwrap().unwrap();
    assert_eq!((r.status_message.as_deref(), r.due), (Some("two"), t(400)));
    let said: Vec<_> = r
        .history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            mcp_tasks::store::Event::Status { message, .. } => message.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(said, ["one", "two"], "each save of a, in the order made");
    let r = store.get(b).await.unwrap().unwrap();
    assert_eq!(r.status_message, None, "the stale save wrote nothing");
    let r = store.get(d).await.unwrap().unwrap();
    assert_eq!((r.status_message.as_deref(), r.due), (Some("d"), t(300)));
}

/// A worker's save that marks an answer taken and a question offered,
/// racing an answer to another question from elsewhere: both changes
/// stand, and the record is due at once.
async fn an_answer_racing_a_save_is_never_lost(pg: Pg) {
    let (worker, url) = store(&pg).await;
    let elsewhere = on_worker_clock(&url).await;
    for round in 0..20u32 {
        let (id, fence) = asking(&worker, 100 + round, &["a", "b"]).await;
        let standing = worker.record_answer(id, fence, "a", &yes()).await.unwrap();
        assert_eq!(standing, yes());
        let answerer = if round % 2 == 0 { &worker } else { &elsewhere };
        let far = SystemTime::now() + Duration::from_secs(3_600);
        let progress = StepReport {
            taken: vec!["a".into()],
            offered: vec!["b".into()],
            ..step(TaskStatus::InputRequired, far)
        };
        let answer = no();
        let (saved, answered) = tokio::join!(
            worker.save(id, fence, progress),
            answerer.answer(id, "b", &answer, SystemTime::now()),
        );
        saved.unwrap();
        answered.unwrap();
        let r = worker.get(id).await.unwrap().unwrap();
        assert!(
            r.answers["a"].taken,
            "round {round}: the save's change stands"
        );
        assert!(r.questions["b"].offered, "round {round}: the offer stands");
        assert_eq!(
            r.answers.get("b").map(|a| &a.response),
            Some(&no()),
            "round {round}: the answer from elsewhere was not lost"
        );
        assert!(!r.answers["b"].taken);
        assert!(
            r.due <= SystemTime::now(),
            "round {round}: due at once, whichever came first"
        );
        // The worker's own handler, late: the answer from elsewhere stands.
        let late = worker.record_answer(id, fence, "b", &yes()).await.unwrap();
        assert_eq!(late, no());
    }
}

/// A database written by version 1 of the schema (a `pg_dump` of one, in
/// `tests/store_fixtures/v1.sql`): connecting migrates it to version 2
/// and keeps every record as it was, with no questions and the default
/// schedule.
async fn a_version_1_database_is_migrated(pg: Pg) {
    let url = pg.database().await;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/store_fixtures/v1.sql");
    let dump = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // Its own connection: the dump empties that session's search_path.
    postgres::connect(&url)
        .await
        .batch_execute(&dump)
        .await
        .expect("the version 1 dump loads");

    let migrated = PostgresStore::migrate(&url).await.expect("migrate");
    assert_eq!((migrated.from, migrated.to), (1, 6));
    let store = PostgresStore::builder(&url)
        .worker_clock()
        .connect()
        .await
        .expect("connect");
    let raw = postgres::connect(&url).await;
    let versions = schema_versions(&raw).await;
    assert_eq!(versions, [1, 2, 3, 4, 5, 6]);
    // Room on each page for a claim's HOT update, on a table made before.
    let options: Vec<String> = raw
        .query_one(
            "SELECT reloptions FROM pg_class WHERE relname = 'mcp_tasks_tasks'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(options.contains(&"fillfactor=50".to_owned()), "{options:?}");
    let index = raw
        .query_opt(
            "SELECT 1 FROM pg_indexes WHERE indexname = 'mcp_tasks_tasks_asking'",
            &[],
        )
        .await
        .unwrap();
    assert!(index.is_some(), "the index of records that ask");
    let index = raw
        .query_opt(
            "SELECT 1 FROM pg_indexes WHERE indexname = 'mcp_tasks_tasks_delivered'",
            &[],
        )
        .await
        .unwrap();
    assert!(index.is_some(), "the index of delivered records, for prune");

    let records: Vec<TaskRecord> = store
        .list(&Filter::all())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.expect("a readable record"))
        .collect();
    let task_ids: Vec<&str> = records
        .iter()
        .map(|r| r.reference.task_id().expose())
        .collect();
    assert_eq!(
        task_ids,
        ["task-v1-1", "task-v1-2", "task-v1-3", "task-v1-4"]
    );
    for (n, r) in records.iter().enumerate() {
        assert_eq!(r.id, RecordId(n as i64 + 1));
        assert_eq!(r.key.as_deref(), Some(format!("order-{}", n + 1).as_str()));
        assert_eq!(r.scope, "acme");
        assert_eq!(r.reference.server(), Some("srv"));
        assert_eq!(r.reference.protocol_version(), Some("2026-07-28"));
        assert_eq!(
            r.status_message.as_deref(),
            Some(format!("message {}", n + 1).as_str())
        );
        assert_eq!(r.poll_interval_ms, Some(500));
        assert!(r.questions.is_empty(), "{:?}", r.questions);
        assert_eq!(r.schedule, Schedule::default());
        assert!(r.schedule.is_default());
        assert_eq!(r.asking_since(), None);
        assert_eq!(r.history, History::default(), "no history before version 6");
    }
    let [first, second, third, fourth] = &records[..] else {
        unreachable!()
    };
    assert_eq!(first.status, TaskStatus::Working);
    assert!(first.answers.is_empty() && first.lease.is_none());
    assert!(!first.cancel_requested && first.ending.is_none());

    assert_eq!(second.status, TaskStatus::InputRequired);
    assert_eq!(second.answers.len(), 1);
    let confirm = &second.answers["confirm"];
    assert_eq!(confirm.response, yes());
    assert!(!confirm.taken);
    let lease = second.lease.as_ref().expect("its lease");
    assert_eq!(lease.owner, "v1");
    assert_eq!(lease.fence.0, 1);

    assert!(third.cancel_requested && third.ending.is_none());

    assert_eq!(fourth.status, TaskStatus::Completed);
    assert!(fourth.ending.as_ref().is_some_and(|e| e.is_completed()));
    assert!(fourth.delivered);
    let delivered = store
        .list(&Filter::all().state(RecordState::Delivered))
        .await
        .unwrap();
    assert_eq!(delivered.len(), 1);
    assert!(
        store
            .list(&Filter::all().asking())
            .await
            .unwrap()
            .is_empty()
    );

    // The migrated store works on: new records follow the old ones, claims
    // hand out fences past the old ones, and questions are recorded.
    let new = store.insert(task(5, t(0))).await.unwrap();
    assert_eq!(new, RecordId(5));
    let got = store.claim(claim("w", 10, t(0))).await.unwrap();
    let got: Vec<TaskRecord> = got.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(
        got.iter().map(|r| r.id).collect::<Vec<_>>(),
        [RecordId(1), RecordId(2), RecordId(3), RecordId(5)],
        "every open record, the delivered one left alone"
    );
    assert!(got.iter().all(|r| r.fence().unwrap().0 > 2));
    let second = &got[1];
    let fence = second.fence().unwrap();
    let (questions, answers) = store
        .ask(second.id, fence, &asked(&["confirm", "next"]), t(1))
        .await
        .unwrap();
    assert_eq!(questions.len(), 2);
    assert_eq!(answers["confirm"].response, yes(), "the old answer kept");
    let open = store.get(second.id).await.unwrap().unwrap();
    assert_eq!(open.asking_since(), Some(t(1)), "\"next\" waits");
    let listed = store.list(&Filter::all().asking()).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].as_ref().unwrap().id, second.id);
}

async fn a_lost_connection_is_unavailable_then_comes_back(pg: Pg) {
    let (store, url) = store(&pg).await;
    let id = store.insert(task(1, t(0))).await.unwrap();
    let mut raw = postgres::connect(&url).await;

    // Killed in the middle of a statement: a row lock holds the store's
    // UPDATE until its backend is terminated.
    let tx = raw.transaction().await.unwrap();
    tx.query("SELECT id FROM mcp_tasks_tasks FOR UPDATE", &[])
        .await
        .unwrap();
    let cancel = tokio::spawn({
        let store = store.clone();
        async move { store.request_cancel(id, t(0)).await }
    });
    let pid: i32 = loop {
        let waiting = tx
            .query_opt(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
                 AND application_name = 'mcp-tasks' AND wait_event_type = 'Lock'",
                &[],
            )
            .await
            .unwrap();
        if let Some(row) = waiting {
            break row.get(0);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    tx.query("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .unwrap();
    let e = cancel.await.unwrap().unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    tx.rollback().await.unwrap();
    assert!(store.get(id).await.unwrap().is_some(), "connected again");

    // Killed while idle: the next call may find out (unavailable) or
    // connect again at once; the call after it works.
    raw.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name = 'mcp-tasks'",
        &[],
    )
    .await
    .unwrap();
    if let Err(e) = store.get(id).await {
        assert!(e.is_unavailable(), "{e}");
    }
    assert!(store.get(id).await.unwrap().is_some(), "connected again");
}

async fn corrupt_rows_come_back_in_their_place(pg: Pg) {
    let (store, url) = store(&pg).await;
    let mut ids_in_order = Vec::new();
    for n in 0..5 {
        ids_in_order.push(store.insert(task(n, t(u64::from(n)))).await.unwrap());
    }
    let raw = postgres::connect(&url).await;
    let damage = [
        "UPDATE mcp_tasks_tasks SET status = 'exploded' WHERE id = $1",
        "UPDATE mcp_tasks_tasks SET answers = '{\"q\": 3' WHERE id = $1",
        "UPDATE mcp_tasks_tasks SET protocol_version = '1999-01-01' WHERE id = $1",
    ];
    let broken = [ids_in_order[1], ids_in_order[2], ids_in_order[3]];
    for (sql, id) in damage.iter().zip(broken) {
        raw.execute(*sql, &[&id.0]).await.unwrap();
    }

    let got = store.claim(claim("w", 10, t(100))).await.unwrap();
    assert_eq!(got.len(), 5, "every due record, readable or not");
    for (r, id) in got.iter().zip(&ids_in_order) {
        match r {
            Ok(r) => assert!(!broken.contains(&r.id) && r.id == *id),
            Err(e) => {
                assert!(e.is_corrupt(), "{e}");
                assert_eq!(e.record(), Some(*id), "in its place");
                assert!(broken.contains(id));
            }
        }
    }
    assert_eq!(got.iter().filter(|r| r.is_err()).count(), 3);
    assert!(
        store
            .claim(claim("w", 10, t(100)))
            .await
            .unwrap()
            .is_empty(),
        "corrupt records stay leased too"
    );
    let listed = store.list(&Filter::all()).await.unwrap();
    assert_eq!(listed.iter().filter(|r| r.is_err()).count(), 3);
    let e = store.get(broken[0]).await.unwrap_err();
    assert!(e.is_corrupt() && !e.to_string().contains("secret"), "{e}");
    // The readable ones are still served.
    let fine = got[0].as_ref().unwrap();
    let progress = step(TaskStatus::Working, t(200));
    store
        .save(fine.id, fine.fence().unwrap(), progress)
        .await
        .unwrap();
}

async fn a_newer_schema_is_refused(pg: Pg) {
    let (_, url) = store(&pg).await;
    let raw = postgres::connect(&url).await;
    raw.execute(
        "INSERT INTO mcp_tasks_schema (version, applied) VALUES (99, 0)",
        &[],
    )
    .await
    .unwrap();
    let e = PostgresStore::connect(&url).await.unwrap_err();
    assert!(e.is_schema_too_new(), "{e}");
    assert!(e.to_string().contains("99"), "{e}");
    let e = PostgresStore::migrate(&url).await.unwrap_err();
    assert!(e.is_schema_too_new(), "{e}");
}

async fn an_unreachable_server_is_unavailable(_: Pg) {
    // A loopback port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("host=127.0.0.1 port={port} user=nobody dbname=none connect_timeout=5");
    let e = PostgresStore::connect(&url).await.unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    let e = PostgresStore::connect("postgres://[not a url")
        .await
        .unwrap_err();
    assert!(!e.is_unavailable(), "{e}");
}

/// The database refuses every connection for a while in the middle of a
/// run: the tracker pauses (its `run` goes on, warning), then resumes, and
/// every task still ends and is delivered once.
async fn a_tracker_pauses_while_the_database_is_away(pg: Pg) {
    const N: usize = 20;
    let url = pg.database().await;
    PostgresStore::migrate(&url).await.expect("migrate");
    let store = PostgresStore::connect(&url).await.expect("connect");
    let name = dbname(&url);
    let ms = Duration::from_millis;
    let tracked = Tracked::start(store, N, ms(600), Some(ms(500))).await;

    // The database goes away: no new connection, the store's own cut.
    let admin = pg.admin().await;
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {name} ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ))
        .await
        .unwrap();
    tokio::time::sleep(ms(1_000)).await;
    if tracked.run.is_finished() {
        panic!(
            "the worker stopped while the database was away: {:?}",
            tracked.run.await
        );
    }
    let during = tracked.delivered.lock().unwrap().len();
    admin
        .batch_execute(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
        .await
        .unwrap();

    let keys = tracked.until_delivered(N).await;
    assert_eq!(keys.len(), N, "every task delivered, none lost");
    assert!(
        during < N,
        "the outage came before the end ({during} delivered)"
    );
}

/// A worker tracking tasks on a scripted server, and what it delivered.
struct Tracked {
    run: tokio::task::JoinHandle<mcp_tasks::store::StoreResult<()>>,
    /// Each delivery: the task's key, and whether it completed.
    delivered: std::sync::Arc<std::sync::Mutex<Vec<(String, bool)>>>,
}

impl Tracked {
    /// Starts `n` tasks (keys 0 to n − 1) whose work takes `work` in two
    /// steps, tracked on `store` (with `lease`, else the default) by a
    /// worker that runs until dropped and acknowledges every ending.
    async fn start(
        store: PostgresStore,
        n: usize,
        work: Duration,
        lease: Option<Duration>,
    ) -> Self {
        use mcp_tasks::Client;
        use mcp_tasks::protocol::CallToolResult;
        use mcp_tasks::store::{Label, Tracker};
        use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};

        let ms = Duration::from_millis;
        let server = TestServer::new().tool(ScriptedTool::task(
            "export",
            TaskScript::new()
                .poll_interval(ms(20))
                .working(work / 2, "writing")
                .complete(work / 2, CallToolResult::text("done")),
        ));
        let client = Client::connect(server.connect()).await.unwrap();
        let builder = Tracker::builder(store, client.clone())
            .min_poll_interval(ms(10))
            .idle(ms(20));
        let tracker = match lease {
            Some(lease) => builder.lease(lease).build(),
            None => builder.build(),
        };
        for i in 0..n {
            tracker
                .call_tool(client.task(), Label::tool("export").key(i.to_string()), ())
                .await
                .unwrap();
        }
        let delivered = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = delivered.clone();
        let run = tokio::spawn(async move {
            tracker
                .run(move |d| {
                    let completed = d.ending().is_completed();
                    let key = d.key().unwrap().to_owned();
                    seen.lock().unwrap().push((key, completed));
                    async { true }
                })
                .await
        });
        Tracked { run, delivered }
    }

    /// Waits until `n` deliveries came (the worker must go on meanwhile),
    /// stops the worker, and returns the keys delivered, each once.
    async fn until_delivered(self, n: usize) -> Vec<(String, bool)> {
        while self.delivered.lock().unwrap().len() < n {
            assert!(!self.run.is_finished(), "the worker ended: {:?}", self.run);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.run.abort();
        let mut got = self.delivered.lock().unwrap().clone();
        got.sort();
        got.dedup();
        got
    }
}

/// Prints the time a claim of 64 records and a save take (not a test:
/// figures for a person to read).
async fn measure(pg: Pg) {
    let (store, _) = store(&pg).await;
    let rounds = 40;
    for n in 0..64 * rounds {
        store.insert(task(n, t(0))).await.unwrap();
    }
    let (mut claiming, mut saving, mut saves) = (Duration::ZERO, Duration::ZERO, 0u32);
    for round in 0..rounds {
        let now = t(10 + u64::from(round));
        let started = Instant::now();
        let batch = store.claim(claim("w", 64, now)).await.unwrap();
        claiming += started.elapsed();
        assert_eq!(batch.len(), 64);
        for r in batch {
            let r = r.unwrap();
            let progress = StepReport {
                poll_interval_ms: Some(1_000),
                ..step(TaskStatus::Working, t(100_000))
            };
            let started = Instant::now();
            store
                .save(r.id, r.fence().unwrap(), progress)
                .await
                .unwrap();
            saving += started.elapsed();
            saves += 1;
        }
    }
    println!(
        "claim of 64: {:?} on average over {rounds}; save: {:?} on average over {saves}",
        claiming / rounds,
        saving / saves
    );
}

type Case = fn(Pg) -> Pin<Box<dyn Future<Output = ()>>>;

/// Each test by its name, as `(name, Case)`.
macro_rules! cases {
    ($($test:path),* $(,)?) => {
        [$((stringify!($test), (|pg| Box::pin($test(pg))) as Case)),*]
    };
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some((cluster, pg)) = postgres::start() else {
        return;
    };
    if args.iter().any(|a| a == "--measure") {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(measure(pg));
        return;
    }
    let cases = cases![
        a_tracker_pauses_while_the_database_is_away,
        the_contract_holds,
        concurrent_answers_store_exactly_one,
        an_answer_racing_a_save_is_never_lost,
        saves_made_at_once_are_each_answered,
        a_version_1_database_is_migrated,
        concurrent_claims_never_share_a_record,
        claims_of_every_limit_take_the_earliest_once,
        workers_starting_together_migrate_once,
        a_lost_connection_is_unavailable_then_comes_back,
        corrupt_rows_come_back_in_their_place,
        a_newer_schema_is_refused,
        an_unreachable_server_is_unavailable,
        production::connect_changes_nothing_and_asks_for_the_migration,
        production::a_worker_role_without_schema_rights_tracks_tasks,
        production::the_tables_live_in_the_schema_named,
        production::tls_follows_sslmode,
        production::a_peer_that_never_answers_is_unavailable_within_the_bound,
        production::a_statement_without_an_answer_is_unavailable_then_comes_back,
        production::a_worker_whose_clock_runs_ahead_takes_no_held_record,
        production::a_key_is_reserved_once_by_workers_racing,
    ];
    let failed = runner::run_each(
        &args,
        cases.iter().map(|&(name, case)| {
            let pg = pg.clone();
            (name, move || case(pg))
        }),
    );
    // Stop the cluster before exiting: `exit` runs no destructors.
    drop(cluster);
    if failed > 0 {
        std::process::exit(1);
    }
}
