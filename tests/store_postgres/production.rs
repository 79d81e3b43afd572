//! The store as it runs in production: the migration as a step of its
//! own, a worker role without rights on the schema, a schema of its own,
//! TLS by each `sslmode`, a peer that never answers, and a worker whose
//! clock runs ahead.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// Whether table `name` exists in the database at `url`, in any schema.
async fn has_table(url: &str, name: &str) -> bool {
    postgres::connect(url)
        .await
        .query_opt("SELECT 1 FROM pg_tables WHERE tablename = $1", &[&name])
        .await
        .unwrap()
        .is_some()
}

/// A role that may log in, unique to the database of `url`.
async fn role(pg: &Pg, url: &str) -> String {
    let role = format!("worker_{}", dbname(url));
    pg.admin()
        .await
        .batch_execute(&format!("CREATE ROLE {role} LOGIN"))
        .await
        .unwrap();
    role
}

/// `url` logging in as `user`.
fn as_user(url: &str, user: &str) -> String {
    format!("{url} user={user}")
}

pub(super) async fn connect_changes_nothing_and_asks_for_the_migration(pg: Pg) {
    let url = pg.database().await;
    let e = PostgresStore::connect(&url).await.unwrap_err();
    assert!(e.is_schema_too_old() && !e.is_unavailable(), "{e}");
    assert!(e.to_string().contains("migrate"), "says what to do: {e}");
    assert!(
        !has_table(&url, "mcp_tasks_schema").await && !has_table(&url, "mcp_tasks_tasks").await,
        "connect created tables"
    );

    let done = PostgresStore::migrate(&url).await.expect("migrate");
    assert_eq!((done.from, done.to, done.changed()), (0, 6, true));
    let again = PostgresStore::migrate(&url).await.expect("migrate again");
    assert_eq!((again.from, again.to, again.changed()), (6, 6, false));
    PostgresStore::connect(&url)
        .await
        .expect("connect after the migration");

    // A database left at version 1: refused, and left at version 1.
    let old = pg.database().await;
    let raw = postgres::connect(&old).await;
    raw.batch_execute(include_str!(
        "../../src/store/postgres/migrations/0001_tasks.sql"
    ))
    .await
    .unwrap();
    let e = PostgresStore::connect(&old).await.unwrap_err();
    assert!(e.is_schema_too_old(), "{e}");
    assert!(e.to_string().contains("version 1"), "{e}");
    let max: i64 = raw
        .query_one("SELECT max(version) FROM mcp_tasks_schema", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(max, 1, "connect changed the schema");
}

pub(super) async fn a_worker_role_without_schema_rights_tracks_tasks(pg: Pg) {
    let url = pg.database().await;
    let role = role(&pg, &url).await;
    let worker_url = as_user(&url, &role);
    // Before the migration, a worker is told to migrate, not refused a
    // CREATE it should never have tried.
    let e = PostgresStore::connect(&worker_url).await.unwrap_err();
    assert!(e.is_schema_too_old(), "{e}");
    // Nor may the worker migrate: it has no right to change the schema.
    let e = PostgresStore::migrate(&worker_url).await.unwrap_err();
    assert!(e.to_string().contains("permission denied"), "{e}");

    PostgresStore::builder(&url)
        .grant_to(role.as_str())
        .migrate()
        .await
        .expect("the owner migrates");
    let store = PostgresStore::builder(&worker_url)
        .worker_clock()
        .connect()
        .await
        .expect("the worker connects");
    mcp_tasks::store::contract(&store).await;
    // Rows yes, schema no.
    let raw = postgres::connect(&worker_url).await;
    let e = raw
        .batch_execute("CREATE TABLE mcp_tasks_extra (id INT)")
        .await
        .unwrap_err();
    assert_eq!(
        e.code(),
        Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
        "{e:?}"
    );
    let store = PostgresStore::connect(&worker_url).await.unwrap();
    tracks_to_the_end(store, 5).await;
}

pub(super) async fn the_tables_live_in_the_schema_named(pg: Pg) {
    let url = pg.database().await;
    let e = PostgresStore::builder(&url)
        .schema("Tasks; DROP TABLE x")
        .connect()
        .await
        .unwrap_err();
    assert!(e.to_string().contains("identifier"), "{e}");
    PostgresStore::builder(&url)
        .schema("tasks")
        .migrate()
        .await
        .unwrap();
    let raw = postgres::connect(&url).await;
    let schemas: Vec<String> = raw
        .query(
            "SELECT schemaname FROM pg_tables WHERE tablename LIKE 'mcp_tasks_%'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        !schemas.is_empty() && schemas.iter().all(|s| s == "tasks"),
        "{schemas:?}"
    );
    // The default schema has no tables: a store there is told to migrate.
    let e = PostgresStore::connect(&url).await.unwrap_err();
    assert!(e.is_schema_too_old(), "{e}");
    let store = PostgresStore::builder(&url)
        .schema("tasks")
        .connect()
        .await
        .unwrap();
    tracks_to_the_end(store, 3).await;
}

/// `n` tasks on a scripted server, tracked by one worker on `store` until
/// each is delivered once.
async fn tracks_to_the_end(store: PostgresStore, n: usize) {
    let got = Tracked::start(store, n, Duration::from_millis(100), None)
        .await
        .until_delivered(n)
        .await;
    assert_eq!(got.len(), n, "each task delivered once: {got:?}");
    assert!(got.iter().all(|(_, completed)| *completed), "{got:?}");
}

/// The store's connection string for the test cluster over loopback TCP
/// to `host`, with `params`; `None` (the test skips) on a borrowed server.
fn tcp(pg: &Pg, url: &str, host: &str, params: &str) -> Option<String> {
    let Some(tls) = pg.tls() else {
        println!("skipped: TLS needs the test's own cluster (DATABASE_URL is set)");
        return None;
    };
    Some(format!(
        "host={host} port={} user=postgres dbname={} application_name=tls_test {params}",
        tls.port,
        dbname(url)
    ))
}

/// Whether the store's session on the test cluster is encrypted.
async fn encrypted(pg: &Pg) -> bool {
    pg.admin()
        .await
        .query_one(
            "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = 'tls_test'",
            &[],
        )
        .await
        .unwrap()
        .get::<_, Option<bool>>(0)
        .expect("a session of the store")
}

pub(super) async fn tls_follows_sslmode(pg: Pg) {
    let url = pg.database().await;
    PostgresStore::migrate(&url).await.unwrap();
    let Some(tls) = pg.tls().cloned() else {
        println!("skipped: TLS needs the test's own cluster (DATABASE_URL is set)");
        return;
    };
    let ca = tls.ca.display().to_string();
    let other = tls.other_ca.display().to_string();

    // Each mode that connects, and whether the session is encrypted.
    for (host, params, tls_on) in [
        ("127.0.0.1", "sslmode=disable".to_owned(), false),
        ("127.0.0.1", "sslmode=prefer".to_owned(), true),
        ("127.0.0.1", "sslmode=require".to_owned(), true),
        (
            "127.0.0.1",
            format!("sslmode=verify-ca sslrootcert={ca}"),
            true,
        ),
        (
            "localhost",
            format!("sslmode=verify-full sslrootcert={ca}"),
            true,
        ),
    ] {
        let conn = tcp(&pg, &url, host, &params).unwrap();
        let store = PostgresStore::connect(&conn)
            .await
            .unwrap_or_else(|e| panic!("{params}: {e}"));
        let id = store.insert(task(1, t(0))).await.unwrap();
        assert!(store.get(id).await.unwrap().is_some());
        assert_eq!(encrypted(&pg).await, tls_on, "{params}");
        drop(store);
        // Wait for the session to end before the next mode looks.
        while pg
            .admin()
            .await
            .query_opt(
                "SELECT 1 FROM pg_stat_activity WHERE application_name = 'tls_test'",
                &[],
            )
            .await
            .unwrap()
            .is_some()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    // Refused, with the cause in the message, and not as an outage.
    for (host, params, cause) in [
        (
            "127.0.0.1",
            format!("sslmode=verify-full sslrootcert={ca}"),
            "not valid for name",
        ),
        (
            "localhost",
            format!("sslmode=verify-full sslrootcert={other}"),
            "UnknownIssuer",
        ),
        (
            "127.0.0.1",
            format!("sslmode=verify-ca sslrootcert={other}"),
            "UnknownIssuer",
        ),
    ] {
        let conn = tcp(&pg, &url, host, &params).unwrap();
        let e = PostgresStore::connect(&conn).await.unwrap_err();
        let text = e.to_string();
        assert!(!e.is_unavailable(), "{params}: {text}");
        assert!(
            text.contains("TLS") && text.contains(cause),
            "{params}: {text}"
        );
    }
    let conn = tcp(
        &pg,
        &url,
        "localhost",
        "sslmode=verify-full sslrootcert=/nowhere.pem",
    )
    .unwrap();
    let e = PostgresStore::connect(&conn).await.unwrap_err();
    assert!(e.to_string().contains("/nowhere.pem"), "{e}");
}

/// A loopback listener that accepts connections and never says a word.
async fn silent_peer() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            if held.len() > 16 {
                break;
            }
        }
        std::future::pending::<()>().await;
    });
    (port, task)
}

