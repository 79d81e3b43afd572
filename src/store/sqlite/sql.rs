//! The SQLite store's statements and rows: the columns of a record, how a
//! row is read back (strictly), how errors map to [`StoreError`], and the
//! fenced writes every held record goes through.

use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

use rusqlite::types::FromSql;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, TransactionBehavior, params};

use super::super::history::{MAX_HISTORY, MAX_HISTORY_TEXT};
use super::super::row;
use super::super::{
    Answers, Event, Fence, History, HistoryEntry, Lease, Questions, RecordId, StoreError,
    StoreResult, TaskRecord,
};

/// How long a statement waits for another connection's write transaction
/// (`SqliteStore::BUSY_TIMEOUT`).
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The columns of a record but its history, in the order [`decode`]
/// reads them.
macro_rules! record_columns {
    () => {
        "id, task_id, server, protocol_version, tool, key, scope, \
         created_ms, updated_ms, status, status_message, poll_interval_ms, due_ms, failed_reads, \
         lease_owner, lease_until_ms, fence, answers, cancel_requested, ending, delivered, \
         questions, schedule, unique_key"
    };
}

/// The columns of a record, in the order [`decode`] reads them.
pub(super) const COLUMNS: &str = concat!(record_columns!(), ", history, history_dropped");

/// The columns of a claimed record: an empty history in place of its own,
/// which a claim does not bring (see [`LEASE`]).
const CLAIMED_COLUMNS: &str = concat!(record_columns!(), ", '[]', 0");

/// The error of a failed statement.
pub(super) fn sql(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => StoreError::full().with_source(e),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::unavailable(format!(
                "another connection held the database for over {:?}",
                BUSY_TIMEOUT
            ))
            .with_source(e)
        }
        Some(
            ErrorCode::CannotOpen
            | ErrorCode::SystemIoFailure
            | ErrorCode::PermissionDenied
            | ErrorCode::ReadOnly
            | ErrorCode::NoLargeFileSupport,
        ) => StoreError::unavailable("the database file cannot be read or written").with_source(e),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            StoreError::other("the file is damaged or not a SQLite database").with_source(e)
        }
        _ => StoreError::other("an SQLite statement failed").with_source(e),
    }
}

/// The error of a call whose blocking task never ran to the end (the
/// runtime is shutting down, or the statement panicked).
pub(super) fn pool_stopped(e: tokio::task::JoinError) -> StoreError {
    StoreError::unavailable("the blocking pool did not run the statement").with_source(e)
}

/// Column `index` of a row of record `id`; a value of the wrong type is a
/// corrupt record.
pub(super) fn column<T: FromSql>(row: &Row<'_>, index: usize, id: RecordId) -> StoreResult<T> {
    row.get(index).map_err(|e| {
        let name = COLUMNS.split(", ").nth(index).unwrap_or("?").trim();
        StoreError::corrupt(Some(id), format!("column {name} holds a bad value")).with_source(e)
    })
}

/// A record from a row of [`COLUMNS`], strictly.
pub(super) fn decode(row: &Row<'_>) -> StoreResult<TaskRecord> {
    let id =
        RecordId(row.get(0).map_err(|e| {
            StoreError::corrupt(None, "a record without an integer id").with_source(e)
        })?);
    let reference = row::reference(
        id,
        column(row, 1, id)?,
        column(row, 2, id)?,
        column(row, 3, id)?,
    )?;
    // The lease's time and fence are read whoever holds the record: a bad
    // value there keeps every claim from it, held or not.
    let until = row::time(column(row, 15, id)?);
    let fence = Fence(column(row, 16, id)?);
    let lease = column::<Option<String>>(row, 14, id)?.map(|owner| Lease {
        owner,
        until,
        fence,
    });
    Ok(TaskRecord {
        id,
        reference,
        tool: column(row, 4, id)?,
        key: column(row, 5, id)?,
        scope: column(row, 6, id)?,
        created: row::time(column(row, 7, id)?),
        updated: row::time(column(row, 8, id)?),
        status: row::status(id, &column::<String>(row, 9, id)?)?,
        status_message: column(row, 10, id)?,
        poll_interval_ms: row::interval(id, column(row, 11, id)?)?,
        due: row::time(column(row, 12, id)?),
        failed_reads: row::count(id, "failed_reads", column(row, 13, id)?)?,
        lease,
        answers: row::answers(id, &column::<String>(row, 17, id)?)?,
        cancel_requested: column(row, 18, id)?,
        ending: row::ending(id, column::<Option<String>>(row, 19, id)?.as_deref())?,
        delivered: column(row, 20, id)?,
        questions: row::questions(id, &column::<String>(row, 21, id)?)?,
        schedule: row::schedule(id, &column::<String>(row, 22, id)?)?,
        unique_key: column(row, 23, id)?,
        history: row::history(id, &column::<String>(row, 24, id)?, column(row, 25, id)?)?,
    })
}

