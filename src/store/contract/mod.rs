//! The contract every [`TaskStore`] keeps, checked against each store:
//! the memory store here, the database stores in their own modules or
//! test binaries (through `store::contract`, with `test-util`).

use std::time::{Duration, SystemTime};

use super::*;
use crate::protocol::{ElicitResult, TaskId};

mod history;
mod keys;
mod leases;
mod listings;
mod questions;
mod records;
mod retention;

use history::*;
use keys::*;
use leases::*;
use listings::*;
use questions::*;
use records::*;
use retention::*;

/// A moment well clear of the real clock, so that the checks set time.
pub(super) fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000 + secs)
}

/// A task's record to insert: `n` names it (its id, key and scope).
pub(super) fn new_task(n: u32, due: SystemTime) -> NewTask {
    NewTask {
        unique_key: false,
        reference: TaskRef::new(TaskId::new(format!("task-{n}-secret")), Some("srv".into()))
            .with_protocol_version("2026-07-28"),
        tool: "export".into(),
        key: Some(format!("key-{n}")),
        scope: if n.is_multiple_of(2) { "even" } else { "odd" }.into(),
        status: TaskStatus::Working,
        status_message: Some("queued".into()),
        poll_interval_ms: Some(250),
        due,
        ending: None,
        schedule: Schedule::default(),
    }
}

/// A claim of up to `limit` due records by `worker` at `now`.
pub(super) fn claim(worker: &str, limit: usize, now: SystemTime) -> Claim<'_> {
    Claim {
        worker,
        limit,
        now,
        lease: Duration::from_secs(30),
        record: None,
    }
}

async fn claimed<S: TaskStore>(store: &S, c: Claim<'_>) -> Vec<TaskRecord> {
    store
        .claim(c)
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// What `worker` claims at `now` when it asks for record `id` alone.
async fn claim_record<S: TaskStore>(
    store: &S,
    worker: &str,
    id: RecordId,
    now: SystemTime,
) -> Vec<TaskRecord> {
    let c = Claim {
        record: Some(id),
        ..claim(worker, 1, now)
    };
    claimed(store, c).await
}

/// Claims record `id` for `worker` at `now`: the fence it holds.
async fn held<S: TaskStore>(store: &S, worker: &str, id: RecordId, now: SystemTime) -> Fence {
    claim_record(store, worker, id, now).await[0]
        .fence()
        .expect("claimed")
}

fn progress(due: SystemTime) -> StepReport {
    StepReport {
        status: TaskStatus::InputRequired,
        status_message: Some("half way".into()),
        poll_interval_ms: None,
        failed_reads: 2,
        due,
        taken: Vec::new(),
        offered: Vec::new(),
    }
}

fn form(field: &str) -> crate::protocol::InputRequest {
    crate::protocol::InputRequest::form(
        "Approve?",
        serde_json::json!({
            "type": "object",
            "properties": {field: {"type": "boolean"}},
            "required": [field],
        }),
    )
}

fn asked(keys: &[&str]) -> InputRequests {
    keys.iter().map(|k| ((*k).to_owned(), form("ok"))).collect()
}

/// Every check, on an empty store.
#[cfg_attr(not(feature = "test-util"), allow(unreachable_pub))]
pub async fn contract<S: TaskStore>(store: &S) {
    records_come_back_as_inserted(store).await;
    claims_take_due_records_once_oldest_first(store).await;
    a_stale_fence_cannot_write(store).await;
    answers_and_progress_are_kept(store).await;
    endings_are_delivered_until_acknowledged(store).await;
    cancel_and_remove(store).await;
    listings_filter(store).await;
    questions_are_recorded_and_closed(store).await;
    answers_come_from_anywhere_once(store).await;
    an_answer_during_a_step_makes_the_record_due(store).await;
    records_that_ask_are_listed_oldest_question_first(store).await;
    a_schedule_is_kept(store).await;
    a_unique_key_names_one_record(store).await;
    a_reserved_key_is_started_once(store).await;
    a_record_says_how_its_task_stands(store).await;
    a_record_is_forgotten_unless_a_worker_holds_it(store).await;
    delivered_records_are_pruned_oldest_first_in_batches(store).await;
    a_lease_is_given_back_at_once(store).await;
    a_workers_name_gives_its_leases_back(store).await;
    saves_written_together_are_each_answered(store).await;
    listings_page_newest_first_by_tool(store).await;
    counts_say_how_records_stand(store).await;
    listings_filter_by_status(store).await;
    each_change_adds_one_history_entry(store).await;
    the_history_keeps_the_newest_and_counts_the_dropped(store).await;
    a_claim_brings_only_the_history_it_added(store).await;
}

#[tokio::test]
async fn the_memory_store_keeps_the_contract() {
    contract(&MemoryStore::new()).await;
}
