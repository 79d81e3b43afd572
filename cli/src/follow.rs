//! Following a call or a task to its end: the status line, the server's
//! questions, Ctrl-C, and the outcome with its exit status.

use std::time::Duration;

use mcp_tasks::protocol::TaskStatus;
use mcp_tasks::protocol::{
    CallToolResult, ContentBlock, ElicitRequest, InputRequest, InputRequests, InputResponse,
    InputResponses,
};
use mcp_tasks::store::{Ending, RecordId};
use mcp_tasks::{Client, Error, Outcome, TaskRef, TaskState};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::ask::{Asker, Interrupted};
use crate::records::Seen;
use crate::report::{Report, Style};
use crate::server::ServerArgs;
use crate::{Failure, exit, one_line, reference};

/// How long the first Ctrl-C waits for the cancelled task to end.
const CANCEL_BOUND: Duration = Duration::from_secs(15);

/// A bound on one wait that no call reaches: the person (or Ctrl-C)
/// decides how long to wait.
const NO_BOUND: Duration = Duration::from_secs(365 * 24 * 3600);

/// One command's display, questions and Ctrl-C.
pub struct Follow {
    report: Report,
    asker: Asker,
    interrupts: mpsc::UnboundedReceiver<()>,
    /// How to name the server again, for the hints that print a reference.
    server: String,
    /// The task's short local name, for the hints, when it has one.
    name: Option<RecordId>,
    /// What the command saw of the task, for its record.
    seen: Seen,
    /// The task `call --detach` left running, until it is announced.
    detached: Option<Detached>,
    /// Answers kept in the task list (`mcp-tasks answer`) and not taken by
    /// the server yet: sent before anything is asked at the prompt.
    stored: InputResponses,
    /// Whether this command started the task (`call`): a cancel it did
    /// not make is then someone else's. A task found again (`wait`,
    /// `status`) may have been cancelled by the person themselves.
    started_here: bool,
}

/// Whether `call` leaves the task running instead of following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detach {
    /// Follow the task to its end.
    No,
    /// `--detach`: leave it running, when a later command can follow it
    /// (checked before the call).
    IfFollowable,
    /// `--detach-anyway`: leave it running, followable or not.
    Anyway,
}

/// A task `call --detach` left running.
pub struct Detached {
    /// How to find it again.
    pub reference: TaskRef,
    /// Its status when it was left.
    pub status: TaskStatus,
    /// Its status message when it was left.
    pub status_message: Option<String>,
    /// The questions it asked when it was left, if it asked.
    pub asked: Option<InputRequests>,
}

