//! Starting and taking back: `call_tool` (once per unique key), `track`,
//! a cancel or an answer from this process, and `take`, which turns a
//! record back into a live handle.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::super::{
    Claim, Ending, Fence, NewTask, RecordId, Reservation, Schedule, StepReport, StoreError,
    StoreResult, TaskRecord, TaskStore,
};
use super::{Connector, Label, TrackError, Tracker, Tracking};
use crate::protocol::TaskInfo;
use crate::protocol::{InputResponse, TaskId, TaskStatus};
use crate::task::task_builder::IsComplete;
use crate::task::{TaskBuilder, TaskRef, TaskState};

impl<S: TaskStore, C: Connector> Tracker<S, C> {
    /// Calls a tool and tracks the task it starts: the record is inserted
    /// as soon as the server's answer is read, before anything else is
    /// awaited, so the window in which a crash loses the task is the time
    /// of one insert. `tool` is the tool's name, or a [`Label`] with the
    /// name and the caller's key and scope:
    ///
    /// ```no_run
    /// # async fn f(tracker: mcp_tasks::store::Tracker<mcp_tasks::store::MemoryStore, mcp_tasks::Client>, client: mcp_tasks::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_tasks::store::Label;
    /// tracker.call_tool(client.task(), "export", ()).await?;
    /// tracker
    ///     .call_tool(client.task(), Label::tool("export").key("order-17").scope("acme"), ())
    ///     .await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`TrackError::call_error`] as [`TaskBuilder::call_tool`];
    /// [`TrackError::store_error`] when the insert failed, with the live
    /// handle in [`TrackError::into_task`].
    pub async fn call_tool<B: IsComplete>(
        &self,
        task: TaskBuilder<B>,
        tool: impl Into<Label>,
        arguments: impl Serialize,
    ) -> Result<Tracking, TrackError> {
        let label = tool.into();
        if label.key.is_some() && !label.shared_key {
            return self.call_once(task, label, arguments).await;
        }
        let state = task.call_tool(&label.tool, arguments).await?;
        self.track(state, label).await
    }

