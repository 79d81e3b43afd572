//! `Core`: what every handle holds, whatever its state, and every request
//! a handle makes. Its fields are private: the wait loop, the builder and
//! the handles go through the methods below, and every task-level request
//! goes through the client's wire.

use std::time::Duration;

use tokio::time::Instant;

use super::machine::{Machine, Transition};
use super::observed::Observed;
use super::outcome::Outcome;
use super::schedule::{After, seed_of};
use super::settings::{HandleSettings, InputMode, Settings};
use super::trace::{End, Trace};
use crate::Client;
use crate::client::connection::Pump;
use crate::client::{NewTask, TaskHold, Watch};
use crate::error::Result;
use crate::protocol::{
    DetailedTask, InputRequests, InputResponses, TaskId, TaskInfo, TaskPayload, TaskStatus,
};

/// What every handle holds, whatever its state.
pub(crate) struct Core {
    settings: HandleSettings,
    /// `None` only for an immediate (non-task) result.
    id: Option<TaskId>,
    machine: Machine,
    snapshot: TaskInfo,
    /// When the task was last read (or pushed); `None` means read at once.
    last_read: Option<Instant>,
    /// When the `with_ttl` lifetime passes.
    expires_at: Option<Instant>,
    /// Whether dropping the handle may send `tasks/cancel`.
    armed: bool,
    /// The registration with the listen watcher, while listening.
    watch: Option<Box<Watch>>,
    /// Listening was tried and fell back to polling for this task.
    listen_failed: bool,
    /// A read due soon after a write (`tasks/update`, `tasks/cancel`), once.
    read_soon: Option<Instant>,
    /// An unknown status was reported for this task already.
    warned_unknown: bool,
    /// Counts the snapshots that changed the status or its message.
    changes: u32,
    /// The era's hold on the task while the handle lives (a 2025-11-25
    /// session keeps the task's input requests for it).
    _hold: Option<TaskHold>,
    /// Progress reports still going to the builder's callback (a 2025-11-25
    /// task keeps its call's token).
    progress: Option<Pump>,
    /// The task span, while the handle lives and a subscriber wants it.
    trace: Option<Box<Trace>>,
}

impl Core {
    /// The core of a call that completed at once, without a task.
    pub(crate) fn immediate(settings: Settings, trace: Option<Box<Trace>>) -> Box<Core> {
        let status = TaskStatus::Completed;
        if let Some(t) = &trace {
            t.created(&settings.client, None, status);
        }
        Box::new(Core {
            settings: HandleSettings::from(settings),
            id: None,
            machine: Machine::finished(),
            snapshot: TaskInfo::new(status),
            last_read: None,
            expires_at: None,
            armed: false,
            watch: None,
            listen_failed: false,
            read_soon: None,
            warned_unknown: false,
            changes: 0,
            _hold: None,
            progress: None,
            trace,
        })
    }

    /// The core of a task a `tools/call` just created. Its `with_ttl`
    /// lifetime starts now; a seed that is not `working` is due for a read
    /// at once (the creation result carries no payload).
    pub(crate) fn created(
        settings: Settings,
        task: NewTask,
        trace: Option<Box<Trace>>,
    ) -> Box<Core> {
        let NewTask {
            created,
            hold,
            progress,
        } = task;
        let seed = created.info.status;
        if let Some(t) = &trace {
            t.created(&settings.client, Some(&created.task_id), seed);
        }
        let fresh = (seed == TaskStatus::Working).then(Instant::now);
        Core::live(
            settings,
            created.task_id.clone(),
            created.info,
            fresh,
            (hold, progress),
            trace,
        )
    }

    /// The core of a task re-attached to with one read, `snapshot`, and
    /// held by `hold` since before that read; the snapshot is applied. Its `with_ttl` lifetime starts now.
    pub(crate) fn resumed(
        settings: Settings,
        id: TaskId,
        hold: Option<TaskHold>,
        snapshot: DetailedTask,
        trace: Option<Box<Trace>>,
    ) -> (Box<Core>, Observed) {
        // The snapshot below replaces the placeholder; the span learns of
        // it afterwards, as the task's first status, not as a change.
        let mut core = Core::live(
            settings,
            id,
            TaskInfo::new(TaskStatus::Working),
            Some(Instant::now()),
            (hold, None),
            None,
        );
        let observed = core.apply(snapshot).unwrap_or(Observed::Pending);
        if let Some(t) = trace {
            t.resumed(core.client(), core.snapshot.status);
            core.trace = Some(t);
        }
        (core, observed)
    }

