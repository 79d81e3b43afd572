//! `MemoryStore`: a task store in the process's memory, for tests and
//! examples. It keeps the same rules as the database stores (leases,
//! fencing, delivery) but nothing survives the process.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use super::History;
use super::history::{self, Event};
use super::questions;
use super::{
    Answerer, Answers, Claim, Counts, Ending, Fence, Filter, Forgotten, Lease, NewTask, Questions,
    RecordId, RecordState, Reservation, Schedule, StepReport, StoreError, StoreResult, TaskRecord,
    TaskStore,
};
use crate::protocol::{InputRequests, InputResponse};
use crate::task::TaskRef;

/// A task store in memory. Clones share the same records.
///
/// ```
/// use mcp_tasks::store::{Filter, MemoryStore, TaskStore};
///
/// # tokio_test_block_on(async {
/// let store = MemoryStore::new();
/// assert!(store.list(&Filter::all()).await.unwrap().is_empty());
/// # });
/// # fn tokio_test_block_on<F: Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<Records>>,
}

#[derive(Debug, Default)]
struct Records {
    next_id: i64,
    next_fence: i64,
    by_id: BTreeMap<RecordId, TaskRecord>,
    /// Records answered or cancelled from elsewhere since their last claim.
    nudged: BTreeSet<RecordId>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, Records> {
        // A panic while holding the lock leaves whole records behind (every
        // write below replaces values, never half of one): go on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Records {
    /// The record the unique key of `task` already names, if any.
    fn named(&self, task: &NewTask) -> Option<RecordId> {
        if !task.unique_key || task.key.is_none() {
            return None;
        }
        self.by_id
            .values()
            .find(|r| r.unique_key && r.key == task.key && r.scope == task.scope)
            .map(|r| r.id)
    }

    /// Adds `task` as a new record.
    fn add(&mut self, task: NewTask) -> RecordId {
        let now = SystemTime::now();
        let status = task.recorded_status();
        self.next_id += 1;
        let id = RecordId(self.next_id);
        let entries = history::created(
            status,
            task.status_message.as_deref(),
            task.ending.as_ref(),
            now,
        );
        let record = TaskRecord {
            id,
            reference: task.reference,
            tool: task.tool,
            key: task.key,
            unique_key: task.unique_key,
            scope: task.scope,
            created: now,
            updated: now,
            status,
            status_message: task.status_message,
            poll_interval_ms: task.poll_interval_ms,
            due: task.due,
            failed_reads: 0,
            lease: None,
            questions: Questions::new(),
            answers: BTreeMap::new(),
            schedule: task.schedule,
            cancel_requested: false,
            history: History {
                entries,
                dropped: 0,
            },
            ending: task.ending,
            delivered: false,
        };
        self.by_id.insert(id, record);
        id
    }

    /// The record `id`, held under `fence`.
    fn held(&mut self, id: RecordId, fence: Fence) -> StoreResult<&mut TaskRecord> {
        let r = self
            .by_id
            .get_mut(&id)
            .ok_or_else(|| StoreError::not_found(id))?;
        if r.fence() != Some(fence) {
            return Err(StoreError::stale(id));
        }
        Ok(r)
    }
}

/// Whether `claim` may take `r`.
fn claimable(r: &TaskRecord, claim: &Claim<'_>) -> bool {
    let free = r.lease.as_ref().is_none_or(|l| l.until <= claim.now);
    let wanted = match (&r.ending, claim.record) {
        (Some(_), _) => !r.delivered,
        (None, Some(_)) => true,
        (None, None) => r.due <= claim.now,
    };
    free && wanted && claim.record.is_none_or(|id| id == r.id)
}

impl TaskStore for MemoryStore {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        let mut records = self.lock();
        if let Some(existing) = records.named(&task) {
            return Err(StoreError::duplicate(existing));
        }
        Ok(records.add(task))
    }

    async fn reserve(
        &self,
        task: NewTask,
        worker: &str,
        until: SystemTime,
    ) -> StoreResult<Reservation> {
        let mut records = self.lock();
        if let Some(existing) = records.named(&task) {
            return Ok(Reservation::Taken(existing));
        }
        let id = records.add(task);
        records.next_fence += 1;
        let fence = Fence(records.next_fence);
        let r = records.by_id.get_mut(&id).expect("just added");
        r.lease = Some(Lease {
            owner: worker.to_owned(),
            until,
            fence,
        });
        Ok(Reservation::Reserved { id, fence })
    }

