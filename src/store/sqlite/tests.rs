use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use super::*;
use crate::protocol::{ElicitResult, TaskStatus};
use crate::store::contract::{claim, new_task, t};

/// A directory of the test's own under the system's temp dir, removed
/// when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "mcp-tasks-sqlite-{name}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn db(&self) -> PathBuf {
        self.0.join("tasks.db")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A task's record: the contract's, with a key, scope, message and
/// interval of these tests'.
fn task(n: u64, due: SystemTime) -> NewTask {
    NewTask {
        key: Some(format!("key-{n}")),
        scope: "tenant".into(),
        status_message: None,
        poll_interval_ms: Some(1_000),
        ..new_task(u32::try_from(n).expect("a small n"), due)
    }
}

/// Runs raw SQL on the store's connection, as a person (or a bug) might.
fn raw(store: &SqliteStore, statements: &str) {
    let conn = store.conn.lock().unwrap();
    conn.execute_batch(statements).unwrap();
}

#[tokio::test]
async fn a_file_store_keeps_the_contract() {
    let dir = Scratch::new("contract");
    let store = SqliteStore::open(dir.db()).await.unwrap();
    crate::store::contract(&store).await;
}

#[tokio::test]
async fn a_memory_database_keeps_the_contract() {
    crate::store::contract(&SqliteStore::memory().unwrap()).await;
}

#[tokio::test]
async fn the_file_is_private_and_logged_ahead() {
    let dir = Scratch::new("private");
    let store = SqliteStore::open(dir.db()).await.unwrap();
    let mode: String = store
        .conn
        .lock()
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.db()).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "readable by its owner alone: {mode:o}");
    }
    assert!(!format!("{store:?}").contains("secret"));
}