    /// A core for task `id`, keeping what its era keeps for it (`kept`:
    /// the hold, and the call's progress reports).
    fn live(
        settings: Settings,
        id: TaskId,
        snapshot: TaskInfo,
        last_read: Option<Instant>,
        kept: (Option<TaskHold>, Option<Pump>),
        trace: Option<Box<Trace>>,
    ) -> Box<Core> {
        let now = Instant::now();
        let (hold, progress) = kept;
        Box::new(Core {
            // A lifetime too long to count is no lifetime.
            expires_at: settings.ttl.and_then(|d| now.checked_add(d)),
            _hold: hold,
            progress,
            settings: HandleSettings::from(settings),
            id: Some(id),
            machine: Machine::new(),
            snapshot,
            last_read,
            armed: true,
            watch: None,
            listen_failed: false,
            read_soon: None,
            warned_unknown: false,
            changes: 0,
            trace,
        })
    }

    pub(crate) fn settings(&self) -> &HandleSettings {
        &self.settings
    }

    pub(crate) fn client(&self) -> &Client {
        &self.settings.client
    }

    /// The id, `None` for an immediate result.
    pub(crate) fn id(&self) -> Option<&TaskId> {
        self.id.as_ref()
    }

    /// The id of a task that exists on the server.
    pub(crate) fn task_id(&self) -> &TaskId {
        self.id
            .as_ref()
            .expect("only immediate results have no id, and they are never waited on")
    }

    pub(crate) fn snapshot(&self) -> &TaskInfo {
        &self.snapshot
    }

    /// How many applied snapshots changed the status or its message: a
    /// wait for the next change compares counts, not copies of the message.
    pub(crate) fn changes(&self) -> u32 {
        self.changes
    }

    /// A clone of the task span, to run a wait or a request in; `None`
    /// when no subscriber wanted the span.
    pub(crate) fn span(&self) -> Option<tracing::Span> {
        self.trace.as_ref().map(|t| t.span().clone())
    }

    /// Ends the task span (once), recording how the handle's life ended.
    pub(crate) fn end_trace(&mut self, end: End) {
        if let Some(t) = self.trace.take() {
            drop(t.end(end));
        }
    }

    /// How long after `after` the next read comes, by the shared schedule.
    fn after(&self, after: After) -> Duration {
        // Only a failure's backoff draws on the seed (its jitter).
        let seed = match after {
            After::Failure { .. } => self.id.as_ref().map_or(0, |id| seed_of(id.expose())),
            After::Read | After::Write => 0,
        };
        self.settings
            .rules
            .delay(self.snapshot.poll_interval_ms, after, seed)
    }

    /// When the `with_ttl` lifetime passes.
    pub(crate) fn expires_at(&self) -> Option<Instant> {
        self.expires_at
    }

    /// When the next read is due by the schedule alone: one interval after
    /// the last read (`now` if there was none). `None` while a confirmed
    /// listen stream keeps the task current. `far` stands for a moment too
    /// far to count.
    pub(crate) fn scheduled_read(
        &self,
        listening: bool,
        now: Instant,
        far: Instant,
    ) -> Option<Instant> {
        match self.last_read {
            _ if listening => None,
            Some(at) => Some(at.checked_add(self.after(After::Read)).unwrap_or(far)),
            None => Some(now),
        }
    }

    /// The one read due soon after a write, if any. Pushes show a write's
    /// effect to a confirmed listener, so it has none.
    pub(crate) fn soon_read(&self, listening: bool) -> Option<Instant> {
        self.read_soon.filter(|_| !listening)
    }