pub(super) async fn a_peer_that_never_answers_is_unavailable_within_the_bound(_: Pg) {
    let (port, peer) = silent_peer().await;
    for mode in ["disable", "prefer"] {
        let url =
            format!("host=127.0.0.1 port={port} user=u dbname=d connect_timeout=1 sslmode={mode}");
        let e = PostgresStore::connect(&url).await.unwrap_err();
        assert!(e.is_unavailable(), "{mode}: {e}");
        assert!(e.to_string().contains("1000 ms"), "names its bound: {e}");
        let e = PostgresStore::migrate(&url).await.unwrap_err();
        assert!(e.is_unavailable(), "{mode}: {e}");
    }
    peer.abort();
}

/// A loopback proxy to the test cluster that can stop passing bytes on
/// (a wedged pooler), and start again.
async fn wedge(to: u16) -> (u16, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let stuck = Arc::new(AtomicBool::new(false));
    let flag = stuck.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(("127.0.0.1", to)).await else {
                return;
            };
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            for (mut from, mut into) in [(cr, sw), (sr, cw)].map(|(r, w)| (r, w)) {
                let stuck = flag.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0; 8192];
                    loop {
                        let n = match from.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        while stuck.load(Ordering::Relaxed) {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                        if into.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        }
    });
    (port, stuck)
}

