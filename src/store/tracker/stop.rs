//! The hand-over: a worker that stops gives every record it holds back
//! at once, and a worker that starts under a name takes back what that
//! name held, so that neither a deploy nor a restart after a crash waits
//! for a lease to run out.

use std::collections::{HashMap, VecDeque};
use std::time::{Instant, SystemTime};

use tokio::task::{Id, JoinSet};

use super::super::{Fence, RecordId, StoreResult, TaskRecord, TaskStore};
use super::{Connector, Tracker, Worked};

/// The records a running worker holds: those claimed and waiting for a
/// slot, those of its jobs, and those whose lease outlived their job (a
/// declined delivery, a failed write, a job cut short).
#[derive(Default)]
pub(super) struct Hands {
    waiting: VecDeque<TaskRecord>,
    /// Waiting records to give back now, unread (see [`Hands::lost_one`]
    /// and [`Hands::overdue`]).
    returning: Vec<(RecordId, Fence)>,
    jobs: HashMap<Id, (RecordId, Option<Fence>)>,
    kept: Vec<(RecordId, Fence, Instant)>,
}

/// A claimed record's id and fence, if it is held.
fn held(record: &TaskRecord) -> Option<(RecordId, Fence)> {
    Some((record.id, record.fence()?))
}

impl Hands {
    /// `records`, claimed, wait for a slot, in the order given.
    pub(super) fn wait(&mut self, records: impl IntoIterator<Item = TaskRecord>) {
        self.waiting.extend(records);
    }

    /// Whether a claimed record waits for a slot.
    pub(super) fn waits(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// The next waiting record whose lease runs past `now`. Those whose
    /// lease ran out while they waited are let go: they are due again,
    /// for the next claim of any worker.
    pub(super) fn next_waiting(&mut self, now: SystemTime) -> Option<TaskRecord> {
        while let Some(record) = self.waiting.pop_front() {
            if record.lease.as_ref().is_some_and(|l| l.until > now) {
                return Some(record);
            }
            tracing::debug!(record = %record.id, "a claimed record's lease ran out before a slot freed");
        }
        None
    }

    /// A write was refused: another worker took a record this one held
    /// (its lease ran out, or another process under this worker's name
    /// took back what the name held). The waiting records may be taken
    /// too: rather than read them, the worker gives them back
    /// ([`Hands::returning`]), so that whoever may claim them does.
    pub(super) fn lost_one(&mut self) {
        let waiting = std::mem::take(&mut self.waiting);
        self.returning.extend(waiting.iter().filter_map(held));
    }

    /// Waiting records with less than half of `lease` left at `now` are
    /// to be given back ([`Hands::returning`]): the slots are held by slow
    /// jobs (a slow server, a person, a slow `on_ending`), and another
    /// worker may have free ones. The records wait in the order claimed,
    /// all from one claim (the next comes once none waits), so the oldest
    /// leases are at the front: a look at the front is enough.
    pub(super) fn overdue(&mut self, now: SystemTime, lease: std::time::Duration) {
        let half = lease / 2;
        let late = |r: &TaskRecord| {
            r.lease
                .as_ref()
                .is_none_or(|l| l.until.duration_since(now).unwrap_or_default() < half)
        };
        while self.waiting.front().is_some_and(late) {
            let record = self.waiting.pop_front();
            self.returning.extend(record.as_ref().and_then(held));
        }
    }

    /// The records to give back now, unread.
    pub(super) fn returning(&mut self) -> Vec<(RecordId, Fence)> {
        std::mem::take(&mut self.returning)
    }

    /// Job `job` holds `record`.
    pub(super) fn hold(&mut self, job: Id, record: (RecordId, Option<Fence>)) {
        self.jobs.insert(job, record);
    }

    /// Job `job` ended and its record's lease with it.
    pub(super) fn ended(&mut self, job: Id) {
        self.jobs.remove(&job);
    }

    /// Job `job` ended early: its record may still be held.
    pub(super) fn cut(&mut self, job: Id) {
        if let Some((id, Some(fence))) = self.jobs.remove(&job) {
            self.kept(id, fence);
        }
    }

    /// `record`, claimed, is held with no job.
    pub(super) fn keep(&mut self, record: &TaskRecord) {
        if let Some(fence) = record.fence() {
            self.kept(record.id, fence);
        }
    }

    /// Record `id` is still held under `fence`, with no job.
    pub(super) fn kept(&mut self, id: RecordId, fence: Fence) {
        self.kept.push((id, fence, Instant::now()));
    }

    /// Forgets the records whose lease ran out by now (kept longer than a
    /// lease since their job ended), so that the list stays short.
    pub(super) fn prune(&mut self, lease: std::time::Duration) {
        self.kept.retain(|(_, _, since)| since.elapsed() < lease);
    }
}

impl<S: TaskStore, C: Connector> Tracker<S, C> {
    /// Stops the worker and hands its records over at once, for a deploy
    /// or a restart: every [`run`](Tracker::run) of this tracker (and of
    /// its clones) claims nothing more, lets the jobs in hand finish
    /// (within [`stop_within`](super::TrackerBuilder::stop_within), after
    /// which they are cut where they stand), gives back the lease of every
    /// record it still holds ([`TaskStore::release`]: a delivery declined,
    /// a job cut short), so that any worker may claim them now rather than
    /// when the leases would run out, and returns `Ok`. `shutdown` returns
    /// once every `run` has.
    ///
    /// A tracker shut down stays so: a later `run` returns at once, and
    /// [`pass`](Tracker::pass) claims nothing. Calls that need no worker
    /// ([`call_tool`](Tracker::call_tool), [`cancel`](Tracker::cancel),
    /// [`answer`](Tracker::answer)) go on working; a `call_tool` still
    /// running keeps its key's reservation until the call is answered.
    ///
    /// ```no_run
    /// # async fn f(tracker: mcp_tasks::store::Tracker<mcp_tasks::store::MemoryStore, mcp_tasks::Client>) -> Result<(), mcp_tasks::store::StoreError> {
    /// let worker = tracker.clone();
    /// let run = tokio::spawn(async move { worker.run(|_ended| async { true }).await });
    /// // On SIGTERM (a deploy):
    /// tracker.shutdown().await;
    /// run.await.expect("the worker")?;
    /// # Ok(()) }
    /// ```
    ///
    /// Do not await it from `on_ending`, whose job `shutdown` waits for:
    /// that job is cut after `stop_within`.
    pub async fn shutdown(&self) {
        self.inner.stop.send_replace(true);
        // Every `run` holds the lock for reading until it returned.
        drop(self.inner.runs.write().await);
    }