    /// Whether a wait may answer these requests itself: input is not
    /// manual, the round is within [`MAX_INPUTS_PER_ROUND`](crate::input::MAX_INPUTS_PER_ROUND),
    /// and a handler answers every one of them.
    pub(crate) fn can_answer(&self, requests: &InputRequests) -> bool {
        let handlers = self.client().handlers();
        self.settings.input != InputMode::Manual
            && crate::input::InputHandlers::answers_round_of(requests.len())
            && requests.values().all(|r| handlers.can_answer(r))
    }

    /// The keys of `requests` not answered yet.
    pub(crate) fn unanswered(&self, requests: &InputRequests) -> InputRequests {
        self.machine.ledger().unanswered(requests)
    }

    // ---- listening ----------------------------------------------------

    /// Registers with the listen watcher when the handle listens and has
    /// not fallen back to polling.
    pub(crate) fn ensure_watch(&mut self) {
        if self.settings.listen && !self.listen_failed && self.watch.is_none() {
            let id = self.task_id().clone();
            self.watch = self.client().wire().watch(id).map(Box::new);
            self.listen_failed = self.watch.is_none();
        }
    }

    /// Whether a stream that accepted the task keeps it current.
    pub(crate) fn listening(&self) -> bool {
        self.watch.as_deref().is_some_and(Watch::confirmed)
    }

    pub(crate) fn watch_mut(&mut self) -> Option<&mut Watch> {
        self.watch.as_deref_mut()
    }

    /// The stream did not accept the task: poll, but keep the registration,
    /// since pushes the server sends anyway (on another stream, or
    /// untagged) still save reads.
    pub(crate) fn listen_refused(&mut self) {
        tracing::debug!(task = ?self.task_id(), "the stream did not accept the task; polling");
        if let Some(w) = self.watch.as_mut() {
            w.unconfirm();
        }
        self.listen_failed = true;
    }

    /// The stream (or the watcher) is gone: poll.
    pub(crate) fn listen_ended(&mut self) {
        tracing::debug!(task = ?self.task_id(), "not listening; polling instead");
        self.watch = None;
        self.listen_failed = true;
    }

    /// Applies a pushed snapshot; an applied push counts as a read.
    pub(crate) fn apply_push(&mut self, task: DetailedTask) -> Option<Observed> {
        let next = self.apply(task)?;
        self.last_read = Some(Instant::now());
        self.read_soon = None;
        Some(next)
    }

    // ---- snapshots ----------------------------------------------------

    /// Applies a detailed snapshot. `None` when the machine rejected it.
    pub(crate) fn apply(&mut self, task: DetailedTask) -> Option<Observed> {
        let was_final = self.machine.is_final();
        let mut moved = None;
        match self.machine.observe(self.snapshot.status, task.status()) {
            Transition::Rejected { current, claimed } => {
                tracing::warn!(
                    task = ?task.task_id,
                    "ignoring a snapshot that breaks the task state machine ({current} -> {claimed})"
                );
                return None;
            }
            // A repeat of the final snapshot: the first one won.
            Transition::Same if was_final => return None,
            Transition::Same => {}
            Transition::Moved { from, to } => moved = Some((from, to)),
        }
        let DetailedTask {
            info: snapshot,
            payload,
            ..
        } = task;
        if (snapshot.status, &snapshot.status_message)
            != (self.snapshot.status, &self.snapshot.status_message)
        {
            self.changes = self.changes.wrapping_add(1);
        }
        self.snapshot = snapshot;
        let observed = self.observe(payload);
        if let (Some(t), Some((from, to))) = (&self.trace, moved) {
            let open = match &observed {
                Observed::InputRequired(open) => open.len(),
                _ => 0,
            };
            t.moved(from, to, open);
        }
        Some(observed)
    }

    /// What a snapshot's payload means for the handle.
    fn observe(&mut self, payload: TaskPayload) -> Observed {
        match payload {
            TaskPayload::Working => Observed::Pending,
            TaskPayload::InputRequired(requests) => {
                let open = self.unanswered(&requests);
                if open.is_empty() {
                    Observed::Pending
                } else {
                    Observed::InputRequired(open)
                }
            }
            TaskPayload::Completed(r) => Observed::Finished(Box::new(Outcome::Completed(r))),
            TaskPayload::Failed(e) => Observed::Finished(Box::new(Outcome::Failed(e))),
            TaskPayload::Cancelled => Observed::Finished(Box::new(Outcome::Cancelled)),
            TaskPayload::Unknown(raw) => {
                if !self.warned_unknown {
                    self.warned_unknown = true;
                    tracing::warn!(
                        task = ?self.id,
                        status = %raw,
                        "the server sent a task status this client does not know; \
                         treating the task as still running"
                    );
                }
                Observed::Pending
            }
        }
    }

