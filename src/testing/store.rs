//! [`HookedStore`]: a task store that forwards every call to another, with
//! hooks before and after chosen calls.

use std::fmt;
use std::future::{Future, ready};
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use crate::protocol::{InputRequests, InputResponse};
use crate::store::backend::{Claim, Fence, NewTask, Reservation, StepReport};
use crate::store::{
    Answerer, Answers, Counts, Ending, Filter, Forgotten, Questions, RecordId, Schedule,
    StoreError, StoreResult, TaskRecord, TaskStore,
};
use crate::task::TaskRef;

type Pending = Pin<Box<dyn Future<Output = StoreResult<()>> + Send>>;
type Before = dyn Fn(&StoreCall<'_>) -> Pending + Send + Sync;
type After = dyn Fn(&StoreCall<'_>, Result<StoreReply<'_>, &StoreError>) -> Pending + Send + Sync;
type Read = dyn Fn(&StoreCall<'_>, TaskRecord) -> StoreResult<TaskRecord> + Send + Sync;

/// A [`TaskStore`] that forwards every call to an inner store, running
/// hooks around it: to make a store fail (away, a corrupt record, a write
/// that took effect but whose reply was lost), to hold a call until a test
/// lets it go, to count calls or log writes, or to act on the inner store
/// between two steps of a worker (another worker taking a record over).
///
/// Hooks run in the order they were added; each sees the call and its
/// arguments ([`StoreCall`]):
///
/// - [`before`](HookedStore::before) and
///   [`before_async`](HookedStore::before_async) run before the call
///   reaches the inner store; an error is returned in its place and the
///   inner store is not called.
/// - [`read`](HookedStore::read) sees each record a call returns
///   (`get`, `claim`, `list`) and may change it, or put an error in its
///   place (in a batch, the rest stay).
/// - [`after`](HookedStore::after) and
///   [`after_async`](HookedStore::after_async) run once the inner store
///   answered, with its answer ([`StoreReply`], or the error); an error
///   replaces the answer (the call took effect all the same).
///
/// Clones share the inner store (when its clones do) and the hooks.
///
/// `answer` reaches the inner store as `answer_by`, and `counts` as the
/// inner store's own `counts`.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
/// use mcp_tasks::store::{Filter, MemoryStore, StoreError, TaskStore};
/// use mcp_tasks::testing::{HookedStore, StoreCall};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let away = Arc::new(AtomicBool::new(false));
/// let saves = Arc::new(AtomicUsize::new(0));
/// let store = HookedStore::new(MemoryStore::new())
///     // Every call fails while `away` is set.
///     .before({
///         let away = away.clone();
///         move |_| match away.load(Ordering::SeqCst) {
///             true => Err(StoreError::unavailable("connection refused")),
///             false => Ok(()),
///         }
///     })
///     // Count the saves that went through.
///     .after({
///         let saves = saves.clone();
///         move |call, reply| {
///             if matches!(call, StoreCall::Save { .. }) && reply.is_ok() {
///                 saves.fetch_add(1, Ordering::SeqCst);
///             }
///             Ok(())
///         }
///     });
/// assert!(store.list(&Filter::all()).await.is_ok());
/// away.store(true, Ordering::SeqCst);
/// assert!(store.list(&Filter::all()).await.unwrap_err().is_unavailable());
/// assert_eq!(saves.load(Ordering::SeqCst), 0);
/// # }
/// ```
pub struct HookedStore<S> {
    inner: S,
    before: Vec<Arc<Before>>,
    read: Vec<Arc<Read>>,
    after: Vec<Arc<After>>,
}

impl<S: Clone> Clone for HookedStore<S> {
    fn clone(&self) -> Self {
        HookedStore {
            inner: self.inner.clone(),
            before: self.before.clone(),
            read: self.read.clone(),
            after: self.after.clone(),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for HookedStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedStore")
            .field("inner", &self.inner)
            .field("before", &self.before.len())
            .field("read", &self.read.len())
            .field("after", &self.after.len())
            .finish()
    }
}

impl<S> HookedStore<S> {
    /// `inner`, with no hooks yet: every call passes through unchanged.
    pub fn new(inner: S) -> HookedStore<S> {
        HookedStore {
            inner,
            before: Vec::new(),
            read: Vec::new(),
            after: Vec::new(),
        }
    }

    /// The inner store, to look at it or write to it past the hooks.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The inner store, without the hooks.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Runs `hook` before each call; an error is returned in the call's
    /// place, and the inner store is not called.
    pub fn before<F>(mut self, hook: F) -> HookedStore<S>
    where
        F: Fn(&StoreCall<'_>) -> StoreResult<()> + Send + Sync + 'static,
    {
        self.before
            .push(Arc::new(move |call| Box::pin(ready(hook(call)))));
        self
    }

    /// Runs `hook` before each call and waits for the future it returns
    /// (to hold a call until a test lets it go, or to act on the inner
    /// store first); an error is returned in the call's place, and the
    /// inner store is not called. `hook` takes what it needs from the call
    /// before it returns: the future outlives the borrow.
    pub fn before_async<F, Fut>(mut self, hook: F) -> HookedStore<S>
    where
        F: Fn(&StoreCall<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = StoreResult<()>> + Send + 'static,
    {
        self.before.push(Arc::new(move |call| Box::pin(hook(call))));
        self
    }

    /// Passes each record a call returns (`get`, `claim`, `list`) through
    /// `hook`, before the `after` hooks see it: what it returns takes the
    /// record's place. An error in a batch (`claim`, `list`) stands in
    /// for that record alone; from `get`, it is the call's error.
    pub fn read<F>(mut self, hook: F) -> HookedStore<S>
    where
        F: Fn(&StoreCall<'_>, TaskRecord) -> StoreResult<TaskRecord> + Send + Sync + 'static,
    {
        self.read.push(Arc::new(hook));
        self
    }

    /// Runs `hook` after each call, with what the inner store answered;
    /// an error replaces the answer (the call took effect all the same,
    /// as when a reply is lost).
    pub fn after<F>(mut self, hook: F) -> HookedStore<S>
    where
        F: Fn(&StoreCall<'_>, Result<StoreReply<'_>, &StoreError>) -> StoreResult<()>
            + Send
            + Sync
            + 'static,
    {
        self.after.push(Arc::new(move |call, reply| {
            Box::pin(ready(hook(call, reply)))
        }));
        self
    }

    /// [`after`](HookedStore::after), waiting for the future `hook`
    /// returns before the answer is handed back. `hook` takes what it
    /// needs from the call and the answer before it returns.
    pub fn after_async<F, Fut>(mut self, hook: F) -> HookedStore<S>
    where
        F: Fn(&StoreCall<'_>, Result<StoreReply<'_>, &StoreError>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = StoreResult<()>> + Send + 'static,
    {
        self.after
            .push(Arc::new(move |call, reply| Box::pin(hook(call, reply))));
        self
    }
}

/// A call made to a [`HookedStore`], with its arguments, as its hooks see
/// it: one variant per [`TaskStore`] method, named after it.
#[derive(Debug, Clone)]
#[non_exhaustive]
#[allow(
    missing_docs,
    reason = "the fields are the method's arguments, named as there"
)]
pub enum StoreCall<'a> {
    /// [`TaskStore::insert`].
    Insert {
        /// The task to record.
        task: &'a NewTask,
    },
    /// [`TaskStore::get`].
    Get {
        /// The record.
        id: RecordId,
    },
    /// [`TaskStore::reserve`].
    Reserve {
        /// The task to record.
        task: &'a NewTask,
        /// The worker's name.
        worker: &'a str,
        /// When the lease runs out.
        until: SystemTime,
    },
    /// [`TaskStore::start`].
    Start {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
        /// The task the call started.
        reference: &'a TaskRef,
        /// The task's schedule.
        schedule: &'a Schedule,
        /// What the step found.
        progress: &'a StepReport,
    },
    /// [`TaskStore::claim`].
    Claim {
        /// The claim.
        claim: &'a Claim<'a>,
    },
    /// [`TaskStore::renew`].
    Renew {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
        /// When the lease runs out.
        until: SystemTime,
    },
    /// [`TaskStore::release`].
    Release {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
    },
    /// [`TaskStore::release_worker`].
    ReleaseWorker {
        /// The worker's name.
        worker: &'a str,
    },
    /// [`TaskStore::ask`].
    Ask {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
        /// The questions a read showed.
        asked: &'a InputRequests,
        /// The clock.
        now: SystemTime,
    },
    /// [`TaskStore::answer_by`] (and [`TaskStore::answer`], which calls it).
    AnswerBy {
        /// The record.
        id: RecordId,
        /// The question's key.
        key: &'a str,
        /// The answer.
        response: &'a InputResponse,
        /// Who answered.
        by: Answerer,
        /// The clock.
        now: SystemTime,
    },
    /// [`TaskStore::record_answer`].
    RecordAnswer {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
        /// The question's key.
        key: &'a str,
        /// The answer.
        response: &'a InputResponse,
    },
    /// [`TaskStore::save`].
    Save {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
        /// What the step found.
        progress: &'a StepReport,
    },
    /// [`TaskStore::save_all`]: its `before` hooks run before, its
    /// `after` hooks after, each of its saves passes as a
    /// [`Save`](StoreCall::Save) of its own.
    SaveAll {
        /// The saves, in the order given.
        saves: &'a [(RecordId, Fence, StepReport)],
    },
    /// [`TaskStore::finish`].
    Finish {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
        /// How the task ended.
        ending: &'a Ending,
    },
    /// [`TaskStore::acknowledge`].
    Acknowledge {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
    },
    /// [`TaskStore::request_cancel`].
    RequestCancel {
        /// The record.
        id: RecordId,
        /// The clock.
        now: SystemTime,
    },
    /// [`TaskStore::remove`].
    Remove {
        /// The record.
        id: RecordId,
        /// The lease's fencing token.
        fence: Fence,
    },
    /// [`TaskStore::forget`].
    Forget {
        /// The record.
        id: RecordId,
        /// The clock.
        now: SystemTime,
    },
    /// [`TaskStore::prune`].
    Prune {
        /// Records last changed before this.
        older_than: SystemTime,
        /// At most this many.
        limit: usize,
    },
    /// [`TaskStore::list`].
    List {
        /// Which records.
        filter: &'a Filter,
    },
    /// [`TaskStore::counts`].
    Counts {
        /// Open records due before this are overdue.
        overdue_before: SystemTime,
    },
    /// [`TaskStore::next_due`].
    NextDue,
}

impl StoreCall<'_> {
    /// The method's name, as [`TaskStore`] spells it (`"save"`,
    /// `"record_answer"`).
    pub fn name(&self) -> &'static str {
        match self {
            StoreCall::Insert { .. } => "insert",
            StoreCall::Get { .. } => "get",
            StoreCall::Reserve { .. } => "reserve",
            StoreCall::Start { .. } => "start",
            StoreCall::Claim { .. } => "claim",
            StoreCall::Renew { .. } => "renew",
            StoreCall::Release { .. } => "release",
            StoreCall::ReleaseWorker { .. } => "release_worker",
            StoreCall::Ask { .. } => "ask",
            StoreCall::AnswerBy { .. } => "answer_by",
            StoreCall::RecordAnswer { .. } => "record_answer",
            StoreCall::Save { .. } => "save",
            StoreCall::SaveAll { .. } => "save_all",
            StoreCall::Finish { .. } => "finish",
            StoreCall::Acknowledge { .. } => "acknowledge",
            StoreCall::RequestCancel { .. } => "request_cancel",
            StoreCall::Remove { .. } => "remove",
            StoreCall::Forget { .. } => "forget",
            StoreCall::Prune { .. } => "prune",
            StoreCall::List { .. } => "list",
            StoreCall::Counts { .. } => "counts",
            StoreCall::NextDue => "next_due",
        }
    }

    /// The record the call is about, for a call about one record.
    pub fn id(&self) -> Option<RecordId> {
        match *self {
            StoreCall::Get { id }
            | StoreCall::Start { id, .. }
            | StoreCall::Renew { id, .. }
            | StoreCall::Release { id, .. }
            | StoreCall::Ask { id, .. }
            | StoreCall::AnswerBy { id, .. }
            | StoreCall::RecordAnswer { id, .. }
            | StoreCall::Save { id, .. }
            | StoreCall::Finish { id, .. }
            | StoreCall::Acknowledge { id, .. }
            | StoreCall::RequestCancel { id, .. }
            | StoreCall::Remove { id, .. }
            | StoreCall::Forget { id, .. } => Some(id),
            StoreCall::Claim { claim } => claim.record,
            _ => None,
        }
    }

    /// The fence the call writes under, for a write under a lease.
    pub fn fence(&self) -> Option<Fence> {
        match *self {
            StoreCall::Start { fence, .. }
            | StoreCall::Renew { fence, .. }
            | StoreCall::Release { fence, .. }
            | StoreCall::Ask { fence, .. }
            | StoreCall::RecordAnswer { fence, .. }
            | StoreCall::Save { fence, .. }
            | StoreCall::Finish { fence, .. }
            | StoreCall::Acknowledge { fence, .. }
            | StoreCall::Remove { fence, .. } => Some(fence),
            _ => None,
        }
    }
}

/// What the inner store of a [`HookedStore`] answered, as its `after`
/// hooks see it: one variant per return type of the [`TaskStore`]
/// methods.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum StoreReply<'a> {
    /// Nothing but success (`start`, `renew`, `release`, `answer_by`,
    /// `save`, `finish`, `acknowledge`, `remove`).
    Done,
    /// The new record's key (`insert`).
    Id(RecordId),
    /// The record, if there is one (`get`).
    Record(Option<&'a TaskRecord>),
    /// What `reserve` found.
    Reservation(&'a Reservation),
    /// The records (`claim`, `list`), each as the `read` hooks left it.
    Records(&'a [StoreResult<TaskRecord>]),
    /// How many (`release_worker`, `prune`).
    Count(u64),
    /// The record's questions and answers as they stand (`ask`).
    Questions(&'a Questions, &'a Answers),
    /// The answer that stands (`record_answer`).
    Answer(&'a InputResponse),
    /// Whether a cancel was asked for (`request_cancel`).
    Cancel(bool),
    /// What `forget` did.
    Forgotten(&'a Forgotten),
    /// The counts (`counts`).
    Counts(&'a Counts),
    /// The earliest moment a record becomes claimable (`next_due`).
    Due(Option<SystemTime>),
}

/// A method's answer, as a [`StoreReply`].
trait Reply {
    fn reply(&self) -> StoreReply<'_>;
}

impl Reply for () {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Done
    }
}
impl Reply for RecordId {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Id(*self)
    }
}
impl Reply for Option<TaskRecord> {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Record(self.as_ref())
    }
}
impl Reply for Reservation {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Reservation(self)
    }
}
impl Reply for Vec<StoreResult<TaskRecord>> {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Records(self)
    }
}
impl Reply for u64 {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Count(*self)
    }
}
impl Reply for usize {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Count(*self as u64)
    }
}
impl Reply for (Questions, Answers) {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Questions(&self.0, &self.1)
    }
}
impl Reply for InputResponse {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Answer(self)
    }
}
impl Reply for bool {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Cancel(*self)
    }
}
impl Reply for Forgotten {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Forgotten(self)
    }
}
impl Reply for Counts {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Counts(self)
    }
}
impl Reply for Option<SystemTime> {
    fn reply(&self) -> StoreReply<'_> {
        StoreReply::Due(*self)
    }
}

