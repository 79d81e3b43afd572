//! The statements a store runs, prepared on each connection.

use super::*;

/// A listing's `SELECT` and the tests of its filter: scope $1, state $2
/// (0 open, 1 undelivered, 2 delivered), limit $3, key $4, tool $5,
/// before $6, server $7, status $8.
macro_rules! list_where {
    () => {
        concat!(
            "SELECT ",
            columns!(),
            " FROM mcp_tasks_tasks AS t WHERE ($1::text IS NULL OR t.scope = $1) \
             AND ($2::int4 IS NULL OR CASE $2 \
             WHEN 0 THEN t.ending IS NULL \
             WHEN 1 THEN t.ending IS NOT NULL AND NOT t.delivered \
             ELSE t.ending IS NOT NULL AND t.delivered END) \
             AND ($4::text IS NULL OR t.key = $4) \
             AND ($5::text IS NULL OR t.tool = $5) \
             AND ($6::int8 IS NULL OR t.id < $6) \
             AND ($7::text IS NULL OR t.server = $7) \
             AND ($8::text IS NULL OR t.status = $8)"
        )
    };
}

/// The statements a store runs, prepared on each connection.
pub(super) struct Statements {
    pub(super) insert: Statement,
    pub(super) reserve: Statement,
    pub(super) named: Statement,
    pub(super) start: Statement,
    pub(super) get: Statement,
    pub(super) claim_due: Statement,
    pub(super) claim_one: Statement,
    pub(super) renew: Statement,
    pub(super) release: Statement,
    pub(super) release_worker: Statement,
    pub(super) read_book: Statement,
    pub(super) write_book: Statement,
    pub(super) save: Statement,
    pub(super) save_all: Statement,
    pub(super) finish: Statement,
    pub(super) acknowledge: Statement,
    pub(super) request_cancel: Statement,
    pub(super) remove: Statement,
    pub(super) forget: Statement,
    pub(super) holder: Statement,
    pub(super) prune: Statement,
    pub(super) exists: Statement,
    pub(super) list: Statement,
    pub(super) list_newest: Statement,
    pub(super) list_asking: Statement,
    pub(super) counts: Statement,
    pub(super) next_due: Statement,
}