    async fn start(
        &self,
        id: RecordId,
        fence: Fence,
        reference: &TaskRef,
        schedule: &Schedule,
        progress: StepReport,
    ) -> StoreResult<()> {
        {
            let mut records = self.lock();
            let r = records.held(id, fence)?;
            if r.is_started() {
                return Err(StoreError::stale(id));
            }
            r.reference = reference.clone();
            r.schedule = *schedule;
        }
        self.save(id, fence, progress).await
    }

    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        Ok(self.lock().by_id.get(&id).cloned())
    }

    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let mut records = self.lock();
        let mut due: Vec<(SystemTime, RecordId)> = records
            .by_id
            .values()
            .filter(|r| claimable(r, &claim))
            .map(|r| (r.due, r.id))
            .collect();
        due.sort();
        due.truncate(claim.limit);
        let until = claim.now + claim.lease;
        let mut out = Vec::with_capacity(due.len());
        for (_, id) in due {
            records.next_fence += 1;
            let fence = Fence(records.next_fence);
            records.nudged.remove(&id);
            let r = records.by_id.get_mut(&id).expect("a listed record");
            // A lease that ran out rather than being given back.
            let mut added = History::default();
            if let Some(old) = r
                .lease
                .as_ref()
                .filter(|l| l.until > SystemTime::UNIX_EPOCH)
            {
                let event = Event::TakenOver {
                    from: old.owner.clone(),
                    to: claim.worker.to_owned(),
                };
                added.push(claim.now, event.clone());
                r.history.push(claim.now, event);
            }
            r.lease = Some(Lease {
                owner: claim.worker.to_owned(),
                until,
                fence,
            });
            // The history stays behind: the claim brings what it added.
            let history = std::mem::replace(&mut r.history, added);
            out.push(Ok(r.clone()));
            r.history = history;
        }
        Ok(out)
    }

    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        let mut records = self.lock();
        let r = records.held(id, fence)?;
        if let Some(l) = r.lease.as_mut() {
            l.until = until;
        }
        Ok(())
    }

    async fn release(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let mut records = self.lock();
        let r = records.held(id, fence)?;
        if let Some(l) = r.lease.as_mut() {
            l.until = SystemTime::UNIX_EPOCH;
        }
        Ok(())
    }

    async fn release_worker(&self, worker: &str) -> StoreResult<u64> {
        let mut records = self.lock();
        let now = SystemTime::now();
        let mut released = 0;
        for r in records.by_id.values_mut() {
            if r.delivered {
                continue;
            }
            if let Some(l) = r.lease.as_mut()
                && l.owner == worker
                && l.until > now
            {
                l.until = SystemTime::UNIX_EPOCH;
                released += 1;
            }
        }
        Ok(released)
    }

    async fn ask(
        &self,
        id: RecordId,
        fence: Fence,
        asked: &InputRequests,
        now: SystemTime,
    ) -> StoreResult<(Questions, Answers)> {
        let mut records = self.lock();
        let r = records.held(id, fence)?;
        let (changed, entries) = questions::ask_noting(&mut r.questions, asked, now);
        if changed {
            r.updated = now;
        }
        r.history.extend(entries);
        Ok((r.questions.clone(), r.answers.clone()))
    }

    async fn answer_by(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        by: Answerer,
        now: SystemTime,
    ) -> StoreResult<()> {
        let mut records = self.lock();
        let r = records
            .by_id
            .get_mut(&id)
            .ok_or_else(|| StoreError::not_found(id))?;
        let ended = r.ending.is_some();
        questions::answer(&r.questions, &mut r.answers, ended, key, response)
            .map_err(|why| StoreError::refused(id, why))?;
        r.history.push(now, questions::answered(key, by));
        r.due = r.due.min(now);
        r.updated = now;
        records.nudged.insert(id);
        Ok(())
    }

    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<InputResponse> {
        let mut records = self.lock();
        let r = records.held(id, fence)?;
        let ended = r.ending.is_some();
        match questions::answer(&r.questions, &mut r.answers, ended, key, response) {
            Ok(()) => {
                r.updated = SystemTime::now();
                r.history
                    .push(r.updated, questions::answered(key, Answerer::Handler));
                Ok(response.clone())
            }
            Err(super::Refusal::Answered { .. }) => Ok(r.answers[key].response.clone()),
            Err(why) => Err(StoreError::refused(id, why)),
        }
    }

    async fn save(&self, id: RecordId, fence: Fence, progress: StepReport) -> StoreResult<()> {
        let mut records = self.lock();
        let nudged = records.nudged.contains(&id);
        let r = records.held(id, fence)?;
        let now = SystemTime::now();
        if r.status != progress.status || r.status_message != progress.status_message {
            let event = Event::status(progress.status, progress.status_message.as_deref());
            r.history.push(now, event);
        }
        r.status = progress.status;
        r.status_message = progress.status_message;
        r.poll_interval_ms = progress.poll_interval_ms;
        r.failed_reads = progress.failed_reads;
        r.due = if nudged {
            progress.due.min(now)
        } else {
            progress.due
        };
        let taken = questions::taken_now(&r.answers, &progress.taken, now);
        questions::take(&mut r.questions, &mut r.answers, &progress.taken, now);
        r.history.extend(taken);
        questions::offer(&mut r.questions, &progress.offered);
        r.updated = SystemTime::now();
        if let Some(l) = r.lease.as_mut() {
            l.until = SystemTime::UNIX_EPOCH;
        }
        Ok(())
    }

    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        let mut records = self.lock();
        let r = records.held(id, fence)?;
        r.updated = SystemTime::now();
        if r.ending.as_ref() != Some(ending) {
            let event = Event::Ended {
                ending: ending.name().to_owned(),
            };
            r.history.push(r.updated, event);
        }
        r.status = ending.status();
        r.ending = Some(ending.clone());
        Ok(())
    }

    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let mut records = self.lock();
        let r = records.held(id, fence)?;
        if !r.delivered {
            r.history.push(SystemTime::now(), Event::Delivered);
        }
        r.delivered = true;
        r.updated = SystemTime::now();
        if let Some(l) = r.lease.as_mut() {
            l.until = SystemTime::UNIX_EPOCH;
        }
        Ok(())
    }

    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        let mut records = self.lock();
        match records.by_id.get_mut(&id) {
            Some(r) if r.ending.is_none() => {
                if !r.cancel_requested {
                    r.history.push(now, Event::CancelRequested);
                }
                r.cancel_requested = true;
                r.due = r.due.min(now);
                r.updated = now;
                records.nudged.insert(id);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let mut records = self.lock();
        records.held(id, fence)?;
        records.by_id.remove(&id);
        records.nudged.remove(&id);
        Ok(())
    }

    async fn forget(&self, id: RecordId, now: SystemTime) -> StoreResult<Forgotten> {
        let mut records = self.lock();
        let Some(r) = records.by_id.get(&id) else {
            return Ok(Forgotten::Missing);
        };
        let delivered = RecordState::of(r) == RecordState::Delivered;
        if let Some(lease) = r.lease.as_ref().filter(|l| l.until > now && !delivered) {
            return Ok(Forgotten::Held {
                owner: lease.owner.clone(),
                until: lease.until,
            });
        }
        records.by_id.remove(&id);
        records.nudged.remove(&id);
        Ok(Forgotten::Removed)
    }

    async fn prune(&self, older_than: SystemTime, limit: usize) -> StoreResult<usize> {
        let mut records = self.lock();
        let mut old: Vec<(SystemTime, RecordId)> = records
            .by_id
            .values()
            .filter(|r| RecordState::of(r) == RecordState::Delivered)
            .filter(|r| r.created < older_than && r.updated < older_than)
            .map(|r| (r.created, r.id))
            .collect();
        old.sort();
        old.truncate(limit);
        for (_, id) in &old {
            records.by_id.remove(id);
            records.nudged.remove(id);
        }
        Ok(old.len())
    }

    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let records = self.lock();
        // Without `asking` the order is the ids': stop at the limit.
        let limit = filter.limit.unwrap_or(usize::MAX);
        let mut selected: Vec<&TaskRecord> = if filter.newest_first && !filter.asking {
            let below = filter
                .before
                .map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
            records
                .by_id
                .range((std::ops::Bound::Unbounded, below))
                .rev()
                .map(|(_, r)| r)
                .filter(|r| filter.selects(r))
                .take(limit)
                .collect()
        } else if !filter.asking {
            records
                .by_id
                .values()
                .filter(|r| filter.selects(r))
                .take(limit)
                .collect()
        } else {
            records
                .by_id
                .values()
                .filter(|r| filter.selects(r))
                .collect()
        };
        if filter.asking {
            selected.sort_by_key(|r| (r.asking_since(), r.id));
        }
        Ok(selected
            .into_iter()
            .take(filter.limit.unwrap_or(usize::MAX))
            .map(|r| Ok(r.clone()))
            .collect())
    }

    async fn counts(&self, overdue_before: SystemTime) -> StoreResult<Counts> {
        let records = self.lock();
        Ok(Counts::of(records.by_id.values(), overdue_before))
    }

    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        let records = self.lock();
        Ok(records
            .by_id
            .values()
            .filter(|r| r.ending.is_none() || !r.delivered)
            .map(|r| {
                let free_at = r.lease.as_ref().map_or(SystemTime::UNIX_EPOCH, |l| l.until);
                let wanted_at = if r.ending.is_none() {
                    r.due
                } else {
                    SystemTime::UNIX_EPOCH
                };
                free_at.max(wanted_at)
            })
            .min())
    }
}