impl Follow {
    /// Sets up the display and Ctrl-C, and connects to the server.
    pub async fn start(server: &ServerArgs, json: bool) -> anyhow::Result<(Follow, Client)> {
        let (style, interactive) = crate::report::style(json);
        let report = Report::new(style);
        let (tx, interrupts) = mpsc::unbounded_channel();
        let signals = tx.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if signals.send(()).is_err() {
                    break;
                }
            }
        });
        let asker = Asker::new(report.clone(), interactive, tx);
        report.activity("connecting");
        let mut follow = Follow {
            report,
            asker,
            interrupts,
            server: server.describe(),
            name: None,
            seen: Seen::default(),
            detached: None,
            stored: InputResponses::new(),
            started_here: false,
        };
        let client = tokio::select! {
            client = server.connect(follow.asker.handlers(), &follow.report) => client,
            _ = follow.interrupts.recv() => {
                follow.report.clear();
                anyhow::bail!(Failure { code: exit::INTERRUPTED, message: "interrupted while connecting".into() });
            }
        };
        match client {
            Ok(client) => Ok((follow, client)),
            Err(e) => {
                follow.report.clear();
                Err(e)
            }
        }
    }

    /// Takes the status line off the screen (before an error).
    pub fn clear(&self) {
        self.report.clear();
    }

    /// Names the task by its short local name in hints.
    pub fn name_as(&mut self, name: RecordId) {
        self.name = Some(name);
    }

    /// Sends `answers` (kept in the task list) for the keys the task asks,
    /// before anything is asked at the prompt.
    pub fn send_first(&mut self, answers: InputResponses) {
        self.stored = answers;
    }

    /// What the command saw of the task: its last status, how it ended.
    pub fn seen(&self) -> &Seen {
        &self.seen
    }

    /// The task `call --detach` left running, once: announce it with
    /// [`Follow::announce`].
    pub fn take_detached(&mut self) -> Option<Detached> {
        self.detached.take()
    }

    /// Notes a status the server stated, and shows it.
    fn saw(&mut self, status: TaskStatus, message: Option<&str>) {
        self.report.status(status.as_str(), message);
        self.seen.status = Some((status, message.map(str::to_owned)));
    }

    /// `mcp-tasks call`.
    pub async fn call(
        &mut self,
        client: &Client,
        tool: &str,
        words: &[String],
        detach: Detach,
    ) -> anyhow::Result<u8> {
        // The listing types key=value arguments, and lets a 2025-11-25
        // server's task tools get the task opt-in they need.
        self.report.activity("listing tools");
        let schema = match client.list_tools().await {
            Ok(tools) => match tools.iter().find(|t| t.name == tool) {
                Some(t) => t.input_schema.clone(),
                None => {
                    self.report.clear();
                    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                    anyhow::bail!(Failure::usage(format!(
                        "the server has no tool {tool:?} (its tools: {})",
                        names.join(", ")
                    )));
                }
            },
            Err(_) => Value::Null,
        };
        let arguments = crate::arguments::parse(words, &schema).map_err(|e| {
            self.report.clear();
            Failure::usage(format!("{e:#}"))
        })?;

        self.report.activity(&format!("calling {tool}"));
        let progress = self.report.clone();
        let call = client
            .task()
            .timeout(NO_BOUND)
            .on_progress(move |p| progress.progress(&p))
            .call_tool(tool, arguments);
        let state = tokio::select! {
            state = call => state,
            _ = self.interrupts.recv() => {
                self.report.clear();
                self.report.note("interrupted: the call was abandoned before the server answered");
                if self.report.style() == Style::Json {
                    self.report.json(json!({
                        "type": "outcome", "outcome": "interrupted", "exit": exit::INTERRUPTED,
                    }));
                }
                return Ok(exit::INTERRUPTED);
            }
        };
        let state = match state {
            Ok(state) => state,
            Err(e) => {
                self.report.clear();
                return Err(call_error(tool, &e));
            }
        };
        if let Some(task) = state.reference() {
            crate::report::task_is(&task);
        }
        self.started_here = true;
        if detach != Detach::No {
            match state {
                TaskState::Finished(done) => {
                    self.report.clear();
                    self.report
                        .note("the server answered at once: there is no task to detach from");
                    return Ok(self.outcome(done.outcome(), exit::CANCELLED));
                }
                TaskState::Pending(task) => {
                    self.report.clear();
                    self.detached = Some(Detached {
                        status: task.snapshot().status,
                        status_message: task.status_message().map(str::to_owned),
                        asked: None,
                        reference: task.detach(),
                    });
                }
                TaskState::InputRequired(task) => {
                    self.report.clear();
                    self.detached = Some(Detached {
                        status: task.snapshot().status,
                        status_message: task.status_message().map(str::to_owned),
                        asked: Some(task.requests().clone()),
                        reference: task.detach(),
                    });
                }
            }
            return Ok(exit::OK);
        }
        self.follow(state).await
    }

    /// Prints the reference of a task `call --detach` left running, and
    /// its short local name when the task list took it; `unfollowable`
    /// says why a later command may not find it (`--detach-anyway`).
    pub fn announce(&self, task: &TaskRef, name: Option<RecordId>, unfollowable: Option<&str>) {
        let word = reference::encode(task);
        if self.report.style() == Style::Json {
            self.report.json(json!({
                "type": "detached", "reference": word, "name": name.map(|n| n.0),
                "followable": unfollowable.is_none(),
            }));
        } else {
            out!("{word}");
        }
        let follow = match name {
            Some(name) => format!(
                "mcp-tasks wait {name} (or mcp-tasks wait {word} {})",
                self.server
            ),
            None => format!("mcp-tasks wait {word} {}", self.server),
        };
        let runs_on = match name {
            Some(name) => format!("the task runs on as #{name}"),
            None => "the task runs on".to_owned(),
        };
        match unfollowable {
            // Said plainly: the usual end of such a task is with this command.
            Some(why) => self.report.note(&format!(
                "{runs_on}, but {why}: a later command cannot follow it, unless the \
                 server keeps its tasks beyond this command (then: {follow})"
            )),
            None => self
                .report
                .note(&format!("{runs_on}; follow it with: {follow}")),
        }
    }

    /// `mcp-tasks wait REF`.
    pub async fn wait(&mut self, client: &Client, task: &TaskRef) -> anyhow::Result<u8> {
        let state = self.resume(client, task).await?;
        self.follow(state).await
    }

    /// `mcp-tasks status REF`: the exit status tells how the task stands
    /// ([`exit::RUNNING`] while it runs).
    pub async fn status(&mut self, client: &Client, task: &TaskRef) -> anyhow::Result<u8> {
        let state = self.resume(client, task).await?;
        Ok(self.show(state))
    }

    /// `mcp-tasks answer NAME`: the answers kept in the task list sent to
    /// the task (those it still asks for), then its status as `status`
    /// shows it.
    pub async fn deliver(&mut self, client: &Client, task: &TaskRef) -> anyhow::Result<u8> {
        let state = self.resume(client, task).await?;
        let state = match state {
            TaskState::InputRequired(task) => {
                self.seen.asked = Some(task.requests().clone());
                let answers = self.take_stored(task.requests());
                if answers.is_empty() {
                    self.report.clear();
                    self.report
                        .note("the task no longer asks this question: nothing was sent");
                    TaskState::InputRequired(task)
                } else {
                    self.send(task, answers).await?
                }
            }
            other => {
                self.report.clear();
                self.report
                    .note("the task no longer asks anything: nothing was sent");
                other
            }
        };
        // The answer was delivered (or had nothing left to answer): the
        // command did its work, however the task stands.
        self.show(state);
        Ok(exit::OK)
    }

    /// Takes the stored answers for the keys `requests` lists.
    fn take_stored(&mut self, requests: &InputRequests) -> InputResponses {
        let keys: Vec<String> = self
            .stored
            .keys()
            .filter(|k| requests.contains_key(k.as_str()))
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|k| self.stored.remove(&k).map(|a| (k, a)))
            .collect()
    }

    /// Sends `answers` with `tasks/update`; the keys the server took are
    /// noted for the task list.
    async fn send(
        &mut self,
        task: mcp_tasks::Task<mcp_tasks::InputRequired>,
        answers: InputResponses,
    ) -> anyhow::Result<TaskState> {
        let keys: Vec<String> = answers.keys().cloned().collect();
        match task.respond(answers).await {
            Ok(state) => {
                self.seen.taken.extend(keys);
                Ok(state)
            }
            Err(e) => {
                self.report.clear();
                let (e, task) = e.into_parts();
                let hint = self.resume_hint(&task.reference());
                Err(Failure::of(
                    &e,
                    format!("cannot send the answers: {}; {hint}", one_line(&e)),
                )
                .into())
            }
        }
    }

    /// Shows one state of the task, as `status` prints it, and gives the
    /// exit status of how it stands: [`exit::RUNNING`] while it runs, else
    /// that of its outcome, as `wait` gives it.
    fn show(&mut self, state: TaskState) -> u8 {
        self.report.clear();
        let status = state.status();
        let message = state.status_message().map(str::to_owned);
        self.seen.status = Some((status, message.clone()));
        let code = match &state {
            TaskState::Finished(done) => {
                self.seen.ending = Some(Ending::from(done.outcome().clone()));
                exit_status(done.outcome(), exit::CANCELLED)
            }
            TaskState::Pending(_) | TaskState::InputRequired(_) => exit::RUNNING,
        };
        match self.report.style() {
            Style::Json => self.report.json(json!({
                "type": "status", "status": status.as_str(), "message": message,
            })),
            _ => match &message {
                Some(m) => out!("{status}: {m}"),
                None => out!("{status}"),
            },
        }
        if let TaskState::InputRequired(task) = &state {
            self.seen.asked = Some(task.requests().clone());
            for request in task.requests().values() {
                self.report
                    .note(&format!("  it asks: {}", describe_request(request)));
            }
        }
        if let TaskState::Pending(task) = state {
            let _ = task.detach();
        } else if let TaskState::InputRequired(task) = state {
            let _ = task.detach();
        }
        code
    }

    /// `mcp-tasks cancel REF`.
    pub async fn cancel_by_reference(
        &mut self,
        client: &Client,
        task: &TaskRef,
    ) -> anyhow::Result<u8> {
        let state = self.resume(client, task).await?;
        if let TaskState::Finished(done) = state {
            self.report.clear();
            self.report.note("the task had already ended");
            // Cancelled before (by this person or anyone): as asked.
            return Ok(self.outcome(done.outcome(), exit::OK));
        }
        self.report.status("cancelling", None);
        let ended = tokio::time::timeout(CANCEL_BOUND, cancel_and_wait(state)).await;
        self.report.clear();
        match ended {
            Ok(Ok(outcome)) => Ok(match outcome {
                Outcome::Cancelled => {
                    self.outcome(&outcome, exit::OK);
                    exit::OK
                }
                other => {
                    self.report
                        .note("the task ended before it could be cancelled");
                    self.outcome(&other, exit::CANCELLED)
                }
            }),
            Ok(Err(e)) => {
                Err(Failure::of(&e, format!("cannot cancel the task: {}", one_line(&e))).into())
            }
            Err(_) => Err(Failure::failed(format!(
                "the server acknowledged the cancel, but the task had not ended after {}s",
                CANCEL_BOUND.as_secs()
            ))
            .into()),
        }
    }

    async fn resume(&mut self, client: &Client, task: &TaskRef) -> anyhow::Result<TaskState> {
        crate::report::task_is(task);
        self.report.activity("reading the task");
        let resumed = tokio::select! {
            r = client.task().timeout(NO_BOUND).resume(task) => r,
            _ = self.interrupts.recv() => {
                self.report.clear();
                anyhow::bail!(Failure { code: exit::INTERRUPTED, message: "interrupted".into() });
            }
        };
        resumed.map_err(|e| {
            self.report.clear();
            if e.is_task_not_found() {
                self.seen.ending = Some(Ending::Unreachable {
                    reason: "the server does not know the task".into(),
                });
                anyhow::Error::new(Failure::failed(format!(
                    "the server does not know this task: it ended long ago, or it belongs to another \
                     server or session (a server started by `--` for one command forgets its tasks \
                     when the command ends) [{}]",
                    one_line(&e)
                )))
            } else {
                Failure::of(&e, one_line(&e)).into()
            }
        })
    }

    /// Follows the task to its end, answering its questions; Ctrl-C
    /// cancels it.
    async fn follow(&mut self, mut state: TaskState) -> anyhow::Result<u8> {
        loop {
            state = match state {
                TaskState::Finished(done) => {
                    self.report.clear();
                    return Ok(self.outcome(done.outcome(), exit::CANCELLED));
                }
                TaskState::InputRequired(task) => {
                    self.saw(task.snapshot().status, task.status_message());
                    self.seen.asked = Some(task.requests().clone());
                    // Answers given with `mcp-tasks answer` go first.
                    let stored = self.take_stored(task.requests());
                    if !stored.is_empty() {
                        state = self.send(task, stored).await?;
                        continue;
                    }
                    let answers = self.answer(task.requests());
                    let answers = match answers {
                        Ok(answers) => answers,
                        Err(Unanswerable::Interrupted) => {
                            return self.cancel(TaskState::InputRequired(task)).await;
                        }
                        Err(Unanswerable::Kinds(kinds)) => {
                            self.report.note(&format!(
                                "the server asks for {kinds}, which this client cannot give here: \
                                 cancelling the task"
                            ));
                            let outcome = tokio::time::timeout(
                                CANCEL_BOUND,
                                cancel_and_wait(TaskState::InputRequired(task)),
                            )
                            .await;
                            self.report.clear();
                            // Cancelled for want of an answer: the task failed.
                            return Ok(match outcome {
                                Ok(Ok(outcome)) => self.outcome(&outcome, exit::FAILED),
                                _ => exit::FAILED,
                            });
                        }
                    };
                    self.send(task, answers).await?
                }
                TaskState::Pending(task) => {
                    let mut updates = task.updates();
                    let mut failed = None;
                    loop {
                        tokio::select! {
                            item = updates.next() => match item {
                                Some(Ok(snapshot)) => self.saw(
                                    snapshot.status,
                                    snapshot.status_message.as_deref(),
                                ),
                                Some(Err(e)) => { failed = Some(e); break }
                                None => break,
                            },
                            _ = self.interrupts.recv() => {
                                return self.cancel(updates.into_task()).await;
                            }
                        }
                    }
                    let state = updates.into_task();
                    if let Some(e) = failed {
                        // Ctrl-C at a prompt answered it `cancel`; the
                        // interrupt is waiting.
                        if let Ok(()) = self.interrupts.try_recv() {
                            return self.cancel(state).await;
                        }
                        self.report.clear();
                        let hint = match state.reference() {
                            Some(task) if !state.is_finished() => self.resume_hint(&task),
                            _ => String::new(),
                        };
                        return Err(Failure::of(&e, format!("{}; {hint}", one_line(&e))).into());
                    }
                    state
                }
            };
        }
    }

    /// The answers to a task's questions, asked (or declined) now.
    fn answer(&self, requests: &InputRequests) -> Result<InputResponses, Unanswerable> {
        let mut answers = InputResponses::new();
        let mut cannot = Vec::new();
        for (key, request) in requests {
            let answer = match request {
                InputRequest::Elicitation(ElicitRequest::Form {
                    message,
                    requested_schema,
                }) => self
                    .asker
                    .form(message, requested_schema)
                    .map(InputResponse::from),
                InputRequest::Elicitation(ElicitRequest::Url { message, url, .. }) => {
                    self.asker.url(message, url).map(InputResponse::from)
                }
                InputRequest::Sampling(req) => match self.asker.sampling(req) {
                    Ok(Some(result)) => Ok(result.into()),
                    Ok(None) => {
                        cannot.push("a model's reply (declined)".to_owned());
                        continue;
                    }
                    Err(i) => Err(i),
                },
                other => {
                    cannot.push(other.method().to_owned());
                    continue;
                }
            };
            match answer {
                Ok(answer) => {
                    answers.insert(key.clone(), answer);
                }
                Err(Interrupted) => return Err(Unanswerable::Interrupted),
            }
        }
        if cannot.is_empty() {
            Ok(answers)
        } else {
            Err(Unanswerable::Kinds(cannot.join(", ")))
        }
    }

    /// The first Ctrl-C: `tasks/cancel`, then a bounded wait for the end;
    /// a second Ctrl-C stops waiting at once.
    async fn cancel(&mut self, state: TaskState) -> anyhow::Result<u8> {
        if let TaskState::Finished(done) = &state {
            self.report.clear();
            return Ok(self.outcome(done.outcome(), exit::CANCELLED));
        }
        let Some(task) = state.reference() else {
            // Only an immediate result has no reference, and it is finished.
            return Err(anyhow::anyhow!("the call has no task to cancel"));
        };
        self.report
            .status("cancelling", Some("Ctrl-C again to stop waiting"));
        let ended = tokio::select! {
            ended = tokio::time::timeout(CANCEL_BOUND, cancel_and_wait(state)) => ended,
            _ = self.interrupts.recv() => {
                self.report.clear();
                self.report.note(&format!(
                    "stopped waiting; the task may still be running: {}",
                    self.resume_hint(&task)
                ));
                if self.report.style() == Style::Json {
                    self.report.json(json!({
                        "type": "outcome", "outcome": "interrupted", "exit": exit::INTERRUPTED,
                        "reference": reference::encode(&task),
                    }));
                }
                return Ok(exit::INTERRUPTED);
            }
        };
        self.report.clear();
        match ended {
            Ok(Ok(Outcome::Cancelled)) => {
                self.outcome(&Outcome::Cancelled, exit::INTERRUPTED);
                Ok(exit::INTERRUPTED)
            }
            Ok(Ok(other)) => {
                self.report
                    .note("the task ended before it could be cancelled");
                Ok(self.outcome(&other, exit::CANCELLED))
            }
            Ok(Err(e)) => {
                self.report.note(&format!(
                    "could not cancel the task ({}); {}",
                    one_line(&e),
                    self.resume_hint(&task)
                ));
                Ok(exit::INTERRUPTED)
            }
            Err(_) => {
                self.report.note(&format!(
                    "the task had not ended {}s after the cancel; {}",
                    CANCEL_BOUND.as_secs(),
                    self.resume_hint(&task)
                ));
                Ok(exit::INTERRUPTED)
            }
        }
    }

    fn resume_hint(&self, task: &TaskRef) -> String {
        if let Some(name) = self.name {
            return format!("follow it with: mcp-tasks wait {name}");
        }
        format!(
            "follow it with: mcp-tasks wait {} {}",
            reference::encode(task),
            self.server
        )
    }

    /// Prints how the call ended and gives its exit status; a
    /// cancellation gets `cancelled`: [`exit::CANCELLED`] when the task
    /// was cancelled before or by someone else, another status when this
    /// command cancelled it or wanted it cancelled ([`exit::OK`] for
    /// `cancel`, [`exit::INTERRUPTED`] for Ctrl-C).
    fn outcome(&mut self, outcome: &Outcome, cancelled: u8) -> u8 {
        self.seen.ending = Some(Ending::from(outcome.clone()));
        let code = exit_status(outcome, cancelled);
        let json = self.report.style() == Style::Json;
        match outcome {
            Outcome::Completed(result) => {
                if json {
                    self.report.json(json!({
                        "type": "outcome",
                        "outcome": "completed",
                        "exit": code,
                        "isError": result.is_error,
                        "text": result.joined_text(),
                        "structuredContent": result.structured_content,
                        "content": result.content,
                    }));
                } else if result.is_error {
                    eprintln!("the tool reported an error:");
                    eprintln!("{}", render(result));
                } else {
                    let text = render(result);
                    if !text.is_empty() {
                        out!("{text}");
                    }
                }
            }
            Outcome::Failed(error) => {
                if json {
                    self.report.json(json!({
                        "type": "outcome", "outcome": "failed", "exit": code,
                        "error": { "code": error.code, "message": error.message, "data": error.data },
                    }));
                } else {
                    eprintln!("the task failed: {} (error {})", error.message, error.code);
                }
            }
            Outcome::Cancelled => {
                if json {
                    self.report
                        .json(json!({"type": "outcome", "outcome": "cancelled", "exit": code}));
                } else if cancelled == exit::CANCELLED && self.started_here {
                    eprintln!("the task was cancelled (by the server or another client)");
                } else {
                    eprintln!("the task was cancelled");
                }
            }
            Outcome::Expired => {
                if json {
                    self.report
                        .json(json!({"type": "outcome", "outcome": "expired", "exit": code}));
                } else {
                    eprintln!("the task expired");
                }
            }
        }
        code
    }
}

