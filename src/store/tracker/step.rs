//! One step of one tracked task: a read through the client, then the
//! questions (recorded, offered, answered), a cancel or the lifetime's end,
//! and what to write back. The whole step runs under the record's
//! heartbeat (`hold.rs`).

use std::time::{Duration, SystemTime};

use super::super::{
    Answers, Ending, Fence, Questions, StepReport, StoreResult, TaskRecord, TaskStore,
};
use super::saves::Slot;
use super::{Asking, Connector, Tracker};
use crate::protocol::{InputRequests, InputResponses, TaskStatus};
use crate::task::schedule::{After, Chosen, Rules, retryable, seed_of};
use crate::task::{Cancellable, InputMode, InputRequired, Task, TaskState};
use crate::{Client, Error};

/// Failed reads in a row, of a kind a retry does not mend (a protocol
/// error, a JSON-RPC error other than "unknown task"), after which a task
/// ends as [`Ending::Unreachable`] instead of being read again forever.
///
/// The in-process wait gives up at the first such failure, and hands the
/// error and the handle to its caller, who may try again. A worker has no
/// caller to hand it to, and ending a task is final, so it gives a server
/// that answered badly once a few more reads before it does.
const MAX_HARD_FAILURES: u32 = 5;

/// What one step of a task comes to.
enum Step {
    /// Still running: write this and give the record up.
    Progress(StepReport),
    /// Ended.
    Ended(Ending),
}

impl<S: TaskStore, C: Connector> Tracker<S, C> {
    /// Takes one open task one step and writes back what it found.
    /// `Ok(Some(record))`: the task ended and awaits delivery.
    /// The job's `slot` is given up while its save waits to be written
    /// (see `saves.rs`), and kept when the task ended, for its delivery.
    pub(super) async fn step(
        &self,
        record: TaskRecord,
        slot: &mut Slot,
    ) -> StoreResult<Option<TaskRecord>> {
        // Steps wait their turn for a slot: a lease may have run low since
        // the claim. Never read a task another worker may hold.
        let (record, fence, until) = self.hold(record).await?;
        let id = record.id;
        self.keeping(id, fence, until, self.step_held(record, fence, slot))
            .await?
    }

