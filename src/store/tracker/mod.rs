//! The tracker: a worker that drives stored tasks one step at a time.
//!
//! `types.rs` holds what the application hands it and gets back
//! (connector, labels, deliveries, questions); `step.rs` one step of one
//! task; `hold.rs` the heartbeat that keeps a record's lease while the
//! worker awaits anything on its behalf; `stop.rs` the hand-over of a
//! worker's records when it stops or starts; `start.rs` starting a task
//! (once per unique key), and taking one back as a handle.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{Mutex, Notify, OnceCell, RwLock, Semaphore, watch};
use tokio::task::JoinSet;

use super::{Claim, Fence, RecordId, StoreError, StoreResult, TaskRecord, TaskStore};
use crate::Client;
use crate::task::schedule::Rules;

mod hold;
mod meter;
mod retain;
mod saves;
mod start;
mod step;
mod stop;
mod types;

use retain::Retention;
use types::QuestionHook;
pub use types::{Asking, Connector, Delivery, Label, Pass, TrackError, Tracking};

/// The longest pause of a tracker whose store is unavailable.
const MAX_STORE_PAUSE: Duration = Duration::from_secs(5);

/// Refused writes in a row after which a worker warns (once per streak).
const STALE_STREAK: u32 = 5;

/// What one job of a worker came to.
enum Worked {
    /// The task was read and is still running.
    Stepped,
    /// An ending was delivered and acknowledged.
    Delivered,
    /// An ending was delivered and not acknowledged: it comes again once
    /// the lease (still held under this fence) runs out.
    Declined(RecordId, Fence),
}

/// Builds a [`Tracker`]: see [`Tracker::builder`].
#[derive(Debug)]
pub struct TrackerBuilder<S, C> {
    store: S,
    connector: C,
    settings: Settings,
}

/// What a [`TrackerBuilder`] sets, kept by the tracker as it was built.
#[derive(Debug)]
struct Settings {
    worker: String,
    /// Whether the worker was given its name (it takes back what the name
    /// held when it starts).
    named: bool,
    scope: String,
    lease: Duration,
    batch: usize,
    concurrency: usize,
    idle: Duration,
    rules: Rules,
    request_timeout: Option<Duration>,
    answer_within: Duration,
    stop_within: Duration,
    on_question: Option<QuestionHook>,
    /// Delivered records older than this are removed.
    retain: Option<Duration>,
}

impl<S: TaskStore, C: Connector> TrackerBuilder<S, C> {
    /// This worker's name, written into the leases it takes (default: the
    /// host's process id and a counter). Must differ between workers that
    /// run at the same time, and should stay the same across restarts of
    /// one worker (`export-1` on every deploy, say): a worker given a
    /// name takes back, before its first claim, the records its name
    /// held when the previous process under that name stopped
    /// ([`TaskStore::release_worker`]), so that a restart after a crash
    /// waits for no lease. Should two processes run under one name by
    /// mistake, the one that starts takes the other's records over, and
    /// fencing refuses every write the other makes to them from then on:
    /// no record is written under two leases, but work in hand is done
    /// twice (a read, a delivery). A worker left to the default name
    /// takes nothing back.
    pub fn worker(mut self, name: impl Into<String>) -> Self {
        self.settings.worker = name.into();
        self.settings.named = true;
        self
    }