/// The exit status of an outcome; `cancelled` for a cancellation.
fn exit_status(outcome: &Outcome, cancelled: u8) -> u8 {
    match outcome {
        Outcome::Completed(result) if result.is_error => exit::TOOL_ERROR,
        Outcome::Completed(_) => exit::OK,
        Outcome::Failed(_) | Outcome::Expired => exit::FAILED,
        Outcome::Cancelled => cancelled,
    }
}

enum Unanswerable {
    Interrupted,
    Kinds(String),
}

async fn cancel_and_wait(state: TaskState) -> Result<Outcome, Error> {
    let done = match state {
        TaskState::Pending(t) => t.cancel_and_wait().await,
        TaskState::InputRequired(t) => t.cancel_and_wait().await,
        TaskState::Finished(t) => Ok(t),
    };
    done.map(|t| t.into_outcome()).map_err(|e| e.into_error())
}

/// A failed `tools/call`, with the exit status its cause calls for
/// ([`exit::of`]): the server's JSON-RPC error is the call failing; a
/// connection lost meanwhile leaves the outcome unknown.
fn call_error(tool: &str, e: &Error) -> anyhow::Error {
    let text = one_line(e);
    let message = if e.rpc_error().is_some() {
        format!("{tool} failed: {text}")
    } else if e.is_outcome_unknown() {
        format!("{text} (the call may have run on the server)")
    } else {
        text
    };
    Failure::of(e, message).into()
}