impl<S> HookedStore<S> {
    async fn before_call(&self, call: &StoreCall<'_>) -> StoreResult<()> {
        for hook in &self.before {
            hook(call).await?;
        }
        Ok(())
    }

    async fn after_call<T: Reply>(
        &self,
        call: &StoreCall<'_>,
        answer: StoreResult<T>,
    ) -> StoreResult<T> {
        for hook in &self.after {
            let replaced = match &answer {
                Ok(value) => hook(call, Ok(value.reply())).await,
                Err(e) => hook(call, Err(e)).await,
            };
            replaced?;
        }
        answer
    }

    fn read_one(&self, call: &StoreCall<'_>, record: TaskRecord) -> StoreResult<TaskRecord> {
        self.read
            .iter()
            .try_fold(record, |record, hook| hook(call, record))
    }

    fn read_all(
        &self,
        call: &StoreCall<'_>,
        records: Vec<StoreResult<TaskRecord>>,
    ) -> Vec<StoreResult<TaskRecord>> {
        records
            .into_iter()
            .map(|r| r.and_then(|r| self.read_one(call, r)))
            .collect()
    }
}

impl<S: TaskStore> TaskStore for HookedStore<S> {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        let seen = task.clone();
        let call = StoreCall::Insert { task: &seen };
        self.before_call(&call).await?;
        let answer = self.inner.insert(task).await;
        self.after_call(&call, answer).await
    }

    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        let call = StoreCall::Get { id };
        self.before_call(&call).await?;
        let answer = match self.inner.get(id).await {
            Ok(record) => record.map(|r| self.read_one(&call, r)).transpose(),
            Err(e) => Err(e),
        };
        self.after_call(&call, answer).await
    }

    async fn reserve(
        &self,
        task: NewTask,
        worker: &str,
        until: SystemTime,
    ) -> StoreResult<Reservation> {
        let seen = task.clone();
        let call = StoreCall::Reserve {
            task: &seen,
            worker,
            until,
        };
        self.before_call(&call).await?;
        let answer = self.inner.reserve(task, worker, until).await;
        self.after_call(&call, answer).await
    }

    async fn start(
        &self,
        id: RecordId,
        fence: Fence,
        reference: &TaskRef,
        schedule: &Schedule,
        progress: StepReport,
    ) -> StoreResult<()> {
        let seen = progress.clone();
        let call = StoreCall::Start {
            id,
            fence,
            reference,
            schedule,
            progress: &seen,
        };
        self.before_call(&call).await?;
        let answer = self
            .inner
            .start(id, fence, reference, schedule, progress)
            .await;
        self.after_call(&call, answer).await
    }

    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let seen = claim.clone();
        let call = StoreCall::Claim { claim: &seen };
        self.before_call(&call).await?;
        let answer = self
            .inner
            .claim(claim)
            .await
            .map(|records| self.read_all(&call, records));
        self.after_call(&call, answer).await
    }

    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        let call = StoreCall::Renew { id, fence, until };
        self.before_call(&call).await?;
        let answer = self.inner.renew(id, fence, until).await;
        self.after_call(&call, answer).await
    }

    async fn release(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let call = StoreCall::Release { id, fence };
        self.before_call(&call).await?;
        let answer = self.inner.release(id, fence).await;
        self.after_call(&call, answer).await
    }

    async fn release_worker(&self, worker: &str) -> StoreResult<u64> {
        let call = StoreCall::ReleaseWorker { worker };
        self.before_call(&call).await?;
        let answer = self.inner.release_worker(worker).await;
        self.after_call(&call, answer).await
    }

    async fn ask(
        &self,
        id: RecordId,
        fence: Fence,
        asked: &InputRequests,
        now: SystemTime,
    ) -> StoreResult<(Questions, Answers)> {
        let call = StoreCall::Ask {
            id,
            fence,
            asked,
            now,
        };
        self.before_call(&call).await?;
        let answer = self.inner.ask(id, fence, asked, now).await;
        self.after_call(&call, answer).await
    }

    async fn answer_by(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        by: Answerer,
        now: SystemTime,
    ) -> StoreResult<()> {
        let call = StoreCall::AnswerBy {
            id,
            key,
            response,
            by,
            now,
        };
        self.before_call(&call).await?;
        let answer = self.inner.answer_by(id, key, response, by, now).await;
        self.after_call(&call, answer).await
    }

    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<InputResponse> {
        let call = StoreCall::RecordAnswer {
            id,
            fence,
            key,
            response,
        };
        self.before_call(&call).await?;
        let answer = self.inner.record_answer(id, fence, key, response).await;
        self.after_call(&call, answer).await
    }

    async fn save(&self, id: RecordId, fence: Fence, progress: StepReport) -> StoreResult<()> {
        let seen = progress.clone();
        let call = StoreCall::Save {
            id,
            fence,
            progress: &seen,
        };
        self.before_call(&call).await?;
        let answer = self.inner.save(id, fence, progress).await;
        self.after_call(&call, answer).await
    }

    /// The hooks see the whole as a [`StoreCall::SaveAll`], and each save
    /// as a [`StoreCall::Save`] of its own: every save's `before` hooks
    /// run (one after another, in order), the saves they let through go
    /// to the inner store's `save_all` together, and each answer passes
    /// its save's `after` hooks. A fault a hook puts into `save` reaches
    /// saves written together too.
    async fn save_all(&self, saves: Vec<(RecordId, Fence, StepReport)>) -> Vec<StoreResult<()>> {
        let call = StoreCall::SaveAll { saves: &saves };
        if let Err(e) = self.before_call(&call).await {
            return saves.iter().map(|_| Err(e.again())).collect();
        }
        let mut answers: Vec<Option<StoreResult<()>>> = saves.iter().map(|_| None).collect();
        let (mut through, mut at) = (Vec::new(), Vec::new());
        for (i, (id, fence, progress)) in saves.iter().enumerate() {
            let one = StoreCall::Save {
                id: *id,
                fence: *fence,
                progress,
            };
            match self.before_call(&one).await {
                Ok(()) => {
                    through.push((*id, *fence, progress.clone()));
                    at.push(i);
                }
                Err(e) => answers[i] = Some(Err(e)),
            }
        }
        let written = self.inner.save_all(through).await;
        for (i, answer) in at.into_iter().zip(written) {
            let (id, fence, progress) = &saves[i];
            let one = StoreCall::Save {
                id: *id,
                fence: *fence,
                progress,
            };
            answers[i] = Some(self.after_call(&one, answer).await);
        }
        let answers: Vec<StoreResult<()>> = answers
            .into_iter()
            .map(|a| {
                a.unwrap_or_else(|| {
                    Err(StoreError::other("the inner store left a save unanswered"))
                })
            })
            .collect();
        match self.after_call(&call, Ok(())).await {
            Ok(()) => answers,
            Err(e) => answers.iter().map(|_| Err(e.again())).collect(),
        }
    }

    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        let call = StoreCall::Finish { id, fence, ending };
        self.before_call(&call).await?;
        let answer = self.inner.finish(id, fence, ending).await;
        self.after_call(&call, answer).await
    }

    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let call = StoreCall::Acknowledge { id, fence };
        self.before_call(&call).await?;
        let answer = self.inner.acknowledge(id, fence).await;
        self.after_call(&call, answer).await
    }

    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        let call = StoreCall::RequestCancel { id, now };
        self.before_call(&call).await?;
        let answer = self.inner.request_cancel(id, now).await;
        self.after_call(&call, answer).await
    }

    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let call = StoreCall::Remove { id, fence };
        self.before_call(&call).await?;
        let answer = self.inner.remove(id, fence).await;
        self.after_call(&call, answer).await
    }

    async fn forget(&self, id: RecordId, now: SystemTime) -> StoreResult<Forgotten> {
        let call = StoreCall::Forget { id, now };
        self.before_call(&call).await?;
        let answer = self.inner.forget(id, now).await;
        self.after_call(&call, answer).await
    }

    async fn prune(&self, older_than: SystemTime, limit: usize) -> StoreResult<usize> {
        let call = StoreCall::Prune { older_than, limit };
        self.before_call(&call).await?;
        let answer = self.inner.prune(older_than, limit).await;
        self.after_call(&call, answer).await
    }

    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let call = StoreCall::List { filter };
        self.before_call(&call).await?;
        let answer = self
            .inner
            .list(filter)
            .await
            .map(|records| self.read_all(&call, records));
        self.after_call(&call, answer).await
    }

    async fn counts(&self, overdue_before: SystemTime) -> StoreResult<Counts> {
        let call = StoreCall::Counts { overdue_before };
        self.before_call(&call).await?;
        let answer = self.inner.counts(overdue_before).await;
        self.after_call(&call, answer).await
    }

    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        let call = StoreCall::NextDue;
        self.before_call(&call).await?;
        let answer = self.inner.next_due().await;
        self.after_call(&call, answer).await
    }
}