#[tokio::test]
async fn records_survive_closing_and_reopening_the_file() {
    let dir = Scratch::new("reopen");
    let store = SqliteStore::open(dir.db()).await.unwrap();
    let id = store.insert(task(1, t(0))).await.unwrap();
    let first = store.claim(claim("w1", 1, t(0))).await.unwrap().remove(0);
    let fence = first.unwrap().fence().unwrap();
    let yes: InputResponse = ElicitResult::accept(serde_json::json!({"ok": true})).into();
    let asked: crate::protocol::InputRequests = [(
        "confirm".to_owned(),
        crate::protocol::InputRequest::form("Sure?", serde_json::json!({"type": "object"})),
    )]
    .into();
    store.ask(id, fence, &asked, t(0)).await.unwrap();
    store
        .record_answer(id, fence, "confirm", &yes)
        .await
        .unwrap();
    let mut progress = StepReport {
        status: TaskStatus::InputRequired,
        status_message: Some("waiting".into()),
        poll_interval_ms: Some(2_000),
        failed_reads: 1,
        due: t(60),
        taken: vec!["confirm".into()],
        offered: vec!["confirm".into()],
    };
    store.save(id, fence, progress.clone()).await.unwrap();
    let before = store.get(id).await.unwrap().unwrap();
    drop(store);

    let store = SqliteStore::open(dir.db()).await.unwrap();
    let after = store.get(id).await.unwrap().expect("the record survives");
    assert_eq!(after, before);
    assert!(after.answers["confirm"].taken);
    assert!(after.questions["confirm"].offered);
    // Fences keep growing across the restart.
    let again = store.claim(claim("w2", 1, t(60))).await.unwrap().remove(0);
    let again = again.unwrap().fence().unwrap();
    assert!(again > fence, "{again:?} after {fence:?}");
    progress.due = t(120);
    let stale = store.save(id, fence, progress).await.unwrap_err();
    assert!(stale.is_stale(), "{stale}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_connections_never_claim_the_same_record() {
    let dir = Scratch::new("two");
    let a = SqliteStore::open(dir.db()).await.unwrap();
    let b = SqliteStore::open(dir.db()).await.unwrap();
    for n in 0..200 {
        a.insert(task(n, t(n % 7))).await.unwrap();
    }
    let mut claims = tokio::task::JoinSet::new();
    for w in 0..40 {
        let store = if w % 2 == 0 { a.clone() } else { b.clone() };
        claims.spawn(async move {
            let worker = format!("w{w}");
            let got = store.claim(claim(&worker, 7, t(10))).await.unwrap();
            let ids: Vec<RecordId> = got.into_iter().map(|r| r.unwrap().id).collect();
            (worker, ids)
        });
    }
    let mut seen = BTreeSet::new();
    while let Some(joined) = claims.join_next().await {
        let (worker, ids) = joined.unwrap();
        for id in ids {
            assert!(seen.insert(id), "record {id} claimed twice");
            let held = b.get(id).await.unwrap().unwrap().lease.unwrap();
            assert_eq!(held.owner, worker);
        }
    }
    assert_eq!(seen.len(), 200, "every due record, once");
}

#[tokio::test]
async fn corrupt_rows_are_errors_in_their_place() {
    let dir = Scratch::new("corrupt");
    let store = SqliteStore::open(dir.db()).await.unwrap();
    let mut ids = Vec::new();
    for n in 0..6 {
        ids.push(store.insert(task(n, t(n))).await.unwrap());
    }
    let damage = [
        "answers = '{not json'",
        "ending = '{\"ending\": \"exploded\"}'",
        "status = 'sleeping'",
        "protocol_version = '1999-01-01'",
        "failed_reads = 'many'",
    ];
    for (id, set) in ids[1..].iter().zip(damage) {
        raw(
            &store,
            &format!("UPDATE tasks SET {set} WHERE id = {}", id.0),
        );
    }

    let check = |got: Vec<StoreResult<TaskRecord>>, what: &str| {
        assert_eq!(got.len(), ids.len(), "{what}: every row, in its place");
        assert_eq!(got[0].as_ref().unwrap().id, ids[0], "{what}");
        for (r, id) in got[1..].iter().zip(&ids[1..]) {
            let e = r.as_ref().unwrap_err();
            assert!(e.is_corrupt(), "{what}: {e}");
            assert_eq!(e.record(), Some(*id), "{what}");
        }
    };
    check(store.list(&Filter::all()).await.unwrap(), "list");
    check(store.claim(claim("w", 10, t(100))).await.unwrap(), "claim");
    for id in &ids[1..] {
        assert!(store.get(*id).await.unwrap_err().is_corrupt());
    }
    // A corrupt record stays leased like the others: not claimed again
    // before its lease runs out.
    assert!(
        store
            .claim(claim("w", 10, t(100)))
            .await
            .unwrap()
            .is_empty()
    );
}

/// A bad value in each column of a record, written as a person (or a
/// bug) might with raw SQL: every such row is reported, by listings and
/// by claims alike (an error naming the record, in place of it), none is
/// silently passed over for good, and none keeps the other rows from
/// being claimed. A claim does not read the history, so a record whose
/// history alone is bad is claimed and tracked, and reported by reads.
#[tokio::test]
async fn a_bad_value_in_any_column_is_reported_and_starves_nothing() {
    let dir = Scratch::new("every-column");
    let store = SqliteStore::open(dir.db()).await.unwrap();
    let ended = r#"'{"ending": "cancelled"}'"#;
    // One damaged row per column (and per claim path: open or ended).
    let damage: Vec<(&str, String)> = [
        ("task_id", "task_id = X'ff'".to_owned()),
        ("server", "server = X'ff'".into()),
        ("protocol_version", "protocol_version = '1999-01-01'".into()),
        ("tool", "tool = X'ff'".into()),
        ("key", "key = X'ff'".into()),
        ("scope", "scope = X'ff'".into()),
        ("created_ms", "created_ms = 'yesterday'".into()),
        ("updated_ms", "updated_ms = 'today'".into()),
        ("status", "status = 'sleeping'".into()),
        ("status_message", "status_message = X'ff'".into()),
        ("poll_interval_ms", "poll_interval_ms = -5".into()),
        ("due_ms", "due_ms = 'soon'".into()),
        ("due_ms, ended", format!("due_ms = X'ff', ending = {ended}")),
        ("failed_reads", "failed_reads = 'many'".into()),
        ("lease_owner", "lease_owner = X'ff'".into()),
        ("lease_until_ms", "lease_until_ms = 'later'".into()),
        (
            "lease_until_ms, ended",
            format!("lease_until_ms = 'later', ending = {ended}"),
        ),
        ("fence", "fence = 'first'".into()),
        ("answers", "answers = '{not json'".into()),
        ("cancel_requested", "cancel_requested = 'maybe'".into()),
        ("ending", r#"ending = '{"ending": "exploded"}'"#.into()),
        ("delivered", "delivered = 'perhaps'".into()),
        (
            "delivered, ended",
            format!("delivered = 'perhaps', ending = {ended}"),
        ),
        ("questions", "questions = '[1'".into()),
        ("schedule", "schedule = 'weekly'".into()),
        ("history", "history = '[{not json'".into()),
        ("history_dropped", "history_dropped = 'some'".into()),
    ]
    .into_iter()
    .collect();
    let mut good = BTreeSet::new();
    let mut bad = std::collections::BTreeMap::new();
    for (n, (what, set)) in damage.iter().enumerate() {
        // A good row before each damaged one, both due.
        good.insert(store.insert(task(2 * n as u64, t(n as u64))).await.unwrap());
        let id = store
            .insert(task(2 * n as u64 + 1, t(n as u64)))
            .await
            .unwrap();
        raw(
            &store,
            &format!("UPDATE tasks SET {set} WHERE id = {}", id.0),
        );
        bad.insert(id, *what);
    }

    // Listed: each damaged row is an error naming it.
    for r in store.list(&Filter::all()).await.unwrap() {
        match r {
            Ok(r) => assert!(good.contains(&r.id), "{} read as fine", bad[&r.id]),
            Err(e) => {
                let id = e.record().expect("the record is named");
                assert!(e.is_corrupt(), "{}: {e}", bad[&id]);
            }
        }
    }
    for (id, what) in &bad {
        let e = store.get(*id).await.unwrap_err();
        assert!(e.is_corrupt(), "{what}: {e}");
    }

    // Claimed a few at a time until nothing is left: every good row once,
    // every damaged row reported once, in place of its record.
    let (mut claimed, mut reported) = (BTreeSet::new(), BTreeSet::new());
    for _ in 0..100 {
        let got = store.claim(claim("w", 4, t(1_000))).await.unwrap();
        if got.is_empty() {
            break;
        }
        for r in got {
            match r {
                Ok(r) => assert!(claimed.insert(r.id), "{} claimed twice", r.id),
                Err(e) => {
                    let id = e.record().expect("the record is named");
                    assert!(e.is_corrupt(), "{e}");
                    assert!(reported.insert(id), "{} reported twice", bad[&id]);
                }
            }
        }
    }
    let history_only = |what: &str| what.starts_with("history");
    let tracked: BTreeSet<RecordId> = bad
        .iter()
        .filter(|(_, what)| history_only(what))
        .map(|(id, _)| *id)
        .chain(good.iter().copied())
        .collect();
    assert_eq!(claimed, tracked, "every row a claim can read is claimed");
    let missing: Vec<&str> = bad
        .iter()
        .filter(|(id, what)| !history_only(what) && !reported.contains(id))
        .map(|(_, what)| *what)
        .collect();
    assert!(missing.is_empty(), "never reported: {missing:?}");

    // Once their leases ran out, they come back: none is lost.
    let mut back = BTreeSet::new();
    for _ in 0..100 {
        let got = store.claim(claim("w", 16, t(2_000))).await.unwrap();
        if got.is_empty() {
            break;
        }
        for r in got {
            back.insert(r.map(|r| r.id).unwrap_or_else(|e| e.record().unwrap()));
        }
    }
    let all: BTreeSet<RecordId> = good.iter().chain(bad.keys()).copied().collect();
    assert_eq!(back, all, "every row comes back once its lease ran out");

    // A claim of one damaged record by its id reports it as well.
    let lease = bad
        .iter()
        .find(|(_, what)| **what == "lease_until_ms")
        .map(|(id, _)| *id)
        .unwrap();
    raw(
        &store,
        &format!(
            "UPDATE tasks SET lease_until_ms = 'later' WHERE id = {}",
            lease.0
        ),
    );
    let one = store
        .claim(Claim {
            record: Some(lease),
            ..claim("w", 1, t(3_000))
        })
        .await
        .unwrap();
    assert_eq!(one.len(), 1, "the record, reported");
    let e = one[0].as_ref().unwrap_err();
    assert!(e.is_corrupt() && e.record() == Some(lease), "{e}");
}

#[tokio::test]
async fn a_schema_newer_than_the_code_is_refused() {
    let dir = Scratch::new("newer");
    let store = SqliteStore::open(dir.db()).await.unwrap();
    raw(&store, "PRAGMA user_version = 999");
    drop(store);
    let e = SqliteStore::open(dir.db()).await.unwrap_err();
    assert!(e.is_schema_too_new(), "{e}");
    assert!(e.to_string().contains("999"), "{e}");
}

#[tokio::test]
async fn a_file_that_cannot_be_opened_is_unavailable() {
    let dir = Scratch::new("missing");
    let e = SqliteStore::open(dir.0.join("no-such-dir").join("tasks.db"))
        .await
        .unwrap_err();
    assert!(e.is_unavailable(), "{e}");

    std::fs::write(dir.db(), vec![0x42; 8192]).unwrap();
    let e = SqliteStore::open(dir.db()).await.unwrap_err();
    assert!(!e.is_schema_too_new() && !e.is_unavailable(), "{e}");
}

#[tokio::test]
async fn a_full_disk_refuses_the_write_and_keeps_the_rest() {
    let dir = Scratch::new("full");
    let store = SqliteStore::open(dir.db()).await.unwrap();
    let mut kept = Vec::new();
    for n in 0..3 {
        kept.push(store.insert(task(n, t(0))).await.unwrap());
    }
    // The disk fills up: SQLite may grow the file by two pages at most.
    let pages: i64 = {
        let conn = store.conn.lock().unwrap();
        conn.query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap()
    };
    raw(&store, &format!("PRAGMA max_page_count = {}", pages + 2));
    let mut big = task(99, t(0));
    big.status_message = Some("x".repeat(3_000));
    let mut refused = None;
    for _ in 0..50 {
        match store.insert(big.clone()).await {
            Ok(id) => kept.push(id),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let e = refused.expect("the disk fills up");
    assert!(e.is_full() && e.is_unavailable(), "{e}");
    for id in &kept {
        assert!(store.get(*id).await.unwrap().is_some(), "record {id} kept");
    }
    assert_eq!(store.list(&Filter::all()).await.unwrap().len(), kept.len());

    // Room again: the store goes on.
    raw(&store, "PRAGMA max_page_count = 1000000");
    store.insert(big).await.unwrap();
}

/// A file written by version 0.1 of this crate (schema 1: four records,
/// one with an answer, one with a cancel asked for, one delivered) opens
/// with every record as it was, and the new columns empty.
#[tokio::test]
async fn a_file_of_schema_1_is_migrated_keeping_every_record() {
    let dir = Scratch::new("v1");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/store_fixtures/v1.sqlite"
    );
    std::fs::copy(fixture, dir.db()).unwrap();
    let store = SqliteStore::open(dir.db()).await.unwrap();
    let version: i64 = store
        .conn
        .lock()
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, schema::known_version());
    let all: Vec<TaskRecord> = store
        .list(&Filter::all())
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let ids: Vec<&str> = all.iter().map(|r| r.reference.task_id().expose()).collect();
    assert_eq!(ids, ["task-v1-1", "task-v1-2", "task-v1-3", "task-v1-4"]);
    for r in &all {
        assert_eq!(r.tool, "export");
        assert_eq!(r.scope, "acme");
        assert_eq!(r.reference.server(), Some("srv"));
        assert_eq!(r.poll_interval_ms, Some(500));
        assert!(r.questions.is_empty());
        assert!(r.schedule.is_default());
        assert_eq!(
            r.history,
            crate::store::History::default(),
            "no history before version 6"
        );
    }
    let yes: InputResponse = ElicitResult::accept(serde_json::json!({"ok": true})).into();
    assert_eq!(all[1].answers["confirm"].response, yes);
    assert_eq!(all[1].status, TaskStatus::InputRequired);
    assert!(all[2].cancel_requested);
    assert!(all[3].delivered && all[3].ending.as_ref().unwrap().is_completed());
    // The old records work with the new code: claimed, asked, answered.
    let got = store
        .claim(Claim {
            record: Some(all[0].id),
            ..claim("w", 1, SystemTime::now())
        })
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let asked: crate::protocol::InputRequests = [(
        "q".to_owned(),
        crate::protocol::InputRequest::form("Sure?", serde_json::json!({"type": "object"})),
    )]
    .into();
    store
        .ask(got.id, got.fence().unwrap(), &asked, t(1))
        .await
        .unwrap();
    store
        .answer(got.id, "q", &ElicitResult::decline().into(), t(2))
        .await
        .unwrap();
    let history = store.get(got.id).await.unwrap().unwrap().history;
    let events: Vec<&str> = history.entries.iter().map(|e| e.event.name()).collect();
    assert_eq!(events, ["asked", "answered"], "{history:?}");
}

/// A prune walks the index of delivered records for its batch alone,
/// never the table: a batch costs the same among a million records as
/// among ten, so no batch holds the write lock for long. A damaged row is
/// never pruned (it stays to be reported).
#[tokio::test]
async fn a_prune_reads_its_batch_from_its_own_index() {
    let store = SqliteStore::memory().unwrap();
    let plan: Vec<String> = {
        let conn = store.conn.lock().unwrap();
        let mut s = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {PRUNE}"))
            .unwrap();
        s.query_map(params![0, 10], |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let plan = plan.join("\n");
    assert!(plan.contains("tasks_delivered_by_created"), "{plan}");
    assert!(
        !plan.contains("SCAN tasks"),
        "a walk of the whole table: {plan}"
    );
    assert!(
        !plan.contains("TEMP B-TREE"),
        "a sort of every match: {plan}"
    );

    let mut ids = Vec::new();
    for n in 0..3 {
        let id = store.insert(task(n, t(0))).await.unwrap();
        let c = Claim {
            record: Some(id),
            ..claim("w", 1, t(0))
        };
        let fence = store.claim(c).await.unwrap()[0]
            .as_ref()
            .unwrap()
            .fence()
            .unwrap();
        store.finish(id, fence, &Ending::Cancelled).await.unwrap();
        store.acknowledge(id, fence).await.unwrap();
        ids.push(id);
    }
    raw(
        &store,
        &format!("UPDATE tasks SET delivered = 'yes' WHERE id = {}", ids[0]),
    );
    let later = SystemTime::now() + Duration::from_secs(60);
    assert_eq!(store.prune(later, 100).await.unwrap(), 2);
    let left = store.get(ids[0]).await;
    assert!(left.unwrap_err().is_corrupt(), "the damaged row stays");
}