impl Statements {
    pub(super) async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            // A unique key already taken inserts nothing, and returns no id.
            insert: client
                .prepare(
                    "INSERT INTO mcp_tasks_tasks (task_id, server, protocol_version, tool, key, \
                     scope, created, updated, status, status_message, poll_interval_ms, due, ending, \
                     schedule, unique_key, history) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12, $13, $14, \
                     $15::text::jsonb) \
                     ON CONFLICT (scope, key) WHERE unique_key AND key IS NOT NULL DO NOTHING \
                     RETURNING id",
                )
                .await?,
            // The same, held by $16 until $17 under a new fence.
            reserve: client
                .prepare(
                    "INSERT INTO mcp_tasks_tasks (task_id, server, protocol_version, tool, key, \
                     scope, created, updated, status, status_message, poll_interval_ms, due, ending, \
                     schedule, unique_key, history, lease_owner, lease_until, fence) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12, $13, $14, \
                     $15::text::jsonb, $16, $17, nextval('mcp_tasks_fence')) \
                     ON CONFLICT (scope, key) WHERE unique_key AND key IS NOT NULL DO NOTHING \
                     RETURNING id, fence",
                )
                .await?,
            named: client
                .prepare(
                    "SELECT id FROM mcp_tasks_tasks \
                     WHERE scope = $1 AND key = $2 AND unique_key",
                )
                .await?,
            start: client
                .prepare(
                    "UPDATE mcp_tasks_tasks SET task_id = $3, server = $4, protocol_version = $5, \
                     schedule = $6 WHERE id = $1 AND fence = $2 AND task_id = ''",
                )
                .await?,
            get: client
                .prepare(concat!(
                    "SELECT ",
                    columns!(),
                    " FROM mcp_tasks_tasks AS t WHERE t.id = $1"
                ))
                .await?,
            claim_due: client.prepare(&claim_due("$4")).await?,
            claim_one: client
                .prepare(&format!(
                    concat!(
                        "WITH clock AS MATERIALIZED (SELECT COALESCE($1::int8, ",
                        db_now!(),
                        ") AS now), \
                         picked AS MATERIALIZED (SELECT id, lease_owner, lease_until \
                         FROM mcp_tasks_tasks \
                         WHERE id = $4 AND (lease_until IS NULL OR lease_until <= (SELECT now FROM clock)) \
                         AND (ending IS NULL OR NOT delivered) FOR UPDATE SKIP LOCKED), \
                         claimed AS (UPDATE mcp_tasks_tasks AS t SET lease_owner = $2, \
                         lease_until = (SELECT now FROM clock) + $3::int8, \
                         fence = nextval('mcp_tasks_fence'), nudged = FALSE, {takeover} \
                         FROM picked WHERE t.id = picked.id RETURNING ",
                        record_columns!(),
                        ", {taken} AS history, 0::int8 AS history_dropped\
                         ) SELECT c.*, clock.now AS clock FROM clock LEFT JOIN claimed AS c ON TRUE"
                    ),
                    takeover = takeover(),
                    taken = taken()
                ))
                .await?,
            renew: client
                .prepare("UPDATE mcp_tasks_tasks SET lease_until = $3 WHERE id = $1 AND fence = $2")
                .await?,
            release: client
                .prepare("UPDATE mcp_tasks_tasks SET lease_until = 0 WHERE id = $1 AND fence = $2")
                .await?,
            // $2: the worker's clock, or NULL for the database's.
            release_worker: client
                .prepare(concat!(
                    "UPDATE mcp_tasks_tasks SET lease_until = 0 WHERE lease_owner = $1 \
                     AND lease_until > COALESCE($2::int8, ",
                    db_now!(),
                    ") AND (ending IS NULL OR NOT delivered)"
                ))
                .await?,
            read_book: client
                .prepare(
                    "SELECT questions, answers, revision, fence, lease_owner IS NOT NULL AS held, \
                     ending IS NOT NULL AS ended FROM mcp_tasks_tasks WHERE id = $1",
                )
                .await?,
            // The only statement that writes questions and answers: it
            // changes the row only if no other write came since the read
            // of revision $2 (and, for the lease's holder $8, only while
            // the lease is still its own). $7: make the record due at $6,
            // for an answer from elsewhere.
            // $9: the history entries the change adds, a JSON array.
            write_book: client
                .prepare(&format!(
                    "UPDATE mcp_tasks_tasks SET questions = $3, answers = $4, \
                     asking_since = $5, revision = revision + 1, updated = $6, \
                     due = CASE WHEN $7 THEN LEAST(due, $6) ELSE due END, \
                     nudged = nudged OR $7, {} \
                     WHERE id = $1 AND revision = $2 AND ($8::int8 IS NULL OR fence = $8)",
                    append_history("$9::text <> '[]'", "$9::text::jsonb")
                ))
                .await?,
            // An answer or a cancel from elsewhere since the claim: due
            // now, not at the step's due time.
            // A new status or message goes into the history in the same
            // statement: a save that changes neither appends nothing.
            save: client
                .prepare(&format!(
                    "UPDATE mcp_tasks_tasks SET status = $3, status_message = $4, \
                     poll_interval_ms = $5, failed_reads = $6, \
                     due = CASE WHEN nudged THEN LEAST($7::int8, $8::int8) ELSE $7 END, \
                     updated = $8, lease_until = 0, {} \
                     WHERE id = $1 AND fence = $2",
                    append_history(
                        "status IS DISTINCT FROM $3::text \
                         OR status_message IS DISTINCT FROM $4::text",
                        &format!(
                            "jsonb_build_array(jsonb_build_object('at', $8::int8, \
                             'event', 'status', 'status', $3::text, 'message', {}))",
                            cut_text("$4::text")
                        )
                    )
                ))
                .await?,
            // Several saves, as `save` writes one, in one statement: an
            // array per column, a row per save ($1 ids, $2 fences, $3
            // statuses, $4 messages, $5 intervals, $6 failed reads, $7 due
            // times; $8 now). Returns the ids written.
            save_all: client
                .prepare(&format!(
                    "UPDATE mcp_tasks_tasks SET status = s.s_status, \
                     status_message = s.s_message, poll_interval_ms = s.s_interval, \
                     failed_reads = s.s_failed, \
                     due = CASE WHEN nudged THEN LEAST(s.s_due, $8::int8) ELSE s.s_due END, \
                     updated = $8, lease_until = 0, {} \
                     FROM unnest($1::int8[], $2::int8[], $3::text[], $4::text[], $5::int8[], \
                     $6::int4[], $7::int8[]) \
                     AS s(s_id, s_fence, s_status, s_message, s_interval, s_failed, s_due) \
                     WHERE id = s.s_id AND fence = s.s_fence RETURNING id",
                    append_history(
                        "status IS DISTINCT FROM s.s_status \
                         OR status_message IS DISTINCT FROM s.s_message",
                        &format!(
                            "jsonb_build_array(jsonb_build_object('at', $8::int8, \
                             'event', 'status', 'status', s.s_status, 'message', {}))",
                            cut_text("s.s_message")
                        )
                    )
                ))
                .await?,
            // $6: the ending's name, for the history.
            finish: client
                .prepare(&format!(
                    "UPDATE mcp_tasks_tasks SET ending = $3, updated = $4, status = $5, {} \
                     WHERE id = $1 AND fence = $2",
                    append_history(
                        "ending IS DISTINCT FROM $3::text",
                        "jsonb_build_array(jsonb_build_object('at', $4::int8, \
                         'event', 'ended', 'ending', $6::text))"
                    )
                ))
                .await?,
            acknowledge: client
                .prepare(&format!(
                    "UPDATE mcp_tasks_tasks SET delivered = TRUE, updated = $3, lease_until = 0, \
                     {} WHERE id = $1 AND fence = $2",
                    append_history(
                        "NOT delivered",
                        "jsonb_build_array(jsonb_build_object('at', $3::int8, \
                         'event', 'delivered'))"
                    )
                ))
                .await?,
            request_cancel: client
                .prepare(&format!(
                    "UPDATE mcp_tasks_tasks SET cancel_requested = TRUE, due = LEAST(due, $2), \
                     nudged = TRUE, updated = $2, {} WHERE id = $1 AND ending IS NULL",
                    append_history(
                        "NOT cancel_requested",
                        "jsonb_build_array(jsonb_build_object('at', $2::int8, \
                         'event', 'cancel_requested'))"
                    )
                ))
                .await?,
            remove: client
                .prepare("DELETE FROM mcp_tasks_tasks WHERE id = $1 AND fence = $2")
                .await?,
            // $2: the worker's clock, or NULL for the database's.
            forget: client
                .prepare(concat!(
                    "DELETE FROM mcp_tasks_tasks WHERE id = $1 AND (lease_owner IS NULL \
                     OR lease_until IS NULL OR lease_until <= COALESCE($2::int8, ",
                    db_now!(),
                    ") OR (ending IS NOT NULL AND delivered))"
                ))
                .await?,
            holder: client
                .prepare(concat!(
                    "SELECT lease_owner, lease_until, lease_owner IS NOT NULL \
                     AND lease_until > COALESCE($2::int8, ",
                    db_now!(),
                    ") AND NOT (ending IS NOT NULL AND delivered) AS held \
                     FROM mcp_tasks_tasks WHERE id = $1"
                ))
                .await?,
            // One ordered walk of the delivered records' index, at most $2
            // rows, skipping rows another transaction holds: one short
            // statement per batch. The ids come as an array, so that the
            // rows are removed through the primary key: with `id IN
            // (SELECT …)` the planner may join against a scan of the whole
            // table, a batch then costing as much as the table is long.
            prune: client
                .prepare(
                    "DELETE FROM mcp_tasks_tasks WHERE id = ANY(ARRAY(SELECT id FROM mcp_tasks_tasks \
                     WHERE ending IS NOT NULL AND delivered AND created < $1 AND updated < $1 \
                     ORDER BY created, id LIMIT $2 FOR UPDATE SKIP LOCKED))",
                )
                .await?,
            exists: client
                .prepare("SELECT 1 FROM mcp_tasks_tasks WHERE id = $1")
                .await?,
            // One statement per order, each an `ORDER BY` an index can
            // follow (the primary key either way, or the asking index), so
            // that a page stops after its limit; one order chosen by a
            // parameter sorted every match first (16 ms at 10,000 records).
            list: client
                .prepare(concat!(list_where!(), " ORDER BY t.id LIMIT $3"))
                .await?,
            list_newest: client
                .prepare(concat!(list_where!(), " ORDER BY t.id DESC LIMIT $3"))
                .await?,
            list_asking: client
                .prepare(concat!(
                    list_where!(),
                    " AND t.asking_since IS NOT NULL AND t.ending IS NULL \
                     ORDER BY t.asking_since, t.id LIMIT $3"
                ))
                .await?,
            // Each figure from its partial index where one fits.
            counts: client
                .prepare(
                    "SELECT (SELECT count(*) FROM mcp_tasks_tasks WHERE ending IS NULL), \
                     (SELECT count(*) FROM mcp_tasks_tasks \
                      WHERE asking_since IS NOT NULL AND ending IS NULL), \
                     (SELECT count(*) FROM mcp_tasks_tasks \
                      WHERE ending IS NOT NULL AND NOT delivered), \
                     (SELECT count(*) FROM mcp_tasks_tasks WHERE ending IS NOT NULL AND delivered), \
                     (SELECT count(*) FROM mcp_tasks_tasks WHERE ending IS NULL AND due < $1), \
                     (SELECT min(asking_since) FROM mcp_tasks_tasks \
                      WHERE asking_since IS NOT NULL AND ending IS NULL)",
                )
                .await?,
            next_due: client
                .prepare(
                    "SELECT min(GREATEST(COALESCE(lease_until, 0), \
                     CASE WHEN ending IS NULL THEN due ELSE 0 END)) \
                     FROM mcp_tasks_tasks WHERE ending IS NULL OR NOT delivered",
                )
                .await?,
        })
    }
}

