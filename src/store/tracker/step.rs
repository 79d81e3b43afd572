//! One step of one tracked task: a read through the client, then answers
//! or a cancel, and what to write back.

use std::time::SystemTime;

use super::super::{Ending, Fence, Progress, StoreError, StoreResult, TaskRecord, TaskStore};
use super::{Connector, Tracker};
use crate::protocol::InputResponses;
use crate::task::schedule::{After, seed_of};
use crate::task::{Cancellable, InputMode, Task, TaskState};
use crate::{Client, Error};

/// Failed reads in a row, of a kind a retry does not mend (a protocol
/// error, a JSON-RPC error other than "unknown task"), after which a task
/// ends as [`Ending::Unreachable`] instead of being read again forever.
const MAX_HARD_FAILURES: u32 = 5;

/// What one step of a task comes to.
enum Step {
    /// Still running: write this and give the record up.
    Progress(Progress),
    /// Ended.
    Ended(Ending),
}

impl<S: TaskStore, C: Connector> Tracker<S, C> {
    /// Takes one open task one step and writes back what it found.
    /// `Ok(Some(record))`: the task ended and awaits delivery.
    pub(super) async fn step(&self, record: TaskRecord) -> StoreResult<Option<TaskRecord>> {
        // Steps wait their turn for a slot: a lease may have run low since
        // the claim. Never read a task another worker may hold.
        let id = record.id;
        let Some(record) = self.hold(record).await? else {
            return Err(StoreError::stale(id));
        };
        let fence = record.fence().expect("a claimed record has a lease");
        let step = match self.client_for(record.reference.server()).await {
            Ok(client) => self.step_with(&client, &record, fence).await?,
            Err(e) => self.failed(&record, None, &e),
        };
        let store = &self.inner.store;
        match step {
            Step::Progress(progress) => {
                store.save(record.id, fence, progress).await?;
                Ok(None)
            }
            Step::Ended(ending) => {
                store.finish(record.id, fence, &ending).await?;
                tracing::debug!(record = %record.id, ending = ending.name(), "a tracked task ended");
                let mut record = record;
                record.ending = Some(ending);
                Ok(Some(record))
            }
        }
    }

    /// One step through `client`: a read, then answers or a cancel.
    async fn step_with(
        &self,
        client: &Client,
        record: &TaskRecord,
        fence: Fence,
    ) -> StoreResult<Step> {
        let builder = client
            .task()
            .input(InputMode::Manual)
            .maybe_request_timeout(self.inner.request_timeout);
        let state = match builder.resume(&record.reference).await {
            Ok(state) => state,
            Err(e) => return Ok(self.failed(record, Some(client), &e)),
        };
        let task = match state {
            TaskState::Finished(t) => return Ok(Step::Ended(t.into_outcome().into())),
            TaskState::Pending(t) if record.cancel_requested => {
                return Ok(self.cancel_step(client, record, t.cancel().await));
            }
            TaskState::InputRequired(t) if record.cancel_requested => {
                return Ok(self.cancel_step(client, record, t.cancel().await));
            }
            TaskState::Pending(t) => {
                return Ok(self.let_go(client, record, t, After::Read));
            }
            TaskState::InputRequired(t) => t,
        };

        // Questions: a recorded answer is sent again; a new one is asked of
        // the handler once, and recorded before it goes out.
        let mut responses = InputResponses::new();
        for (key, request) in task.requests() {
            if let Some(answer) = record.answers.get(key) {
                responses.insert(key.clone(), answer.response.clone());
                continue;
            }
            if !client.handlers().can_answer(request) {
                // Nobody here can answer: look again later.
                return Ok(self.let_go(client, record, task, After::Read));
            }
            // A person may take a while: hold the record meanwhile.
            let inner = &self.inner;
            inner
                .store
                .renew(record.id, fence, SystemTime::now() + inner.lease)
                .await?;
            match client.handlers().answer(key, request).await {
                Ok(response) => {
                    inner
                        .store
                        .record_answer(record.id, fence, key, &response)
                        .await?;
                    responses.insert(key.clone(), response);
                }
                Err(e) => {
                    tracing::debug!(record = %record.id, "an input handler failed: {e}");
                    return Ok(self.let_go(client, record, task, After::Read));
                }
            }
        }
        let keys: Vec<String> = responses.keys().cloned().collect();
        match task.respond(responses).await {
            Ok(state) => {
                let step = match state {
                    TaskState::Finished(t) => return Ok(Step::Ended(t.into_outcome().into())),
                    TaskState::Pending(t) => self.let_go(client, record, t, After::Write),
                    TaskState::InputRequired(t) => self.let_go(client, record, t, After::Write),
                };
                Ok(match step {
                    Step::Progress(progress) => Step::Progress(Progress {
                        taken: keys,
                        ..progress
                    }),
                    ended => ended,
                })
            }
            Err(e) => {
                let (error, task) = e.into_parts();
                drop(task.detach());
                Ok(self.failed(record, Some(client), &error))
            }
        }
    }