    /// The scope given to tasks that name none (default `"default"`).
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.settings.scope = scope.into();
        self
    }

    /// How long a claim lasts (default 30 s). A worker that stops for
    /// longer loses its records to others; its writes are then refused.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.settings.lease = lease.max(Duration::from_millis(10));
        self
    }

    /// How many records one claim takes at most (default 64). A running
    /// worker holds up to this many records beyond those it works on: a
    /// claim may take more than there are free slots, and the rest wait
    /// their turn under their leases (see [`Tracker::run`]). Where many
    /// workers share a small backlog of slow reads, a batch nearer the
    /// [`concurrency`](TrackerBuilder::concurrency) spreads it wider.
    pub fn batch(mut self, n: usize) -> Self {
        self.settings.batch = n.max(1);
        self
    }

    /// How many tasks are stepped at once at most (default 16). The
    /// steps' saves are written together ([`TaskStore::save_all`]: on
    /// Postgres, one statement): a step whose task still runs gives its
    /// slot up, for the next record, and its save waits up to 5 ms for
    /// those of other steps, less once a [`batch`](TrackerBuilder::batch)
    /// of them is in; the record stays held until its save is written.
    /// At most two batches of saves wait unanswered: beyond that a step
    /// keeps its slot until one is answered, so that a slow store slows
    /// the reads. With one slot, each save goes alone, at once.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.settings.concurrency = n.max(1);
        self
    }

    /// The longest sleep between looks at the store when nothing is due
    /// (default 1 s): tasks another process inserts are seen this soon.
    pub fn idle(mut self, idle: Duration) -> Self {
        self.settings.idle = idle.max(Duration::from_millis(1));
        self
    }

    /// The longest a client's input handler (or the
    /// [`on_question`](TrackerBuilder::on_question) hook) may take for one
    /// question (default 10 s). A handler that has not answered by then
    /// leaves the question open in the record, for anyone to answer with
    /// [`Tracker::answer`]; the worker goes on meanwhile. The record's lease
    /// is renewed while a handler runs, so no other worker asks again.
    pub fn answer_within(mut self, bound: Duration) -> Self {
        self.settings.answer_within = bound;
        self
    }

    /// How long [`Tracker::shutdown`] lets the jobs in hand finish
    /// (default 10 s): a read, an answer, a delivery to `on_ending`. A job
    /// still running then is cut where it stands, and its record given
    /// back like the others; what it did not write is done again by the
    /// next worker (a read, a delivery: at least once, as after a crash).
    pub fn stop_within(mut self, bound: Duration) -> Self {
        self.settings.stop_within = bound;
        self
    }

    /// Tells the application of each new question, once: `hook` gets it
    /// (to send the chat message or the email that brings a person), and
    /// returning `true` acknowledges it, so that it is never offered again.
    /// `false`, a hook slower than [`answer_within`](TrackerBuilder::answer_within)
    /// or a crash before the acknowledgement is written offers it again on
    /// a later read: at least once. The hook runs while the worker holds
    /// the record, before any input handler is asked.
    pub fn on_question<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(Asking) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.settings.on_question =
            Some(QuestionHook(Arc::new(move |asking| Box::pin(hook(asking)))));
        self
    }

    /// The interval between reads when the server suggests none (default
    /// 1 s), for tasks whose builder set no
    /// [`poll_interval`](crate::TaskBuilder::poll_interval): a task's own
    /// settings, kept in its record, come first.
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.settings.rules.default = d;
        self
    }

    /// The floor on any spacing of reads (default 50 ms), for tasks whose
    /// builder set none.
    pub fn min_poll_interval(mut self, d: Duration) -> Self {
        self.settings.rules.floor = d;
        self
    }

    /// The ceiling on any interval, the server's included (default 30 s),
    /// for tasks whose builder set none.
    pub fn max_poll_interval(mut self, d: Duration) -> Self {
        self.settings.rules.ceiling = d;
        self
    }

    /// Removes delivered records (ended, their ending acknowledged) once
    /// they are older than `age`; without it (the default) they stay
    /// until removed by hand ([`TaskStore::prune`], [`TaskStore::forget`]).
    ///
    /// The worker does it as part of its passes, a batch of at most 1,000
    /// records at a time (one short write, [`TaskStore::prune`]):
    /// [`run`](Tracker::run) one batch at most once per
    /// [`idle`](TrackerBuilder::idle) period (1 s by default, so 1,000
    /// records a second at most), [`pass`](Tracker::pass) one batch per
    /// pass. Open tasks and endings that await delivery are never removed.
    /// Workers that share a store share the work.
    pub fn retain(mut self, age: Duration) -> Self {
        self.settings.retain = Some(age);
        self
    }

    /// The bound on each request the tracker sends (default: the client's).
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.settings.request_timeout = Some(d);
        self
    }

    /// The tracker.
    pub fn build(self) -> Tracker<S, C> {
        let settings = self.settings;
        let saves = saves::Saves::new(settings.batch);
        Tracker {
            inner: Arc::new(Inner {
                store: self.store,
                connector: self.connector,
                meter: meter::Worker::new(&settings.worker),
                concurrency: Arc::new(Semaphore::new(settings.concurrency)),
                retention: settings.retain.map(Retention::new),
                settings,
                gave_up: Default::default(),
                clients: Mutex::new(HashMap::new()),
                wake: Notify::new(),
                stop: watch::Sender::new(false),
                runs: RwLock::new(()),
                taken_back: OnceCell::new(),
                stale_streak: std::sync::atomic::AtomicU32::new(0),
                saves,
            }),
        }
    }
}