    /// Whether [`shutdown`](Tracker::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        *self.inner.stop.borrow()
    }

    /// Gives back, once per tracker and before it holds anything, the
    /// leases its name held when the previous process under that name
    /// stopped ([`TaskStore::release_worker`]). Nothing for a worker left
    /// to its default name. Tried again on the next call if the store
    /// failed.
    pub(super) async fn take_back(&self) -> StoreResult<()> {
        let inner = &self.inner;
        if !inner.settings.named {
            return Ok(());
        }
        inner
            .taken_back
            .get_or_try_init(|| async {
                let n = inner.store.release_worker(&inner.settings.worker).await?;
                if n > 0 {
                    tracing::info!(
                        worker = %inner.settings.worker,
                        records = n,
                        "took back the records this worker's name held"
                    );
                }
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// Gives back the leases of `held`, side by side: how many were still
    /// this worker's to give.
    pub(super) async fn give_back(&self, held: Vec<(RecordId, Fence)>) -> usize {
        let mut releases = JoinSet::new();
        for (id, fence) in held {
            let this = self.clone();
            releases.spawn(async move { (id, this.inner.store.release(id, fence).await) });
        }
        let mut given = 0;
        while let Some(done) = releases.join_next().await {
            match done {
                Ok((_, Ok(()))) => given += 1,
                // Claimed by another worker since: not this one's to give.
                Ok((_, Err(e))) if e.is_stale() || e.is_not_found() => {}
                Ok((id, Err(e))) => {
                    tracing::warn!(
                        worker = %self.worker(),
                        record = %id,
                        "a record was not given back; it waits for its lease: {e}"
                    );
                }
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => {}
            }
        }
        given
    }

    /// The end of `run`: lets `jobs` finish within `stop_within`, cuts the
    /// rest, and gives back every lease still held, side by side.
    pub(super) async fn hand_over(&self, mut jobs: JoinSet<StoreResult<Worked>>, mut hands: Hands) {
        let grace = tokio::time::sleep(self.inner.settings.stop_within);
        tokio::pin!(grace);
        loop {
            tokio::select! {
                done = jobs.join_next_with_id() => match done {
                    Some(done) => self.reaped(done, &mut hands),
                    None => break,
                },
                () = &mut grace => break,
            }
        }
        jobs.abort_all();
        while let Some(done) = jobs.join_next_with_id().await {
            self.reaped(done, &mut hands);
        }
        hands.prune(self.inner.settings.lease);
        for record in std::mem::take(&mut hands.waiting) {
            hands.keep(&record);
        }
        let mut held = hands.returning();
        held.extend(hands.kept.iter().map(|&(id, fence, _)| (id, fence)));
        let given = self.give_back(held).await;
        tracing::info!(
            worker = %self.worker(),
            records = given,
            "the worker stopped and gave its records back"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::Hands;
    use crate::TaskRef;
    use crate::protocol::{TaskId, TaskStatus};
    use crate::store::backend::{Claim, NewTask};
    use crate::store::{MemoryStore, RecordId, TaskStore};

    /// `n` records claimed by `w` at `now` under a lease of `lease`.
    async fn claimed(
        store: &MemoryStore,
        n: usize,
        now: SystemTime,
        lease: Duration,
    ) -> Vec<crate::store::TaskRecord> {
        for i in 0..n {
            store
                .insert(NewTask {
                    reference: TaskRef::new(TaskId::new(format!("t{i}")), None),
                    tool: "export".into(),
                    key: None,
                    unique_key: false,
                    scope: "default".into(),
                    status: TaskStatus::Working,
                    status_message: None,
                    poll_interval_ms: None,
                    due: now,
                    ending: None,
                    schedule: Default::default(),
                })
                .await
                .unwrap();
        }
        let claim = Claim {
            worker: "w",
            limit: n,
            now,
            lease,
            record: None,
        };
        let records = store.claim(claim).await.unwrap();
        records.into_iter().map(Result::unwrap).collect()
    }

    #[tokio::test]
    async fn a_waiting_record_whose_lease_ran_out_is_let_go_and_the_rest_come_in_order() {
        let store = MemoryStore::new();
        let now = SystemTime::now();
        let second = Duration::from_secs(1);
        let short = claimed(&store, 2, now, second).await;
        let long = claimed(&store, 2, now, 3600 * second).await;
        let ids = |rs: &[crate::store::TaskRecord]| rs.iter().map(|r| r.id).collect::<Vec<_>>();
        let expected = ids(&long);
        let mut hands = Hands::default();
        hands.wait(short.into_iter().chain(long));
        let later = now + 2 * second;
        let mut came: Vec<RecordId> = Vec::new();
        while let Some(record) = hands.next_waiting(later) {
            came.push(record.id);
        }
        assert_eq!(
            came, expected,
            "only the live leases, in the order they waited"
        );
        assert!(!hands.waits());
    }

    #[tokio::test]
    async fn records_waiting_past_half_their_lease_are_given_back() {
        let store = MemoryStore::new();
        let now = SystemTime::now();
        let hour = Duration::from_secs(3600);
        let early = claimed(&store, 2, now, hour).await;
        let later = claimed(&store, 1, now + hour / 4, hour).await;
        let mut hands = Hands::default();
        hands.wait(early.iter().cloned().chain(later.iter().cloned()));
        hands.overdue(now + hour / 3, hour);
        assert!(
            hands.returning().is_empty(),
            "two thirds of each lease left"
        );
        hands.overdue(now + hour * 2 / 3, hour);
        let expected: Vec<_> = early.iter().map(|r| (r.id, r.fence().unwrap())).collect();
        assert_eq!(hands.returning(), expected, "a third left: given back");
        let left = hands.next_waiting(now + hour * 2 / 3).map(|r| r.id);
        assert_eq!(left, Some(later[0].id), "more than half left: still waits");
    }

    #[tokio::test]
    async fn a_refused_write_gives_the_waiting_records_back_unread() {
        let store = MemoryStore::new();
        let now = SystemTime::now();
        let waiting = claimed(&store, 3, now, Duration::from_secs(3600)).await;
        let expected: Vec<_> = waiting.iter().map(|r| (r.id, r.fence().unwrap())).collect();
        let mut hands = Hands::default();
        hands.wait(waiting);
        hands.lost_one();
        assert!(!hands.waits(), "none is started");
        assert_eq!(hands.returning(), expected);
        assert!(hands.returning().is_empty(), "given back once");
    }
}