/// The `SET` clauses that append one entry to a record's history when
/// `cond` holds, in the statement that makes the change: `entry` is an
/// SQL expression giving the entry's JSON object. The oldest entry goes
/// (and is counted) past [`MAX_HISTORY`]. A history that is not valid
/// JSON is left as it is, for the reads to report, and never fails the
/// statement (a claim of many records among them).
pub(super) fn append_history(cond: &str, entry: &str) -> String {
    format!(
        "history = CASE WHEN ({cond}) AND json_valid(history) THEN json_insert(\
         CASE WHEN json_array_length(history) >= {MAX_HISTORY} \
         THEN json_remove(history, '$[0]') ELSE history END, '$[#]', {entry}) \
         ELSE history END, \
         history_dropped = CASE WHEN ({cond}) AND json_valid(history) \
         AND json_array_length(history) >= {MAX_HISTORY} THEN history_dropped + 1 \
         ELSE history_dropped END"
    )
}

/// Server text as a history entry keeps it: at most
/// [`MAX_HISTORY_TEXT`] characters of the SQL expression `text`.
pub(super) fn cut_text(text: &str) -> String {
    format!("substr({text}, 1, {MAX_HISTORY_TEXT})")
}

/// Why a write under `fence` changed no row: a second look, taken only
/// when the write failed.
pub(super) fn refused(conn: &Connection, id: RecordId) -> StoreError {
    let exists = conn
        .query_row("SELECT 1 FROM tasks WHERE id = ?1", [id.0], |_| Ok(()))
        .optional();
    match exists {
        Ok(Some(())) => StoreError::stale(id),
        Ok(None) => StoreError::not_found(id),
        Err(e) => sql(e),
    }
}

/// Runs `statement`, a write of record `id` under `fence` (parameters
/// `?1` and `?2`, then `rest`), and tells a refusal apart.
pub(super) fn write_held(
    conn: &Connection,
    statement: &str,
    id: RecordId,
    fence: Fence,
    rest: &[&dyn rusqlite::ToSql],
) -> StoreResult<()> {
    let mut params: Vec<&dyn rusqlite::ToSql> = vec![&id.0, &fence.0];
    params.extend_from_slice(rest);
    let changed = conn
        .prepare_cached(statement)
        .and_then(|mut s| s.execute(params.as_slice()))
        .map_err(sql)?;
    if changed == 0 {
        return Err(refused(conn, id));
    }
    Ok(())
}

/// The `WHERE` clause of a write under a lease: the record `?1`, claimed
/// last under the fence `?2`.
pub(super) const HELD: &str = "id = ?1 AND fence = ?2 AND lease_owner IS NOT NULL";

/// A record's questions and answers, read inside the caller's transaction.
pub(super) struct Book {
    pub(super) questions: Questions,
    pub(super) answers: Answers,
    /// Whether the task ended.
    pub(super) ended: bool,
    /// The record's history, for the entries a change of the book adds.
    pub(super) history: History,
}

impl Book {
    /// Adds history entries, written back with the book.
    pub(super) fn note(&mut self, entries: impl IntoIterator<Item = HistoryEntry>) {
        self.history.extend(entries);
    }
}

