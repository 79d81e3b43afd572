//! How the stores write a record's values and read them back: times as
//! milliseconds since the Unix epoch, statuses by their wire names, the
//! answers and the ending as JSON. Reading is strict: a value the code
//! would not have written is a corrupt record, never a guess.

#![cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]

use std::collections::BTreeMap;

pub(crate) use super::epoch::{millis, time};
use super::{
    Answer, Ending, History, HistoryEntry, Questions, RecordId, Schedule, StoreError, StoreResult,
};
use crate::protocol::versions;
use crate::protocol::{TaskId, TaskStatus};
use crate::task::TaskRef;

/// The protocol revisions a record may name.
fn known_version(v: &str) -> bool {
    versions::find(v).is_some()
}

pub(crate) fn status(id: RecordId, name: &str) -> StoreResult<TaskStatus> {
    match TaskStatus::from_wire(name) {
        TaskStatus::Unknown if name != "unknown" => Err(StoreError::corrupt(
            Some(id),
            format!("unknown status {name:?}"),
        )),
        s => Ok(s),
    }
}

pub(crate) fn reference(
    id: RecordId,
    task_id: String,
    server: Option<String>,
    protocol_version: Option<String>,
) -> StoreResult<TaskRef> {
    // An empty task id is a key reserved before its call was answered
    // (`TaskRecord::is_started`), not a corrupt record.
    let r = TaskRef::new(TaskId::new(task_id), server);
    match protocol_version {
        None => Ok(r),
        Some(v) if known_version(&v) => Ok(r.with_protocol_version(v)),
        Some(v) => Err(StoreError::corrupt(
            Some(id),
            format!("unknown protocol revision {v:?}"),
        )),
    }
}

pub(crate) fn answers_json(answers: &BTreeMap<String, Answer>) -> String {
    serde_json::to_string(answers).expect("answers serialize")
}

pub(crate) fn answers(id: RecordId, json: &str) -> StoreResult<BTreeMap<String, Answer>> {
    serde_json::from_str(json)
        .map_err(|e| StoreError::corrupt(Some(id), format!("its answers are not valid: {e}")))
}

pub(crate) fn questions(id: RecordId, json: &str) -> StoreResult<Questions> {
    serde_json::from_str(json)
        .map_err(|e| StoreError::corrupt(Some(id), format!("its questions are not valid: {e}")))
}

pub(crate) fn schedule_json(schedule: &Schedule) -> String {
    serde_json::to_string(schedule).expect("a schedule serializes")
}

pub(crate) fn schedule(id: RecordId, json: &str) -> StoreResult<Schedule> {
    serde_json::from_str(json)
        .map_err(|e| StoreError::corrupt(Some(id), format!("its schedule is not valid: {e}")))
}

pub(crate) fn ending_json(ending: &Ending) -> String {
    serde_json::to_string(ending).expect("an ending serializes")
}

pub(crate) fn ending(id: RecordId, json: Option<&str>) -> StoreResult<Option<Ending>> {
    json.map(|j| {
        serde_json::from_str(j)
            .map_err(|e| StoreError::corrupt(Some(id), format!("its ending is not valid: {e}")))
    })
    .transpose()
}

pub(crate) fn count(id: RecordId, what: &str, n: i64) -> StoreResult<u32> {
    u32::try_from(n).map_err(|_| StoreError::corrupt(Some(id), format!("{what} is {n}")))
}

pub(crate) fn interval(id: RecordId, ms: Option<i64>) -> StoreResult<Option<u64>> {
    ms.map(|n| {
        u64::try_from(n)
            .map_err(|_| StoreError::corrupt(Some(id), format!("a poll interval of {n} ms")))
    })
    .transpose()
}

/// A suggested interval as a column value.
pub(crate) fn interval_column(ms: Option<u64>) -> Option<i64> {
    ms.map(|n| i64::try_from(n).unwrap_or(i64::MAX))
}

/// A record's history from its JSON array of entries and the count of
/// those dropped.
pub(crate) fn history(id: RecordId, json: &str, dropped: i64) -> StoreResult<History> {
    let entries: Vec<HistoryEntry> = serde_json::from_str(json)
        .map_err(|e| StoreError::corrupt(Some(id), format!("its history is not valid: {e}")))?;
    let dropped = u64::try_from(dropped).map_err(|_| {
        StoreError::corrupt(Some(id), format!("its history dropped {dropped} entries"))
    })?;
    Ok(History { entries, dropped })
}

/// Which of `saves` a store may write together, in one statement or
/// transaction ([`TaskStore::save_all`](super::TaskStore::save_all)):
/// those that touch no question, each of a record named once. The rest
/// go one at a time after them ([`save_the_rest`]), in the order given,
/// so that two saves of one record land in order.
pub(crate) fn together(saves: &[(RecordId, super::Fence, super::StepReport)]) -> Vec<bool> {
    let mut named = std::collections::HashMap::new();
    for (id, _, _) in saves {
        *named.entry(*id).or_insert(0) += 1;
    }
    saves
        .iter()
        .map(|(id, _, p)| named[id] == 1 && p.taken.is_empty() && p.offered.is_empty())
        .collect()
}

/// The answers to `saves`: those written together (`answers`, `Some`),
/// and each of the rest saved alone by `store`, in the order given.
pub(crate) async fn save_the_rest<S: super::TaskStore>(
    store: &S,
    saves: Vec<(RecordId, super::Fence, super::StepReport)>,
    answers: Vec<Option<StoreResult<()>>>,
) -> Vec<StoreResult<()>> {
    let mut out = Vec::with_capacity(saves.len());
    for ((id, fence, progress), answer) in saves.into_iter().zip(answers) {
        out.push(match answer {
            Some(answer) => answer,
            None => store.save(id, fence, progress).await,
        });
    }
    out
}