pub(super) async fn a_statement_without_an_answer_is_unavailable_then_comes_back(pg: Pg) {
    let url = pg.database().await;
    PostgresStore::migrate(&url).await.unwrap();
    let Some(tls) = pg.tls().cloned() else {
        println!("skipped: needs the test's own cluster (DATABASE_URL is set)");
        return;
    };
    let (port, stuck) = wedge(tls.port).await;
    let conn = format!(
        "host=127.0.0.1 port={port} user=postgres dbname={} sslmode=disable connect_timeout=2",
        dbname(&url)
    );
    let store = PostgresStore::builder(&conn)
        .statement_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let id = store.insert(task(1, t(0))).await.unwrap();
    stuck.store(true, Ordering::Relaxed);
    let e = store.get(id).await.unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    assert!(e.to_string().contains("300 ms"), "names its bound: {e}");
    // Still wedged: connecting again is bounded too.
    let e = store.get(id).await.unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    stuck.store(false, Ordering::Relaxed);
    assert!(store.get(id).await.unwrap().is_some(), "connected again");
}

/// The database's clock, in milliseconds.
async fn db_clock(url: &str) -> i64 {
    postgres::connect(url)
        .await
        .query_one(
            "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

fn ms_since_epoch(t: SystemTime) -> i64 {
    i64::try_from(
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

pub(super) async fn a_worker_whose_clock_runs_ahead_takes_no_held_record(pg: Pg) {
    let url = pg.database().await;
    PostgresStore::migrate(&url).await.unwrap();
    let honest = PostgresStore::connect(&url).await.unwrap();
    let fast = PostgresStore::connect(&url).await.unwrap();
    let ahead = Duration::from_secs(240);
    let lease = Duration::from_secs(30);
    let now = SystemTime::now;
    let held = honest
        .insert(task(1, now() - Duration::from_secs(1)))
        .await
        .unwrap();
    let claim_at = |worker, at| Claim {
        worker,
        limit: 10,
        now: at,
        lease,
        record: None,
    };
    let got = honest.claim(claim_at("honest", now())).await.unwrap();
    assert_eq!(ids(&got), [held]);
    // Four minutes ahead, a 30 s lease looks long gone: the database
    // says it is not.
    let got = fast.claim(claim_at("fast", now() + ahead)).await.unwrap();
    assert!(ids(&got).is_empty(), "took a held record: {:?}", ids(&got));

    // A record the honest worker gave up until a minute from now is not
    // due, whatever the fast worker's clock says.
    let fence = honest.get(held).await.unwrap().unwrap().fence().unwrap();
    let progress = step(TaskStatus::Working, now() + Duration::from_secs(60));
    honest.save(held, fence, progress.clone()).await.unwrap();
    let got = fast.claim(claim_at("fast", now() + ahead)).await.unwrap();
    assert!(ids(&got).is_empty(), "took a record not yet due");

    // The fast worker's own due times land on the database's clock: a
    // minute on its clock is a minute on the database's.
    let mine = fast
        .insert(task(2, now() + ahead - Duration::from_secs(1)))
        .await
        .unwrap();
    let got = fast.claim(claim_at("fast", now() + ahead)).await.unwrap();
    assert_eq!(ids(&got), [mine], "its own due record");
    let fence = got[0].as_ref().unwrap().fence().unwrap();
    let due = now() + ahead + Duration::from_secs(60);
    fast.save(mine, fence, StepReport { due, ..progress })
        .await
        .unwrap();
    let raw: i64 = postgres::connect(&url)
        .await
        .query_one("SELECT due FROM mcp_tasks_tasks WHERE id = $1", &[&mine.0])
        .await
        .unwrap()
        .get(0);
    let clock = db_clock(&url).await;
    assert!(
        (clock + 50_000..clock + 61_000).contains(&raw),
        "due {} ms from the database's now, not a minute",
        raw - clock
    );
    // And the worker reads it back on its own clock.
    let back = fast.get(mine).await.unwrap().unwrap().due;
    let off = ms_since_epoch(back) - ms_since_epoch(due);
    assert!(off.abs() < 5_000, "read back {off} ms off");
}

pub(super) async fn a_key_is_reserved_once_by_workers_racing(pg: Pg) {
    let (_, url) = store(&pg).await;
    let mut racing = tokio::task::JoinSet::new();
    for w in 0..8 {
        let url = url.clone();
        racing.spawn(async move {
            let store = PostgresStore::connect(&url).await.unwrap();
            let reserved = NewTask {
                reference: mcp_tasks::TaskRef::new(TaskId::new(String::new()), None),
                key: Some("order-17".into()),
                unique_key: true,
                ..task(w, SystemTime::now())
            };
            let until = SystemTime::now() + Duration::from_secs(30);
            store
                .reserve(reserved, &format!("w{w}"), until)
                .await
                .unwrap()
        });
    }
    let mut got = Vec::new();
    while let Some(r) = racing.join_next().await {
        got.push(r.unwrap());
    }
    let reserved: Vec<RecordId> = got
        .iter()
        .filter_map(|r| match r {
            Reservation::Reserved { id, .. } => Some(*id),
            Reservation::Taken(_) => None,
        })
        .collect();
    assert_eq!(reserved.len(), 1, "{got:?}");
    assert!(
        got.iter().all(
            |r| matches!(r, Reservation::Taken(id) if *id == reserved[0])
                || matches!(r, Reservation::Reserved { .. })
        ),
        "{got:?}"
    );
}