/// The result as text: text blocks as they are, other blocks named, and
/// structured content as pretty JSON (once, when a text block repeats it).
fn render(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text { text, .. } => {
                let repeats = result
                    .structured_content
                    .as_ref()
                    .is_some_and(|s| serde_json::from_str::<Value>(text).is_ok_and(|t| t == *s));
                if !repeats {
                    parts.push(text.clone());
                }
            }
            ContentBlock::Image {
                mime_type, data, ..
            } => parts.push(format!("[image {mime_type}, {} bytes base64]", data.len())),
            ContentBlock::Audio {
                mime_type, data, ..
            } => parts.push(format!("[audio {mime_type}, {} bytes base64]", data.len())),
            ContentBlock::ResourceLink { uri, name, .. } => {
                parts.push(format!("[resource {name}: {uri}]"))
            }
            ContentBlock::Resource { resource, .. } => match &resource.text {
                Some(text) => parts.push(text.clone()),
                None => parts.push(format!("[resource {}]", resource.uri)),
            },
            _ => parts.push("[content of a type this client does not show]".into()),
        }
    }
    if let Some(structured) = &result.structured_content {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    parts.join("\n")
}

fn describe_request(request: &InputRequest) -> String {
    match request {
        InputRequest::Elicitation(ElicitRequest::Form { message, .. }) => {
            format!("a form: {message}")
        }
        InputRequest::Elicitation(ElicitRequest::Url { message, url, .. }) => {
            format!("to visit {url}: {message}")
        }
        other => other.method().to_owned(),
    }
}