/// A worker that drives tracked tasks from a [`TaskStore`].
///
/// It claims the records that are due, takes each one step (one read; the
/// client's input handlers when the task asks, each answer recorded before
/// `tasks/update` goes out; `tasks/cancel` when a cancel was asked for),
/// writes back under its lease, and hands every ending to the application.
/// It keeps no future per task: between passes it sleeps on one timer, until
/// the store's next due moment. Clones share the worker.
///
/// The spacing of reads follows the same rules as a handle's own wait (the
/// server's interval within the floor and the ceiling, a read soon after a
/// write, backoff after a failed read, `Retry-After`): both ask one schedule.
///
/// # Logs
///
/// `INFO` says what an operator wants once per task: `a task is tracked`,
/// `a tracked task ended` (with its ending) and `a tracked task's ending
/// was delivered`, each with the record's id (never the task id); and once
/// per worker, the records it took back when it started and gave back when
/// it stopped ([`Tracker::shutdown`]); and each record it took over from a
/// worker whose lease ran out (a crash, a pause longer than the lease),
/// with that worker's name. `WARN`
/// says what needs a person: the store unavailable (the worker pauses), a
/// step that failed on a store error, a record that cannot be read, a
/// [`on_question`](TrackerBuilder::on_question) hook slower than its
/// bound, and writes refused five times in a row because another worker
/// held the record (two processes under one name, or a lease shorter than
/// a step). A read, and whatever it changed or not, logs at `DEBUG` at most.
///
/// # Metrics
///
/// With the feature `metrics`, a worker reports what only it knows through
/// the [`metrics`](https://docs.rs/metrics) facade, so that the
/// application's own exporter picks the figures up; each carries the
/// label `worker` (its name). What the store itself holds (records by
/// state, open questions, overdue records) is the inbox's `/metrics`.
///
/// | metric | kind | other labels |
/// |---|---|---|
/// | `mcp_tasks_tracker_claims_total`, `mcp_tasks_tracker_claimed_records_total` | counter | |
/// | `mcp_tasks_tracker_reads_total` | counter | `result`: `ok`, `failed` |
/// | `mcp_tasks_tracker_renewals_total` | counter | `result`: `ok`, `lost`, `failed` |
/// | `mcp_tasks_tracker_stale_writes_total` (writes refused: another worker holds the record) | counter | |
/// | `mcp_tasks_tracker_handler_seconds` (an input handler, one question) | histogram | `result`: `answered`, `failed`, `timed_out` |
/// | `mcp_tasks_tracker_endings_total` | counter | `ending`: [`Ending::name`](super::Ending::name) |
/// | `mcp_tasks_tracker_deliveries_total` | counter | `result`: `acknowledged`, `declined` |
///
/// ```
/// use std::time::Duration;
/// use mcp_tasks::Client;
/// use mcp_tasks::protocol::CallToolResult;
/// use mcp_tasks::store::{MemoryStore, Tracker};
/// use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = TestServer::new().tool(ScriptedTool::task(
///     "export",
///     TaskScript::new().complete(Duration::from_millis(20), CallToolResult::text("done")),
/// ));
/// let client = Client::connect(server.connect()).await?;
/// let tracker = Tracker::builder(MemoryStore::new(), client.clone()).build();
///
/// let started = tracker.call_tool(client.task(), "export", ()).await?;
/// let id = started.record().expect("a task");
///
/// // A worker: normally `tracker.run(…)` in a task of its own.
/// let mut endings = Vec::new();
/// while endings.is_empty() {
///     tracker.pass(|d| { endings.push((d.id(), d.ending().clone())); async { true } }).await?;
///     tokio::time::sleep(Duration::from_millis(10)).await;
/// }
/// assert_eq!(endings[0].0, id);
/// assert!(endings[0].1.is_completed());
/// # Ok(()) }
/// ```
pub struct Tracker<S, C> {
    inner: Arc<Inner<S, C>>,
}