    /// [`call_tool`](Tracker::call_tool) for a unique key: the key is
    /// reserved in the store first, so that one call is made for it,
    /// however many processes start it and whenever they crash.
    async fn call_once<B: IsComplete>(
        &self,
        task: TaskBuilder<B>,
        label: Label,
        arguments: impl Serialize,
    ) -> Result<Tracking, TrackError> {
        let inner = &self.inner;
        // Before this worker holds anything: what the name held before is
        // given back, never what this process reserves.
        self.take_back().await?;
        let now = SystemTime::now();
        let until = now + inner.settings.lease;
        let reservation = NewTask {
            reference: TaskRef::new(TaskId::new(String::new()), None),
            tool: label.tool.clone(),
            key: label.key.clone(),
            unique_key: true,
            scope: label
                .scope
                .clone()
                .unwrap_or_else(|| inner.settings.scope.clone()),
            status: TaskStatus::Working,
            status_message: None,
            poll_interval_ms: None,
            due: now,
            ending: None,
            schedule: Schedule::default(),
        };
        let (id, fence) = match inner
            .store
            .reserve(reservation, &inner.settings.worker, until)
            .await?
        {
            Reservation::Taken(id) => return Ok(Tracking::Known(id)),
            Reservation::Reserved { id, fence } => (id, fence),
        };
        // Never cut: a lost lease must not lose the task the call starts.
        // Its record is then another worker's, and `start` below refuses
        // it as stale, handing the live task back with the error.
        let called = self
            .renewing(id, fence, until, task.call_tool(&label.tool, arguments))
            .await;
        let store = &inner.store;
        match called {
            Ok(TaskState::Finished(t)) => {
                // Answered at once: the key is used, and its outcome is
                // the caller's now.
                let ending = Ending::from(t.outcome().clone());
                let kept = match store.finish(id, fence, &ending).await {
                    Ok(()) => store.acknowledge(id, fence).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = kept {
                    tracing::warn!(record = %id, "an answered call's record was not closed: {e}");
                }
                Ok(Tracking::Immediate(t))
            }
            Ok(state) => {
                let Some((reference, snapshot, schedule)) = recorded(&state) else {
                    return Err(StoreError::other("a finished task after all").into());
                };
                let progress = StepReport {
                    status: snapshot.status,
                    status_message: snapshot.status_message,
                    poll_interval_ms: snapshot.poll_interval_ms,
                    failed_reads: 0,
                    due: SystemTime::now(),
                    taken: Vec::new(),
                    offered: Vec::new(),
                };
                match store
                    .start(id, fence, &reference, &schedule, progress)
                    .await
                {
                    Ok(()) => {
                        let _ = detach(state);
                        inner.wake.notify_one();
                        tracing::info!(record = %id, tool = %label.tool, "a task is tracked");
                        Ok(Tracking::Tracked(id))
                    }
                    Err(error) => Err(TrackError::store(error, state)),
                }
            }
            Err(e) if e.is_outcome_unknown() => {
                // The call may have started a task: the key stays used.
                let kept = match store.finish(id, fence, &Ending::StartUnknown).await {
                    Ok(()) => store.acknowledge(id, fence).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = kept {
                    tracing::warn!(record = %id, "a call of unknown outcome was not recorded: {e}");
                }
                Err(e.into())
            }
            Err(e) => {
                // Certainly no task: the key is free again.
                if let Err(e) = store.remove(id, fence).await {
                    tracing::warn!(record = %id, "a failed call's reservation stayed: {e}");
                }
                Err(e.into())
            }
        }
    }

    /// Hands a live task to the tracker: the handle is detached and the
    /// task recorded, due at once. A finished handle is not recorded: it
    /// comes back as [`Tracking::Immediate`].
    ///
    /// # Errors
    ///
    /// [`TrackError::store_error`] when the insert failed, with the live
    /// handle in [`TrackError::into_task`].
    pub async fn track(&self, state: TaskState, label: Label) -> Result<Tracking, TrackError> {
        let Some((reference, snapshot, schedule)) = recorded(&state) else {
            return match state {
                TaskState::Finished(t) => Ok(Tracking::Immediate(t)),
                state => Err(TrackError::store(
                    StoreError::other("a live task without a reference"),
                    state,
                )),
            };
        };
        let now = SystemTime::now();
        let tool = label.tool.clone();
        let task = NewTask {
            reference,
            tool: label.tool,
            unique_key: label.key.is_some() && !label.shared_key,
            key: label.key,
            scope: label
                .scope
                .unwrap_or_else(|| self.inner.settings.scope.clone()),
            status: snapshot.status,
            status_message: snapshot.status_message,
            poll_interval_ms: snapshot.poll_interval_ms,
            due: now,
            ending: None,
            schedule,
        };
        match self.inner.store.insert(task).await {
            Ok(id) => {
                // Recorded: the handle lets go without a word to the server.
                let _ = detach(state);
                self.inner.wake.notify_one();
                tracing::info!(record = %id, tool = %tool, "a task is tracked");
                Ok(Tracking::Tracked(id))
            }
            Err(error) => Err(TrackError::store(error, state)),
        }
    }

    /// Asks for a tracked task to be cancelled; the worker that next claims
    /// it (at once, if one is idle) sends `tasks/cancel`, and the task ends
    /// [`Ending::Cancelled`](super::super::Ending::Cancelled) once the server says so. Works from any
    /// process that shares the store. `false` when there is no such record
    /// or its task already ended.
    pub async fn cancel(&self, id: RecordId) -> StoreResult<bool> {
        let asked = self
            .inner
            .store
            .request_cancel(id, SystemTime::now())
            .await?;
        self.inner.wake.notify_one();
        Ok(asked)
    }

    /// Answers question `key` of a tracked task, from any process that
    /// shares the store (a web server, a chat bot, a command line): the
    /// answer is checked against the question and stored, the first answer
    /// for a key wins, and the worker that next claims the record (at once,
    /// if one is idle) sends it with `tasks/update`, exactly once.
    ///
    /// # Errors
    ///
    /// As [`TaskStore::answer`]: [`StoreError::is_refused`] with its
    /// [`refusal`](StoreError::refusal) when the answer was refused
    /// (nothing is stored), [`StoreError::is_not_found`] when there is no
    /// such record.
    pub async fn answer(
        &self,
        id: RecordId,
        key: &str,
        response: impl Into<InputResponse>,
    ) -> StoreResult<()> {
        let response = response.into();
        self.inner
            .store
            .answer(id, key, &response, SystemTime::now())
            .await?;
        self.inner.wake.notify_one();
        Ok(())
    }

    /// Takes a tracked task back as a handle: the record is claimed (it
    /// must not be held by a live lease), the task read once through the
    /// connector's client, and the record removed. From then on the
    /// handle is the only hold on the task, as if it were never tracked.
    /// Answers stored for its questions and not yet sent (given with
    /// [`Tracker::answer`], say) are sent first; a task that still asks
    /// comes back as `Task<InputRequired>` with the questions left open.
    ///
    /// # Errors
    ///
    /// [`StoreError::is_not_found`] when there is no such open record, or
    /// when another worker holds it now; [`TrackError::call_error`] when the read
    /// failed (the record stays).
    pub async fn take(&self, id: RecordId) -> Result<TaskState, TrackError> {
        let inner = &self.inner;
        self.take_back().await?;
        let claimed = inner
            .store
            .claim(Claim {
                worker: &inner.settings.worker,
                limit: 1,
                now: SystemTime::now(),
                lease: inner.settings.lease,
                record: Some(id),
            })
            .await?;
        let record = match claimed.into_iter().next() {
            Some(r) => r?,
            None => return Err(StoreError::not_found(id).into()),
        };
        let fence = record.fence().expect("a claimed record has a lease");
        if !record.is_started() {
            // A key reserved, its call not answered: no task to take.
            self.give_up(&record, fence).await;
            return Err(StoreError::not_found(id).into());
        }
        let client = match self.client_for(record.reference.server()).await {
            Ok(c) => c,
            Err(e) => {
                self.give_up(&record, fence).await;
                return Err(e.into());
            }
        };
        let state = match client.task().resume(&record.reference).await {
            Ok(state) => state,
            Err(e) => {
                self.give_up(&record, fence).await;
                return Err(e.into());
            }
        };
        // Answers stored but not sent yet go out first: once the record is
        // removed, nothing else would send them.
        let state = match state {
            TaskState::InputRequired(t) => {
                let stored: crate::protocol::InputResponses = record
                    .answers
                    .iter()
                    .filter(|(k, a)| !a.taken && t.requests().contains_key(*k))
                    .map(|(k, a)| (k.clone(), a.response.clone()))
                    .collect();
                if stored.is_empty() {
                    TaskState::InputRequired(t)
                } else {
                    match t.respond(stored).await {
                        Ok(state) => state,
                        Err(e) => {
                            let (error, task) = e.into_parts();
                            drop(task.detach());
                            self.give_up(&record, fence).await;
                            return Err(error.into());
                        }
                    }
                }
            }
            state => state,
        };
        match inner.store.remove(id, fence).await {
            Ok(()) => Ok(state),
            Err(error) => Err(TrackError::store(error, state)),
        }
    }

    /// Releases a claimed record unchanged.
    async fn give_up(&self, record: &TaskRecord, fence: Fence) {
        let progress = self.unchanged(record);
        if let Err(e) = self.inner.store.save(record.id, fence, progress).await {
            tracing::debug!(record = %record.id, "could not release a record: {e}");
        }
    }
}

/// What a record keeps of a live handle: the task's reference, what the
/// server last stated, and the builder's schedule, its lifetime on the
/// wall clock.
fn recorded(state: &TaskState) -> Option<(TaskRef, TaskInfo, Schedule)> {
    let ((reference, snapshot), (chosen, expires_at)) = match state {
        TaskState::Finished(_) => return None,
        TaskState::Pending(t) => ((t.reference(), t.snapshot().clone()), t.schedule()),
        TaskState::InputRequired(t) => ((t.reference(), t.snapshot().clone()), t.schedule()),
    };
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let now = SystemTime::now();
    let schedule = Schedule {
        interval_ms: chosen.interval.map(ms),
        floor_ms: chosen.floor.map(ms),
        ceiling_ms: chosen.ceiling.map(ms),
        // The handle counts its lifetime on the monotonic clock; the
        // record keeps the same moment on the wall clock.
        deadline_ms: expires_at.and_then(|at| {
            let left = at.saturating_duration_since(tokio::time::Instant::now());
            now.checked_add(left).map(super::super::row::millis)
        }),
    };
    Some((reference, snapshot, schedule))
}

/// Lets a live handle go without a word to the server (its record keeps
/// it now).
fn detach(state: TaskState) -> Option<TaskRef> {
    match state {
        TaskState::Pending(t) => Some(t.detach()),
        TaskState::InputRequired(t) => Some(t.detach()),
        TaskState::Finished(_) => None,
    }
}