    /// Marks the handle finished with `outcome`: nothing more is sent for
    /// it, on drop or otherwise.
    pub(crate) fn finish(&mut self, outcome: &Outcome) {
        self.armed = false;
        self.watch = None;
        self.progress = None;
        if let Outcome::Expired = outcome {
            self.snapshot.status = TaskStatus::Cancelled;
        }
        self.end_trace(End::of(outcome));
    }

    /// The handle is let go on purpose (after a cancel, or detached):
    /// dropping it sends nothing more, and the span records `end`.
    /// Hands over the snapshot, leaving only its status (for a handle
    /// about to be let go).
    pub(crate) fn take_snapshot(&mut self) -> TaskInfo {
        let status = self.snapshot.status;
        std::mem::replace(&mut self.snapshot, TaskInfo::new(status))
    }

    pub(crate) fn disarm(&mut self, end: End) {
        self.armed = false;
        self.end_trace(end);
    }

    // ---- requests -----------------------------------------------------

    /// One read, applied. `Ok(None)` when the snapshot was ignored.
    pub(crate) async fn read_within(&mut self, timeout: Duration) -> Result<Option<Observed>> {
        if let Some(t) = self.trace.as_mut() {
            t.read();
        }
        let task = self.client().wire().read(self.task_id(), timeout).await?;
        self.last_read = Some(Instant::now());
        self.read_soon = None;
        Ok(self.apply(task))
    }

    pub(crate) async fn read(&mut self) -> Result<Option<Observed>> {
        let t = self.settings.request_timeout();
        self.read_within(t).await
    }

    /// Sends answers and, once the server acknowledged them, records their
    /// keys (never answered again) and schedules a read soon.
    pub(crate) async fn send_answers(&mut self, responses: &InputResponses) -> Result<()> {
        let timeout = self.settings.request_timeout();
        self.client()
            .wire()
            .answer(self.task_id(), responses, timeout)
            .await?;
        self.machine.ledger_mut().record(responses);
        if let Some(t) = self.trace.as_mut() {
            t.answered(responses.len());
        }
        self.wrote();
        Ok(())
    }

    /// Sends a cancel; an unknown task means there is nothing to cancel.
    /// Once acknowledged, a read is due soon.
    pub(crate) async fn send_cancel(&mut self) -> Result<()> {
        let timeout = self.settings.request_timeout();
        match self.client().wire().cancel(self.task_id(), timeout).await {
            Err(e) if e.is_task_not_found() => Ok(()),
            Err(e) => Err(e),
            Ok(()) => {
                if let Some(t) = &self.trace {
                    t.cancel_sent();
                }
                self.wrote();
                Ok(())
            }
        }
    }

    /// Schedules one read soon after a write the server acknowledged, so
    /// its effect is seen without waiting a whole interval: at the floor
    /// (`min_poll_interval`) from now.
    fn wrote(&mut self) {
        self.read_soon = Instant::now().checked_add(self.after(After::Write));
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // The span stays open while the cancel below is sent, so that its
        // request is a child of the task span.
        let span = self.trace.take().map(|t| t.end(End::Dropped));
        if !(self.armed && self.settings.cancel_on_drop) {
            return;
        }
        let (Some(id), Ok(rt)) = (self.id.clone(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let client = self.settings.client.clone();
        let timeout = self.settings.request_timeout();
        tracing::debug!(task = ?id, "handle dropped; cancelling the task");
        let cancel = async move {
            if let Err(e) = client.wire().cancel(&id, timeout).await {
                tracing::debug!(task = ?id, "cancel on drop failed: {e}");
            }
        };
        match span {
            Some(span) => rt.spawn(tracing::Instrument::instrument(cancel, span)),
            None => rt.spawn(cancel),
        };
    }
}