impl<S, C> Clone for Tracker<S, C> {
    fn clone(&self) -> Self {
        Tracker {
            inner: self.inner.clone(),
        }
    }
}

impl<S, C> fmt::Debug for Tracker<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracker")
            .field("worker", &self.inner.settings.worker)
            .field("lease", &self.inner.settings.lease)
            .field("batch", &self.inner.settings.batch)
            .finish_non_exhaustive()
    }
}

struct Inner<S, C> {
    store: S,
    connector: C,
    settings: Settings,
    /// The label `worker` of its figures.
    meter: meter::Worker,
    /// A slot per job, [`Settings::concurrency`] of them.
    concurrency: Arc<Semaphore>,
    /// Delivered records older than [`Settings::retain`] are removed.
    retention: Option<Retention>,
    /// Questions whose handler ran past `answer_within` here: not asked of
    /// this worker's handlers again (a person is asked once).
    gave_up: std::sync::Mutex<std::collections::HashSet<(RecordId, String)>>,
    clients: Mutex<HashMap<Option<String>, Client>>,
    /// Wakes a sleeping `run` when this process records a task.
    wake: Notify,
    /// Whether [`Tracker::shutdown`] was called.
    stop: watch::Sender<bool>,
    /// Held for reading by every `run` while it runs, so that `shutdown`
    /// waits for all of them.
    runs: RwLock<()>,
    /// Set once the records of this worker's name were taken back.
    taken_back: OnceCell<()>,
    /// Jobs in a row whose write was refused because another worker
    /// holds their record.
    stale_streak: std::sync::atomic::AtomicU32,
    /// Steps' saves waiting to be written together.
    saves: saves::Saves,
}