/// The questions and answers of record `id`; with `fence`, only while it
/// is held under it.
pub(super) fn read_book(
    conn: &Connection,
    id: RecordId,
    fence: Option<Fence>,
) -> StoreResult<Book> {
    type Found = (String, String, i64, bool, bool, String, i64);
    let found: Option<Found> = conn
        .prepare_cached(
            "SELECT questions, answers, fence, lease_owner IS NOT NULL, ending IS NOT NULL, \
             history, history_dropped FROM tasks WHERE id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([id.0], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })
            .optional()
        })
        .map_err(sql)?;
    match found {
        None => Err(StoreError::not_found(id)),
        Some((_, _, f, held, ..)) if fence.is_some_and(|fence| f != fence.0 || !held) => {
            Err(StoreError::stale(id))
        }
        Some((questions, answers, _, _, ended, history, dropped)) => Ok(Book {
            questions: row::questions(id, &questions)?,
            answers: row::answers(id, &answers)?,
            ended,
            history: row::history(id, &history, dropped)?,
        }),
    }
}

/// Writes a record's questions and answers back, with the oldest waiting
/// question, and `nudge`: make it due at `now` for the next claim.
pub(super) fn write_book(
    conn: &Connection,
    id: RecordId,
    book: &Book,
    now: i64,
    nudge: bool,
) -> StoreResult<()> {
    let since =
        super::super::questions::asking_since(&book.questions, &book.answers).map(row::millis);
    conn.prepare_cached(
        "UPDATE tasks SET questions = ?2, answers = ?3, asking_since_ms = ?4, updated_ms = ?5, \
         due_ms = CASE WHEN ?6 THEN min(due_ms, ?5) ELSE due_ms END, \
         nudged = CASE WHEN ?6 THEN 1 ELSE nudged END, history = ?7, history_dropped = ?8 \
         WHERE id = ?1",
    )
    .and_then(|mut s| {
        s.execute(rusqlite::params![
            id.0,
            super::super::questions::questions_json(&book.questions),
            row::answers_json(&book.answers),
            since,
            now,
            nudge,
            super::super::history::entries_json(&book.history.entries),
            i64::try_from(book.history.dropped).unwrap_or(i64::MAX),
        ])
    })
    .map_err(sql)?;
    Ok(())
}

/// Runs `f` in a write transaction, committed when it succeeds.
pub(super) fn immediate<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> StoreResult<T>,
) -> StoreResult<T> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let out = f(&tx)?;
    tx.commit().map_err(sql)?;
    Ok(out)
}

/// The records a claim without `record` takes: open and due, or ended and
/// undelivered, with no live lease (`?1`: now), oldest due first, at most
/// `?2`. Each half reads its own partial index.
pub(super) const CLAIMABLE: &str = "SELECT id FROM (
        SELECT id, due_ms FROM (
            SELECT id, due_ms FROM tasks
            WHERE ending IS NULL AND due_ms <= ?1 AND lease_until_ms <= ?1
            ORDER BY due_ms, id LIMIT ?2)
        UNION ALL
        SELECT id, due_ms FROM (
            SELECT id, due_ms FROM tasks
            WHERE ending IS NOT NULL AND delivered = 0 AND lease_until_ms <= ?1
            ORDER BY due_ms, id LIMIT ?2)
    ) ORDER BY due_ms, id LIMIT ?2";

/// The records `which` selects (parameters `?1`: now, `?2`: limit or
/// record), each with the worker whose lease ran out on it, when it did
/// rather than being given back (a lease's end of 0): [`LEASE`] takes
/// those over. Read first, in the same transaction, since `RETURNING`
/// sees only the new row.
pub(super) fn pick_sql(which: &str) -> String {
    format!(
        "SELECT id, CASE WHEN {TAKEN_OVER} THEN lease_owner END FROM tasks WHERE id IN ({which})"
    )
}

/// Leases the records picked (`?2`: their ids, a JSON array) to `?3`
/// until `?4`, under the next fence. A record taken over (`?1`: now) gets
/// an entry in its history saying from whom. The records come back
/// without their histories: a claim brings only what it added.
pub(super) static LEASE: LazyLock<String> = LazyLock::new(|| {
    let takeover = append_history(
        TAKEN_OVER,
        "json_object('at', ?1, 'event', 'taken_over', 'from', lease_owner, 'to', ?3)",
    );
    format!(
        "UPDATE tasks SET lease_owner = ?3, lease_until_ms = ?4, nudged = 0, \
         fence = (SELECT last + 1 FROM fences), {takeover} \
         WHERE id IN (SELECT value FROM json_each(?2)) RETURNING {CLAIMED_COLUMNS}"
    )
});

/// A leased record as it reads, with its order (due time, id).
pub(super) type Leased = ((i64, i64), StoreResult<TaskRecord>);