/// The claim of due records, at most `limit` of them: `$4` (a parameter),
/// or a number written into the statement.
///
/// $1: the worker's clock, or NULL for the database's; $3: the lease in
/// milliseconds. The clock comes back with each row, so that the store
/// measures how far the two clocks are apart.
///
/// With the number written in, Postgres plans the statement once per
/// connection (a generic plan after five executions); with `$4`, knowing
/// the limit makes every execution's own plan look cheaper, so it plans
/// the statement again on every claim (about a quarter of the database's
/// CPU per read, measured with four workers).
pub(super) fn claim_due(limit: &str) -> String {
    concat!(
        // One ordered walk per partial index (open tasks by due time,
        // undelivered endings), merged: a single condition with OR read
        // and sorted every due row (110 ms for a claim of 64 among
        // 100,000 due records).
        "WITH clock AS MATERIALIZED (SELECT COALESCE($1::int8, ",
        db_now!(),
        ") AS now), \
         open AS MATERIALIZED (SELECT id, due, lease_owner, lease_until FROM mcp_tasks_tasks \
         WHERE ending IS NULL AND due <= (SELECT now FROM clock) \
         AND (lease_until IS NULL OR lease_until <= (SELECT now FROM clock)) \
         ORDER BY due, id LIMIT {limit} FOR UPDATE SKIP LOCKED), \
         ended AS MATERIALIZED (SELECT id, due, lease_owner, lease_until FROM mcp_tasks_tasks \
         WHERE ending IS NOT NULL AND NOT delivered \
         AND (lease_until IS NULL OR lease_until <= (SELECT now FROM clock)) \
         ORDER BY due, id LIMIT {limit} FOR UPDATE SKIP LOCKED), \
         picked AS (SELECT * FROM (SELECT * FROM open UNION ALL \
         SELECT * FROM ended) AS due_now ORDER BY due, id LIMIT {limit}), \
         claimed AS (UPDATE mcp_tasks_tasks AS t SET lease_owner = $2, \
         lease_until = (SELECT now FROM clock) + $3::int8, \
         fence = nextval('mcp_tasks_fence'), nudged = FALSE, {takeover} \
         FROM picked WHERE t.id = picked.id RETURNING ",
        record_columns!(),
        ", {taken} AS history, 0::int8 AS history_dropped",
        // One row at least, for the clock: no record, no id.
        ") SELECT c.*, clock.now AS clock FROM clock LEFT JOIN claimed AS c ON TRUE \
         ORDER BY c.due, c.id"
    )
    .replace("{limit}", limit)
    .replace("{takeover}", &takeover())
    .replace("{taken}", &taken())
}

/// A claimed record whose last lease ran out rather than being given
/// back (a lease's end of 0): read from `picked`, the row as it was
/// before the claim.
const TAKEN_OVER: &str = "picked.lease_owner IS NOT NULL AND picked.lease_until > 0";

/// The history entry of a takeover, as a one-entry JSON array: from the
/// worker whose lease ran out, to the claiming one ($2).
const TAKEOVER_ENTRY: &str = "jsonb_build_array(jsonb_build_object('at', (SELECT now FROM clock), \
     'event', 'taken_over', 'from', picked.lease_owner, 'to', $2::text))";

/// The `SET` clauses of a claim that note a takeover in the history.
fn takeover() -> String {
    append_history(TAKEN_OVER, TAKEOVER_ENTRY)
}

/// What a claim returns of a record's history: only the takeover it
/// added, if any. The rest stays in the database; a worker needs none of
/// it, and each record's history would be sent and decoded on every
/// claim.
fn taken() -> String {
    format!("(CASE WHEN {TAKEN_OVER} THEN {TAKEOVER_ENTRY} ELSE '[]'::jsonb END)::text")
}