/// A default worker name: unique within the host for a process's life.
fn default_worker() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "worker-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl<S: TaskStore, C: Connector> Tracker<S, C> {
    /// A tracker over `store`, reaching servers through `connector` (a
    /// [`Client`] for one server).
    pub fn builder(store: S, connector: C) -> TrackerBuilder<S, C> {
        TrackerBuilder {
            store,
            connector,
            settings: Settings {
                worker: default_worker(),
                named: false,
                scope: "default".to_owned(),
                lease: Duration::from_secs(30),
                batch: 64,
                concurrency: 16,
                idle: Duration::from_secs(1),
                rules: Rules {
                    default: Duration::from_secs(1),
                    floor: Duration::from_millis(50),
                    ceiling: Duration::from_secs(30),
                },
                request_timeout: None,
                answer_within: Duration::from_secs(10),
                stop_within: Duration::from_secs(10),
                on_question: None,
                retain: None,
            },
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.inner.store
    }

    /// This worker's name.
    pub fn worker(&self) -> &str {
        &self.inner.settings.worker
    }

    /// Runs the worker until [`shutdown`](Tracker::shutdown), or until the
    /// store fails for good. `on_ending` gets each ended task; returning
    /// `true` acknowledges it.
    ///
    /// The worker works up to [`concurrency`](TrackerBuilder::concurrency)
    /// records at once, each one a job of its own: a read and what follows
    /// it (answers, a cancel, the write back), or the delivery of an
    /// ending. A job that waits (a slow read, an input handler, a slow
    /// `on_ending`) holds only its own record and its slot; the others go
    /// on. The write backs of jobs that end together go to the store
    /// together, as [`concurrency`](TrackerBuilder::concurrency) tells.
    /// Whenever a slot is free and no claimed record waits for one, it
    /// claims what is due, up to a [`batch`](TrackerBuilder::batch): the
    /// records that find no free slot wait their turn, in due order, under
    /// their leases, and the next claim comes once none waits. So one
    /// claim takes many records however few slots are free: a claim costs
    /// the store more than a write does, and the records wait for a slot
    /// either way. A record whose lease runs out while it waits is let go
    /// unread, for the next claim of any worker, and one still waiting
    /// when half its lease is gone (its worker's slots held by slow jobs)
    /// is given back, for a worker with free slots; and once a write is
    /// refused because another worker took its record (a lease that ran
    /// out, another process under this worker's name), the waiting
    /// records may be taken too: the worker gives them back unread
    /// rather than read them twice. While a job
    /// awaits anything on a record's behalf, the worker renews the record's
    /// lease (every third of it), so no other worker claims it meanwhile;
    /// a job whose lease cannot be kept (another worker took the record,
    /// or the store was unreachable until the lease ran out) is cut short.
    /// A read is bounded by the request timeout, an input handler and the
    /// [`on_question`](TrackerBuilder::on_question) hook by
    /// [`answer_within`](TrackerBuilder::answer_within); `on_ending` is not
    /// bounded: it holds its record (and its slot) for as long as it runs.
    /// Between claims it sleeps on one timer, until the store's next due
    /// moment, at most [`idle`](TrackerBuilder::idle), or until this
    /// process tracks, answers or cancels a task. With
    /// [`retain`](TrackerBuilder::retain), it removes a batch of old
    /// delivered records at most once per `idle` period.
    ///
    /// A worker given a name ([`TrackerBuilder::worker`]) first takes back
    /// the records that name held when its previous process stopped.
    ///
    /// A store that is unavailable (the database went away, a full disk)
    /// pauses the worker, with a warning, and it resumes once the store
    /// answers again: nothing is lost, since every task stays in the store.
    ///
    /// To stop the worker, call [`shutdown`](Tracker::shutdown) (from a
    /// signal handler, say): `run` claims nothing more, lets its jobs
    /// finish, gives every record it holds back, and returns `Ok`. Dropping
    /// the future stops it too, where it stands, but leaves its records
    /// to their leases: other workers take them once the leases run out,
    /// a worker restarted under the same name at once.
    ///
    /// # Errors
    ///
    /// A store error other than [`StoreError::is_unavailable`] when
    /// claiming (a schema newer than the code, say). A job's failure is
    /// logged and the record left to its lease.
    pub async fn run<F, Fut>(&self, on_ending: F) -> StoreResult<()>
    where
        F: Fn(Delivery) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        // Held while this runs: `shutdown` waits for it.
        let _running = self.inner.runs.read().await;
        let mut stop = self.inner.stop.subscribe();
        let on_ending = Arc::new(on_ending);
        let mut jobs: JoinSet<StoreResult<Worked>> = JoinSet::new();
        let mut hands = stop::Hands::default();
        let mut pause = Duration::from_millis(100);
        // The last claim came back full: more is due than there are slots.
        let mut behind = false;
        loop {
            while let Some(done) = jobs.try_join_next_with_id() {
                self.reaped(done, &mut hands);
            }
            hands.prune(self.inner.settings.lease);
            if *stop.borrow() {
                break;
            }
            hands.overdue(SystemTime::now(), self.inner.settings.lease);
            let returning = hands.returning();
            if !returning.is_empty() {
                self.give_back(returning).await;
            }
            self.tidy().await;
            self.start_waiting(&mut jobs, &mut hands, &on_ending);
            // A claim takes up to a batch, whatever the free slots: what
            // finds no slot waits its turn, and the next claim comes once
            // nothing waits. A claim costs the store more than a save.
            if !hands.waits() && self.inner.concurrency.available_permits() > 0 {
                let limit = self.inner.settings.batch;
                match self.claim(limit).await {
                    Ok(records) => {
                        pause = Duration::from_millis(100);
                        let full = records.len() >= limit;
                        behind = full;
                        hands.wait(records.into_iter().filter_map(|r| self.usable(r)));
                        if *stop.borrow() {
                            // Claimed as the stop came: given back unread.
                            break;
                        }
                        self.start_waiting(&mut jobs, &mut hands, &on_ending);
                        if full && !hands.waits() {
                            // More may be due: claim again while a slot is free.
                            if self.inner.concurrency.available_permits() > 0 {
                                continue;
                            }
                        }
                    }
                    Err(e) if e.is_unavailable() => {
                        tracing::warn!(
                            worker = %self.worker(),
                            "the task store is unavailable; pausing {}: {e}",
                            crate::human::duration(pause)
                        );
                        tokio::select! {
                            () = tokio::time::sleep(pause) => {}
                            _ = stop.wait_for(|stopped| *stopped) => {}
                        }
                        pause = (pause * 2).min(MAX_STORE_PAUSE);
                        continue;
                    }
                    Err(e) => {
                        self.hand_over(jobs, hands).await;
                        return Err(e);
                    }
                }
            }
            // Sleep until a job ends, the next record is due, a wake, or
            // the stop.
            let wait = if hands.waits() {
                // Records wait for a slot: looked at again before half
                // their lease is gone.
                self.inner.settings.idle.min(self.inner.settings.lease / 4)
            } else if !behind && self.inner.concurrency.available_permits() > 0 {
                self.wait().await
            } else {
                self.inner.settings.idle
            };
            tokio::select! {
                Some(done) = jobs.join_next_with_id(), if !jobs.is_empty() => {
                    self.reaped(done, &mut hands);
                }
                () = tokio::time::sleep(wait) => {}
                () = self.inner.wake.notified() => {}
                _ = stop.wait_for(|stopped| *stopped) => {}
            }
        }
        self.hand_over(jobs, hands).await;
        Ok(())
    }

    /// Starts a job for each waiting record while a slot is free, oldest
    /// due first. A record whose lease ran out while it waited is let go:
    /// it is due, and the next claim (this worker's or another's) takes it.
    fn start_waiting<F, Fut>(
        &self,
        jobs: &mut JoinSet<StoreResult<Worked>>,
        hands: &mut stop::Hands,
        on_ending: &Arc<F>,
    ) where
        F: Fn(Delivery) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        while hands.waits() {
            let Ok(permit) = self.inner.concurrency.clone().try_acquire_owned() else {
                return;
            };
            let Some(record) = hands.next_waiting(SystemTime::now()) else {
                return;
            };
            let this = self.clone();
            let on_ending = on_ending.clone();
            let held = (record.id, record.fence());
            let job =
                jobs.spawn(async move { this.work(record, Some(permit), |d| on_ending(d)).await });
            hands.hold(job.id(), held);
        }
    }

    /// `run`'s share of retention: one batch of delivered records removed,
    /// at most once per `idle` period.
    async fn tidy(&self) {
        let inner = &self.inner;
        if let Some(retention) = &inner.retention
            && retention.turn(inner.settings.idle)
        {
            retention.prune(&inner.store, &inner.settings.worker).await;
        }
    }

    /// Counts a job whose write was refused (`true`) or went through, and
    /// warns once when [`STALE_STREAK`] jobs in a row were refused: a
    /// worker that keeps losing its records to others is likely sharing
    /// its name with another process, or stepping slower than its lease.
    fn stale(&self, refused: bool) {
        use std::sync::atomic::Ordering;
        let streak = &self.inner.stale_streak;
        if !refused {
            streak.store(0, Ordering::Relaxed);
            return;
        }
        meter::stale_write(&self.inner.meter);
        if streak.fetch_add(1, Ordering::Relaxed) + 1 == STALE_STREAK {
            tracing::warn!(
                worker = %self.worker(),
                "{STALE_STREAK} records in a row were taken by another worker before this one \
                 could write them: does another process run under this worker's name, or is \
                 the lease ({}) shorter than a step?",
                crate::human::duration(self.inner.settings.lease)
            );
        }
    }

    /// Logs what a job of `run` came to, and notes whether its record is
    /// still held.
    fn reaped(
        &self,
        done: Result<(tokio::task::Id, StoreResult<Worked>), tokio::task::JoinError>,
        hands: &mut stop::Hands,
    ) {
        match done {
            Ok((job, Ok(Worked::Declined(id, fence)))) => {
                self.stale(false);
                hands.ended(job);
                hands.kept(id, fence);
            }
            Ok((job, Ok(_))) => {
                self.stale(false);
                hands.ended(job);
            }
            Ok((job, Err(e))) if e.is_stale() || e.is_not_found() => {
                if e.is_stale() {
                    self.stale(true);
                    hands.lost_one();
                }
                hands.ended(job);
                tracing::debug!(worker = %self.worker(), "let a record go: {e}");
            }
            Ok((job, Err(e))) => {
                // The lease may still be this worker's: given back on stop.
                hands.cut(job);
                tracing::warn!(worker = %self.worker(), "a tracked task's step failed: {e}");
            }
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => hands.cut(e.id()),
        }
    }

    /// A claimed record, or `None` (logged) when it could not be read.
    fn usable(&self, record: StoreResult<TaskRecord>) -> Option<TaskRecord> {
        match record {
            Ok(record) => Some(record),
            Err(e) => {
                tracing::warn!(worker = %self.worker(), "skipping a task record: {e}");
                None
            }
        }
    }

    /// How long to sleep: until the store's next due moment, at most `idle`.
    async fn wait(&self) -> Duration {
        let idle = self.inner.settings.idle;
        match self.inner.store.next_due().await {
            Ok(Some(at)) => at
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO)
                .clamp(Duration::from_millis(1), idle),
            Ok(None) | Err(_) => idle,
        }
    }

    /// One job: a step of an open task and, if it ended, its delivery; or
    /// the delivery of an ending claimed for it.
    async fn work<F, Fut>(
        &self,
        record: TaskRecord,
        mut slot: saves::Slot,
        on_ending: F,
    ) -> StoreResult<Worked>
    where
        F: FnOnce(Delivery) -> Fut,
        Fut: Future<Output = bool>,
    {
        let record = if record.ending.is_some() {
            record
        } else {
            match self.step(record, &mut slot).await? {
                Some(ended) => ended,
                None => return Ok(Worked::Stepped),
            }
        };
        self.deliver(record, on_ending).await
    }

    /// Hands an ending to the application, under the record's lease (kept
    /// alive while `on_ending` runs), and acknowledges it when asked to.
    async fn deliver<F, Fut>(&self, record: TaskRecord, on_ending: F) -> StoreResult<Worked>
    where
        F: FnOnce(Delivery) -> Fut,
        Fut: Future<Output = bool>,
    {
        // A worker slowed past its lease (a pause, a loaded machine) may
        // find its records taken by others: it delivers none of them.
        let (mut record, fence, until) = self.hold(record).await?;
        let id = record.id;
        let Some(ending) = record.ending.take() else {
            return Ok(Worked::Stepped);
        };
        let delivery = Delivery { record, ending };
        let acknowledged = self.keeping(id, fence, until, on_ending(delivery)).await?;
        meter::delivered(&self.inner.meter, acknowledged);
        if !acknowledged {
            return Ok(Worked::Declined(id, fence));
        }
        self.inner.store.acknowledge(id, fence).await?;
        tracing::info!(record = %id, "a tracked task's ending was delivered");
        Ok(Worked::Delivered)
    }

    /// One pass: claims the due records (at most the batch), steps each
    /// open task once and delivers each ending, at most `concurrency` at a
    /// time, and returns once all of them are done; then, with
    /// [`retain`](TrackerBuilder::retain), removes one batch of old
    /// delivered records. `run` does not wait
    /// for a whole pass (a slow step never holds up the others); a pass
    /// alone suits tests and applications that bring their own schedule.
    /// Endings are delivered one at a time, in the order they came. After
    /// [`shutdown`](Tracker::shutdown), a pass claims nothing.
    ///
    /// # Errors
    ///
    /// The claim failed, or a step failed with a store error other than a
    /// stale lease. Failures of single reads are written into their
    /// records, never returned.
    pub async fn pass<F, Fut>(&self, on_ending: F) -> StoreResult<Pass>
    where
        F: FnMut(Delivery) -> Fut,
        Fut: Future<Output = bool>,
    {
        let mut on_ending = on_ending;
        if *self.inner.stop.borrow() {
            return Ok(Pass::default());
        }
        let records = self.claim(self.inner.settings.batch).await?;
        let mut pass = Pass {
            claimed: records.len(),
            ..Pass::default()
        };
        let mut set = JoinSet::new();
        let mut endings = Vec::new();
        for record in records {
            match record {
                Err(e) => {
                    pass.corrupt += 1;
                    tracing::warn!(worker = %self.worker(), "skipping a task record: {e}");
                }
                Ok(record) if record.ending.is_some() => endings.push(record),
                Ok(record) => {
                    let permit = self.inner.concurrency.clone().acquire_owned().await;
                    let this = self.clone();
                    set.spawn(async move { this.step(record, &mut permit.ok()).await });
                }
            }
        }
        while let Some(done) = set.join_next().await {
            match done {
                Ok(Ok(Some(record))) => {
                    pass.stepped += 1;
                    pass.ended += 1;
                    endings.push(record);
                }
                Ok(Ok(None)) => pass.stepped += 1,
                // Claimed again by another worker, or removed by hand: not
                // this worker's any more.
                Ok(Err(e)) if e.is_stale() || e.is_not_found() => pass.stale += 1,
                Ok(Err(e)) => return Err(e),
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
        for record in endings {
            match self.deliver(record, &mut on_ending).await {
                Ok(Worked::Delivered) => pass.delivered += 1,
                Ok(_) => {}
                Err(e) if e.is_stale() || e.is_not_found() => pass.stale += 1,
                Err(e) => return Err(e),
            }
        }
        if let Some(retention) = &self.inner.retention {
            pass.pruned = retention.prune(&self.inner.store, self.worker()).await;
        }
        Ok(pass)
    }

    /// Makes sure this worker still holds `record` for a while: with less
    /// than half its lease left, the lease is renewed (one statement).
    /// The record, its fence and the lease's end; stale when the lease ran
    /// out, or the renewal was refused because another worker claimed the
    /// record since.
    async fn hold(&self, mut record: TaskRecord) -> StoreResult<(TaskRecord, Fence, SystemTime)> {
        let id = record.id;
        let now = SystemTime::now();
        let Some(lease) = record.lease.as_mut().filter(|l| l.until > now) else {
            return Err(StoreError::stale(id));
        };
        let left = lease.until.duration_since(now).unwrap_or_default();
        if left < self.inner.settings.lease / 2 {
            let until = now + self.inner.settings.lease;
            match self.inner.store.renew(id, lease.fence, until).await {
                Ok(()) => lease.until = until,
                Err(e) if e.is_stale() || e.is_not_found() => return Err(StoreError::stale(id)),
                Err(e) => return Err(e),
            }
        }
        let (fence, until) = (lease.fence, lease.until);
        Ok((record, fence, until))
    }

    async fn claim(&self, limit: usize) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let inner = &self.inner;
        self.take_back().await?;
        let records = inner
            .store
            .claim(Claim {
                worker: &inner.settings.worker,
                limit,
                now: SystemTime::now(),
                lease: inner.settings.lease,
                record: None,
            })
            .await?;
        meter::claimed(&inner.meter, records.len());
        for record in records.iter().flatten() {
            if let Some(from) = taken_over(record, &inner.settings.worker) {
                tracing::info!(
                    worker = %inner.settings.worker,
                    record = %record.id,
                    from = %from,
                    "took over a record whose worker's lease ran out"
                );
            }
        }
        Ok(records)
    }

    /// A client for `server`: the one kept, unless it closed.
    async fn client_for(&self, server: Option<&str>) -> crate::Result<Client> {
        let mut clients = self.inner.clients.lock().await;
        let key = server.map(str::to_owned);
        if let Some(c) = clients.get(&key)
            && c.closed_reason().is_none()
        {
            return Ok(c.clone());
        }
        let client = self.inner.connector.connect(server).await?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// The worker `record` was just taken over from, by `worker`'s claim: a
/// claimed record's history holds only what its claim added.
fn taken_over<'r>(record: &'r TaskRecord, worker: &str) -> Option<&'r str> {
    record.history.entries.iter().find_map(|e| match &e.event {
        super::Event::TakenOver { from, to } if to == worker && from != worker => Some(&**from),
        _ => None,
    })
}
