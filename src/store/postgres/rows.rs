//! A row read back as a record.

use super::*;

/// Column `name` of `row`, or a corrupt record.
pub(super) fn column<'a, T: FromSql<'a>>(row: &'a Row, id: RecordId, name: &str) -> StoreResult<T> {
    row.try_get(name)
        .map_err(|e| StoreError::corrupt(Some(id), format!("its column {name} is not valid: {e}")))
}

/// A record from its row, strictly: a value the code would not have
/// written is a corrupt record. Its times move from the database's clock
/// to the workers' by `skew` (the database's minus the workers').
pub(super) fn decode(row: &Row, skew: i64) -> StoreResult<TaskRecord> {
    let time = |ms: i64| row::time(ms.saturating_sub(skew));
    let id = RecordId(
        row.try_get("id")
            .map_err(|e| StoreError::corrupt(None, format!("an unreadable id: {e}")))?,
    );
    let lease = match (
        column::<Option<String>>(row, id, "lease_owner")?,
        column::<Option<i64>>(row, id, "lease_until")?,
        column::<Option<i64>>(row, id, "fence")?,
    ) {
        (Some(owner), Some(until), Some(fence)) => Some(Lease {
            owner,
            until: time(until),
            fence: Fence(fence),
        }),
        (None, None, None) => None,
        _ => return Err(StoreError::corrupt(Some(id), "a partial lease")),
    };
    let failed_reads = column::<i32>(row, id, "failed_reads")?;
    Ok(TaskRecord {
        id,
        reference: row::reference(
            id,
            column(row, id, "task_id")?,
            column(row, id, "server")?,
            column(row, id, "protocol_version")?,
        )?,
        tool: column(row, id, "tool")?,
        key: column(row, id, "key")?,
        scope: column(row, id, "scope")?,
        created: time(column(row, id, "created")?),
        updated: time(column(row, id, "updated")?),
        status: row::status(id, column(row, id, "status")?)?,
        status_message: column(row, id, "status_message")?,
        poll_interval_ms: row::interval(id, column(row, id, "poll_interval_ms")?)?,
        due: time(column(row, id, "due")?),
        failed_reads: row::count(id, "failed_reads", i64::from(failed_reads))?,
        lease,
        questions: row::questions(id, column(row, id, "questions")?)?,
        answers: row::answers(id, column(row, id, "answers")?)?,
        schedule: row::schedule(id, column(row, id, "schedule")?)?,
        cancel_requested: column(row, id, "cancel_requested")?,
        ending: row::ending(id, column(row, id, "ending")?)?,
        delivered: column(row, id, "delivered")?,
        unique_key: column(row, id, "unique_key")?,
        history: {
            let mut h = row::history(
                id,
                column(row, id, "history")?,
                column(row, id, "history_dropped")?,
            )?;
            for e in &mut h.entries {
                e.at = time(row::millis(e.at));
            }
            h
        },
    })
}

/// A count or limit as a column value (saturating).
pub(super) fn big(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