/// Picks the records `pick` selects (see [`pick_sql`]) and leases them
/// to `worker` until `until` (see [`LEASE`]).
pub(super) fn lease_picked(
    tx: &Connection,
    pick: &str,
    now: i64,
    selector: i64,
    worker: &str,
    until: i64,
) -> StoreResult<Vec<Leased>> {
    // Whom each picked record is taken from, if anyone.
    let mut from: HashMap<i64, Option<String>> = tx
        .prepare_cached(pick)
        .and_then(|mut s| {
            s.query_map(params![now, selector], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .map_err(sql)?;
    let mut out = Vec::with_capacity(from.len());
    if from.is_empty() {
        return Ok(out);
    }
    let ids: Vec<String> = from.keys().map(i64::to_string).collect();
    let ids = format!("[{}]", ids.join(","));
    let mut s = tx.prepare_cached(&LEASE).map_err(sql)?;
    let mut rows = s.query(params![now, ids, worker, until]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        let order = (
            r.get::<_, i64>("due_ms").unwrap_or(i64::MAX),
            r.get::<_, i64>("id").unwrap_or(i64::MAX),
        );
        let mut record = decode(r);
        if let Ok(claimed) = &mut record
            && let Some(Some(from)) = from.remove(&claimed.id.0)
        {
            let to = worker.to_owned();
            claimed
                .history
                .push(row::time(now), Event::TakenOver { from, to });
        }
        out.push((order, record));
    }
    Ok(out)
}

/// A record whose last lease ran out rather than being given back.
const TAKEN_OVER: &str = "lease_owner IS NOT NULL AND lease_until_ms > 0";

/// Finds the damaged rows a claim at `now` may take ([`misfiled!`]: free
/// or of unknown lease, not delivered), at most `limit` (or `record`
/// alone), leases them to `worker` until `until` under the next fence,
/// and gives each as the error that reports it, naming the bad column.
pub(super) fn lease_misfiled(
    conn: &Connection,
    now: i64,
    record: Option<RecordId>,
    limit: i64,
    worker: &str,
    until: i64,
) -> StoreResult<Vec<StoreError>> {
    const COLUMNS: [&str; 5] = [
        "due_ms",
        "lease_until_ms",
        "fence",
        "delivered",
        "lease_owner",
    ];
    let mut found = conn
        .prepare_cached(concat!(
            "SELECT id, typeof(due_ms), typeof(lease_until_ms), typeof(fence), \
             typeof(delivered), typeof(lease_owner) FROM tasks WHERE ",
            misfiled!(),
            " AND (ending IS NULL OR delivered IS NOT 1) \
             AND (typeof(lease_until_ms) <> 'integer' OR lease_until_ms <= ?1) \
             AND (?2 IS NULL OR id = ?2) ORDER BY id LIMIT ?3"
        ))
        .map_err(sql)?;
    let rows = found
        .query_map(params![now, record.map(|r| r.0), limit], |r| {
            let types: [String; 5] = [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?];
            Ok((r.get::<_, i64>(0)?, types))
        })
        .map_err(sql)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql)?;
    let mut lease = conn
        .prepare_cached(
            "UPDATE tasks SET lease_owner = ?2, lease_until_ms = ?3, nudged = 0, \
             fence = (SELECT last + 1 FROM fences) WHERE id = ?1",
        )
        .map_err(sql)?;
    let mut out = Vec::with_capacity(rows.len());
    for (id, types) in rows {
        lease.execute(params![id, worker, until]).map_err(sql)?;
        let bad: Vec<String> = COLUMNS
            .iter()
            .zip(&types)
            .filter(|(column, kind)| match **column {
                "lease_owner" => !matches!(kind.as_str(), "null" | "text"),
                _ => kind.as_str() != "integer",
            })
            .map(|(column, kind)| format!("column {column} holds a bad value (a {kind})"))
            .collect();
        out.push(StoreError::corrupt(Some(RecordId(id)), bad.join(", ")));
    }
    Ok(out)
}

/// The claim of one record, due or not (`?2`), when it is free at `?1` and
/// open or undelivered.
pub(super) const CLAIMABLE_ONE: &str = "SELECT id FROM tasks WHERE id = ?2 AND lease_until_ms <= ?1 \
    AND (ending IS NULL OR delivered = 0)";