    async fn step_held(
        &self,
        mut record: TaskRecord,
        fence: Fence,
        slot: &mut Slot,
    ) -> StoreResult<Option<TaskRecord>> {
        let step = if !record.is_started() {
            // A key reserved, and the process that called the tool gone
            // before the answer was written: the call may or may not have
            // started a task, and is not made again.
            tracing::warn!(
                record = %record.id,
                tool = %record.tool,
                "a reserved call's outcome is unknown: it may or may not have started a task"
            );
            Step::Ended(Ending::StartUnknown)
        } else {
            match self.client_for(record.reference.server()).await {
                Ok(client) => self.step_with(&client, &record, fence).await?,
                Err(e) => self.failed(&record, None, &e),
            }
        };
        let store = &self.inner.store;
        let asking = matches!(&step, Step::Progress(p) if p.status == TaskStatus::InputRequired);
        // The task moved on, ended or was cancelled: its questions close.
        // On 2025-11-25 they close with the step too: the requests that
        // carried them were refused when the step let go of the task, and
        // an answer kept for one could never be sent.
        let moved_on = !asking && record.questions.values().any(|q| !q.is_closed());
        if moved_on || (asking && !keeps_questions(&record)) {
            store
                .ask(record.id, fence, &InputRequests::new(), SystemTime::now())
                .await?;
        }
        match step {
            Step::Progress(progress) => {
                self.save_step(record.id, fence, progress, slot.take())
                    .await?;
                Ok(None)
            }
            Step::Ended(ending) => {
                store.finish(record.id, fence, &ending).await?;
                super::meter::ended(&self.inner.meter, ending.name());
                tracing::info!(record = %record.id, ending = ending.name(), "a tracked task ended");
                record.status = ending.status();
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
            .maybe_request_timeout(self.inner.settings.request_timeout);
        let read = builder.resume(&record.reference).await;
        super::meter::read(&self.inner.meter, read.is_ok());
        let state = match read {
            Ok(state) => state,
            Err(e) => return Ok(self.failed(record, Some(client), &e)),
        };
        let expired = record
            .schedule
            .deadline()
            .is_some_and(|at| SystemTime::now() >= at);
        let task = match state {
            TaskState::Finished(t) => return Ok(Step::Ended(t.into_outcome().into())),
            TaskState::Pending(t) if expired => return Ok(self.expire(record, t.cancel().await)),
            TaskState::InputRequired(t) if expired => {
                return Ok(self.expire(record, t.cancel().await));
            }
            TaskState::Pending(t) if record.cancel_requested => {
                return Ok(self.cancel_step(client, record, t.cancel().await));
            }
            TaskState::InputRequired(t) if record.cancel_requested => {
                return Ok(self.cancel_step(client, record, t.cancel().await));
            }
            TaskState::Pending(t) => {
                return Ok(self.let_go(client, record, t, After::Read, Vec::new()));
            }
            TaskState::InputRequired(t) => t,
        };
        self.questions(client, record, fence, task).await
    }

    /// A task that asks: its questions recorded (before anything else), new
    /// ones offered to the application, answered from the store or by a
    /// handler within its bound, and every answer not yet taken sent in one
    /// `tasks/update`.
    async fn questions(
        &self,
        client: &Client,
        record: &TaskRecord,
        fence: Fence,
        task: Task<InputRequired>,
    ) -> StoreResult<Step> {
        let inner = &self.inner;
        let requests = task.requests();
        let fresh;
        let (questions, answers): (&Questions, &Answers) = if asks_anew(record, requests) {
            fresh = inner
                .store
                .ask(record.id, fence, requests, SystemTime::now())
                .await?;
            (&fresh.0, &fresh.1)
        } else {
            (&record.questions, &record.answers)
        };
        // Nobody could answer a 2025-11-25 question after this step.
        let offered = if keeps_questions(record) {
            self.offer(record, questions).await
        } else {
            Vec::new()
        };

        let mut responses = InputResponses::new();
        for (key, request) in requests {
            if let Some(answer) = answers.get(key) {
                // Sent before and taken by the server: never again, even
                // while the server still lists the key.
                if !answer.taken {
                    responses.insert(key.clone(), answer.response.clone());
                }
                continue;
            }
            if !client.handlers().can_answer(request) || self.gave_up_on(record, key) {
                continue;
            }
            let bound = inner.settings.answer_within;
            let began = std::time::Instant::now();
            let answered =
                tokio::time::timeout(bound, client.handlers().answer(key, request)).await;
            let result = match &answered {
                Ok(Ok(_)) => "answered",
                Ok(Err(_)) => "failed",
                Err(_) => "timed_out",
            };
            super::meter::handler(&inner.meter, result, began.elapsed());
            match answered {
                Ok(Ok(response)) => {
                    // The first answer stored wins: someone may have
                    // answered from elsewhere while the handler ran.
                    let standing = inner
                        .store
                        .record_answer(record.id, fence, key, &response)
                        .await;
                    match standing {
                        Ok(response) => {
                            responses.insert(key.clone(), response);
                        }
                        Err(e) if e.is_refused() => {
                            tracing::debug!(record = %record.id, "an answer was refused: {e}");
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(Err(e)) => tracing::debug!(record = %record.id, "an input handler failed: {e}"),
                Err(_) => {
                    tracing::debug!(
                        record = %record.id,
                        "an input handler took over {}; the question stays open",
                        crate::human::duration(bound)
                    );
                    self.give_up_on(record, key);
                }
            }
        }
        if responses.is_empty() {
            // Nobody here can answer (yet): look again later.
            return Ok(self.let_go(client, record, task, After::Read, offered));
        }
        let keys: Vec<String> = responses.keys().cloned().collect();
        match task.respond(responses).await {
            Ok(state) => {
                let step = match state {
                    TaskState::Finished(t) => return Ok(Step::Ended(t.into_outcome().into())),
                    TaskState::Pending(t) => self.let_go(client, record, t, After::Write, offered),
                    TaskState::InputRequired(t) => {
                        self.let_go(client, record, t, After::Write, offered)
                    }
                };
                Ok(match step {
                    Step::Progress(progress) => Step::Progress(StepReport {
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

    fn gave_up_on(&self, record: &TaskRecord, key: &str) -> bool {
        let gave_up = self.inner.gave_up.lock().unwrap_or_else(|e| e.into_inner());
        gave_up.contains(&(record.id, key.to_owned()))
    }

    fn give_up_on(&self, record: &TaskRecord, key: &str) {
        let mut gave_up = self.inner.gave_up.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: past it, a handler may be asked once more.
        if gave_up.len() >= 10_000 {
            gave_up.clear();
        }
        gave_up.insert((record.id, key.to_owned()));
    }

    /// Offers the questions not offered yet to the application's hook, each
    /// within the handlers' bound; the keys it acknowledged.
    async fn offer(&self, record: &TaskRecord, questions: &Questions) -> Vec<String> {
        let Some(hook) = &self.inner.settings.on_question else {
            return Vec::new();
        };
        let mut offered = Vec::new();
        for (key, question) in questions
            .iter()
            .filter(|(_, q)| !q.offered && !q.is_closed())
        {
            let asking = Asking {
                id: record.id,
                tool: record.tool.clone(),
                task_key: record.key.clone(),
                scope: record.scope.clone(),
                key: key.clone(),
                question: question.clone(),
            };
            match tokio::time::timeout(self.inner.settings.answer_within, (hook.0)(asking)).await {
                Ok(true) => offered.push(key.clone()),
                Ok(false) => {}
                Err(_) => tracing::warn!(
                    record = %record.id,
                    "the on_question hook took over {}; the question is offered again later",
                    crate::human::duration(self.inner.settings.answer_within)
                ),
            }
        }
        offered
    }

    /// The task's lifetime passed: it was cancelled (or the cancel failed,
    /// which changes nothing: the lifetime is the client's own bound).
    fn expire<T: Cancellable>(
        &self,
        record: &TaskRecord,
        sent: Result<(), crate::TaskError<Task<T>>>,
    ) -> Step {
        if let Err(e) = sent {
            let (error, task) = e.into_parts();
            drop(task.detach());
            tracing::debug!(record = %record.id, "the cancel at the task's lifetime failed: {error}");
        }
        Step::Ended(Ending::Expired)
    }

    /// After a cancel was sent (or failed to be).
    fn cancel_step<T: Cancellable>(
        &self,
        client: &Client,
        record: &TaskRecord,
        sent: Result<(), crate::TaskError<Task<T>>>,
    ) -> Step {
        match sent {
            Ok(()) => Step::Progress(StepReport {
                failed_reads: 0,
                due: self.due(Some(client), record, record.poll_interval_ms, After::Write),
                ..self.unchanged(record)
            }),
            Err(e) => {
                let (error, task) = e.into_parts();
                drop(task.detach());
                self.failed(record, Some(client), &error)
            }
        }
    }

    /// Lets go of a live handle after a step and schedules the next read
    /// by what it showed.
    fn let_go<T: Cancellable>(
        &self,
        client: &Client,
        record: &TaskRecord,
        task: Task<T>,
        after: After,
        offered: Vec<String>,
    ) -> Step {
        let (_, seen) = task.detach_seen();
        let progress = StepReport {
            status: seen.status,
            due: self.due(Some(client), record, seen.poll_interval_ms, after),
            status_message: seen.status_message,
            poll_interval_ms: seen.poll_interval_ms,
            failed_reads: 0,
            taken: Vec::new(),
            offered,
        };
        Step::Progress(progress)
    }

    pub(super) fn unchanged(&self, record: &TaskRecord) -> StepReport {
        StepReport {
            status: record.status,
            status_message: record.status_message.clone(),
            poll_interval_ms: record.poll_interval_ms,
            failed_reads: record.failed_reads,
            due: record.due,
            taken: Vec::new(),
            offered: Vec::new(),
        }
    }

    /// The spacing of `record`'s reads: its builder's settings, and the
    /// tracker's where its builder set none.
    fn rules(&self, record: &TaskRecord) -> Rules {
        let ms = |v: Option<u64>| v.map(Duration::from_millis);
        let s = &record.schedule;
        Chosen {
            interval: ms(s.interval_ms),
            floor: ms(s.floor_ms),
            ceiling: ms(s.ceiling_ms),
        }
        .over(self.inner.settings.rules)
    }

    /// When `record` is next due after `after`, by the shared schedule,
    /// never before a pause the client's server asked for, and never after
    /// the task's lifetime.
    fn due(
        &self,
        client: Option<&Client>,
        record: &TaskRecord,
        suggested_ms: Option<u64>,
        after: After,
    ) -> SystemTime {
        let seed = seed_of(record.reference.task_id().expose());
        let delay = self.rules(record).delay(suggested_ms, after, seed);
        let held = client
            .and_then(Client::not_before)
            .map(|at| at.saturating_duration_since(tokio::time::Instant::now()))
            .unwrap_or_default();
        let at = SystemTime::now() + delay.max(held);
        match record.schedule.deadline() {
            Some(deadline) => at.min(deadline.max(SystemTime::now())),
            None => at,
        }
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
        if !retryable(e) && attempt >= MAX_HARD_FAILURES {
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
        Step::Progress(StepReport {
            failed_reads: attempt,
            due: self.due(client, record, record.poll_interval_ms, after),
            ..self.unchanged(record)
        })
    }
}

/// Whether `record`'s task keeps its questions open between reads, for
/// anyone to answer later (2026-07-28), or asks each one only while a
/// step holds the request that carries it (2025-11-25).
fn keeps_questions(record: &TaskRecord) -> bool {
    record
        .reference
        .protocol_version()
        .is_none_or(crate::protocol::versions::keeps_questions)
}

/// Whether a read's questions differ from the record's: a key it has not
/// seen, or an open question no longer listed. Only then is the record's
/// set of questions written.
fn asks_anew(record: &TaskRecord, requests: &InputRequests) -> bool {
    requests.keys().any(|k| !record.questions.contains_key(k))
        || record
            .questions
            .iter()
            .any(|(k, q)| !q.is_closed() && !requests.contains_key(k))
}