    /// After a cancel was sent (or failed to be).
    fn cancel_step<T: Cancellable>(
        &self,
        client: &Client,
        record: &TaskRecord,
        sent: Result<(), crate::TaskError<Task<T>>>,
    ) -> Step {
        match sent {
            Ok(()) => Step::Progress(Progress {
                failed_reads: 0,
                due: self.due(client, record, After::Write),
                ..self.unchanged(record)
            }),
            Err(e) => {
                let (error, task) = e.into_parts();
                drop(task.detach());
                self.failed(record, Some(client), &error)
            }
        }
    }

    /// Lets go of a live handle after a step (nothing sent) and schedules
    /// the next read by what it showed.
    fn let_go<T: Cancellable>(
        &self,
        client: &Client,
        record: &TaskRecord,
        task: Task<T>,
        after: After,
    ) -> Step {
        let snapshot = task.snapshot().clone();
        drop(task.detach());
        Step::Progress(self.progress(client, record, &snapshot, after))
    }

    pub(super) fn unchanged(&self, record: &TaskRecord) -> Progress {
        Progress {
            status: record.status,
            status_message: record.status_message.clone(),
            poll_interval_ms: record.poll_interval_ms,
            failed_reads: record.failed_reads,
            due: record.due,
            taken: Vec::new(),
        }
    }

    /// The progress of a task seen as `snapshot`, next due per the schedule.
    fn progress(
        &self,
        client: &Client,
        record: &TaskRecord,
        snapshot: &crate::task::Snapshot,
        after: After,
    ) -> Progress {
        let mut seen = record.clone();
        seen.poll_interval_ms = snapshot.poll_interval_ms;
        Progress {
            status: snapshot.status,
            status_message: snapshot.status_message.clone(),
            poll_interval_ms: snapshot.poll_interval_ms,
            failed_reads: 0,
            due: self.due(client, &seen, after),
            taken: Vec::new(),
        }
    }

    /// When `record` is next due after `after`, by the shared schedule,
    /// and never before a pause the client's server asked for.
    fn due(&self, client: &Client, record: &TaskRecord, after: After) -> SystemTime {
        let seed = seed_of(record.reference.task_id().expose());
        let delay = self.inner.rules.delay(record.poll_interval_ms, after, seed);
        let held = client
            .not_before()
            .map(|at| at.saturating_duration_since(tokio::time::Instant::now()))
            .unwrap_or_default();
        SystemTime::now() + delay.max(held)
    }

    /// What a failed step comes to: the task ends as unreachable when the
    /// server does not know it, or when the record names a server or an
    /// era the client cannot reach, or after [`MAX_HARD_FAILURES`] errors
    /// a retry does not mend; otherwise it is read again after a backoff.
    fn failed(&self, record: &TaskRecord, client: Option<&Client>, e: &Error) -> Step {
        if e.is_task_not_found() {
            return Step::Ended(Ending::Unreachable {
                reason: "the server does not know the task: it restarted, the task's \
                         lifetime passed, or the task belonged to a session that ended"
                    .to_owned(),
            });
        }
        if e.is_builder() {
            return Step::Ended(Ending::Unreachable {
                reason: e.to_string(),
            });
        }
        let attempt = record.failed_reads.saturating_add(1);
        let mendable = e.is_timeout() || e.is_transport() || e.is_overloaded();
        if !mendable && attempt >= MAX_HARD_FAILURES {
            return Step::Ended(Ending::Unreachable {
                reason: format!("{attempt} reads in a row failed; the last: {e}"),
            });
        }
        tracing::debug!(record = %record.id, attempt, "a tracked read failed: {e}");
        let after = After::Failure {
            attempt,
            overloaded: e.is_overloaded(),
            retry_after: e.retry_after(),
        };
        let due = match client {
            Some(c) => self.due(c, record, after),
            None => {
                let seed = seed_of(record.reference.task_id().expose());
                SystemTime::now() + self.inner.rules.delay(record.poll_interval_ms, after, seed)
            }
        };
        Step::Progress(Progress {
            failed_reads: attempt,
            due,
            ..self.unchanged(record)
        })
    }
}
