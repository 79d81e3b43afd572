//! `client.task() … .call_tool(name, arguments)`: the one way to start a task.

use serde::Serialize;
use serde_json::Value;

use super::core::Core;
use super::observed::Observed;
use super::settings::{Settings, TaskBuilder, task_builder};
use super::trace::{Trace, traced};
use super::{Outcome, TaskRef, TaskState};
use crate::Client;
use crate::client::Started;
use crate::error::{Error, Result};
use crate::protocol::TaskStatus;

impl Client {
    /// Starts configuring a tool call that may become a task.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
    /// # use std::time::Duration;
    /// # use mcp_tasks::{Client, TaskState};
    /// # use mcp_tasks::protocol::CallToolResult;
    /// # use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
    /// # let server = TestServer::new().tool(ScriptedTool::task("export",
    /// #     TaskScript::new().complete(Duration::from_millis(10), CallToolResult::text("done"))));
    /// # let client = Client::connect(server.connect()).await?;
    /// let state = client
    ///     .task()
    ///     .timeout(Duration::from_secs(120))
    ///     .call_tool("export", serde_json::json!({ "id": 7 }))
    ///     .await?;
    /// let finished = match state {
    ///     TaskState::Pending(task) => task.finish().await?,
    ///     TaskState::InputRequired(task) => task.finish().await?,
    ///     TaskState::Finished(task) => task,
    /// };
    /// assert_eq!(finished.outcome().result().unwrap().joined_text(), "done");
    /// # Ok(()) }
    /// ```
    pub fn task(&self) -> TaskBuilder {
        Settings::start(self.clone())
    }
}

impl<S: task_builder::IsComplete> TaskBuilder<S> {
    /// Calls the tool (`tools/call`, declaring the Tasks extension) and
    /// returns a handle in the state the server's answer puts it in.
    ///
    /// - An immediate result is `TaskState::Finished` with no id.
    /// - `input_required` rounds (MRTR) are answered with the client's
    ///   handlers before the server decides.
    /// - A task is `Pending`; if its first status is not `working`, it is
    ///   read once (`tasks/get`) right away, since the creation result
    ///   carries no input requests, result or error.
    ///
    /// If the client's last [`Client::list_tools`] listed the tool with the
    /// 2025-11-25 `execution.taskSupport` `optional` or `required`, the
    /// call also carries the legacy opt-in `task: {}` (`{"ttl": <ms>}` with
    /// [`with_ttl`](TaskBuilder::with_ttl)), which 2026-07-28 servers
    /// ignore and older ones need; see [`TaskOptIn`](crate::protocol::TaskOptIn).
    ///
    /// One case lists the tools first, without being asked: an
    /// initialize-era server that declared task-augmented `tools/call`,
    /// when the client remembers no listing. Such a server wants the
    /// opt-in on the tools it lists as task-capable, and refuses the call
    /// (or runs it without a task) otherwise. The listing is one
    /// [`Client::list_tools`] (all its pages, within the client's listing
    /// bounds), made once per client rather than per call: calls started
    /// together wait for the same listing, and it is remembered until the
    /// server says its tools changed. The wait for it (another call's
    /// listing included) lasts at most the call's request timeout. A
    /// failed listing, or one not ended by then, is logged at `debug`, and
    /// the call goes without the opt-in, with its own timeout from then
    /// on. A 2026-07-28 session never lists for this.
    ///
    /// # Errors
    ///
    /// - [`Error::is_builder`]: `arguments` is not a JSON object (or null);
    /// - [`Error::is_missing_capability`]: the server needs a capability
    ///   the client did not declare, or (a 2025-11-25 server, `-32601`
    ///   about a "task augmented call") the legacy opt-in for a tool not
    ///   listed yet: call [`Client::list_tools`] first;
    /// - [`Error::is_input_required`] / [`Error::is_input`]: an MRTR round
    ///   no handler can answer, or a handler failed;
    /// - [`Error::is_outcome_unknown`]: the connection dropped or the request
    ///   timed out after the call was sent (the tool may have run);
    /// - any request error. Once a task exists no error loses it: a failed
    ///   first read still returns the `Pending` handle.
    pub async fn call_tool(self, name: &str, arguments: impl Serialize) -> Result<TaskState> {
        let settings = self.settings();
        let arguments = match serde_json::to_value(arguments) {
            Ok(Value::Null) => None,
            Ok(v @ Value::Object(_)) => Some(v),
            Ok(_) => {
                return Err(Error::builder(
                    "tool arguments must serialize to a JSON object",
                ));
            }
            Err(e) => {
                return Err(Error::builder(format!(
                    "tool arguments do not serialize: {e}"
                )));
            }
        };
        // The task span starts with the call, so that `tools/call` (and
        // its input rounds) are in it.
        let trace = Trace::call(&settings.client, name);
        let started = traced!(
            trace.as_ref().map(|t| t.span().clone()),
            settings.client.start(
                name,
                arguments,
                settings.request_timeout(),
                settings.ttl,
                settings.on_progress.clone().map(|f| (f, settings.timeout)),
            )
        );
        let started = match started {
            Ok(started) => started,
            Err(e) => {
                if let Some(t) = trace {
                    t.failed(&e);
                }
                return Err(e);
            }
        };
        let task = match started {
            Started::Complete(result) => {
                let core = Core::immediate(settings, trace);
                let observed = Observed::Finished(Box::new(Outcome::Completed(result)));
                return Ok(TaskState::from_core(core, observed));
            }
            Started::Task(task) => task,
        };
        let seed = task.created.info.status;
        let log = || {
            tracing::debug!(task = ?task.created.task_id, status = %seed, "tools/call became a task");
        };
        match &trace {
            Some(t) => t.span().in_scope(log),
            None => log(),
        }
        let mut core = Core::created(settings, task, trace);
        if seed == TaskStatus::Working {
            return Ok(TaskState::from_core(core, Observed::Pending));
        }
        let observed = match traced!(core.span(), core.read()) {
            Ok(Some(observed)) => observed,
            // Keep the handle; the next wait reads again.
            Ok(None) | Err(_) => Observed::Pending,
        };
        Ok(TaskState::from_core(core, observed))
    }

    /// Re-attaches to an existing task with one `tasks/get`.
    ///
    /// # Errors
    ///
    /// - [`Error::is_builder`]: the reference names a different server than
    ///   this client's [`Client::server_id`];
    /// - [`Error::is_task_not_found`]: the server does not know the task
    ///   (expired, purged, or another server's);
    /// - any request error.
    pub async fn resume(self, task: &TaskRef) -> Result<TaskState> {
        let settings = self.settings();
        if let (Some(theirs), Some(ours)) = (task.server(), settings.client.server_id())
            && theirs != ours
        {
            return Err(Error::builder(format!(
                "the task belongs to server {theirs:?}, but this client talks to {ours:?}"
            ))
            .with_task(task.task_id()));
        }
        if let Some(theirs) = task.protocol_version() {
            let ours = settings.client.protocol_version();
            if settings
                .client
                .wire()
                .reads_tasks_of(theirs)
                .is_some_and(|same| !same)
            {
                return Err(Error::builder(format!(
                    "the task was created under protocol {theirs}, whose tasks this client \
                     (speaking {ours}) cannot read: resume it with a client of that era"
                ))
                .with_task(task.task_id()));
            }
        }
        // Followed from the first read on, so that a 2025-11-25 task's
        // questions and result are kept for the handle this becomes.
        let hold = settings.client.wire().hold(task.task_id());
        let mut trace = Trace::resume(&settings.client, task.task_id());
        if let Some(t) = trace.as_deref_mut() {
            t.read();
        }
        let snapshot = traced!(
            trace.as_ref().map(|t| t.span().clone()),
            settings
                .client
                .wire()
                .read(task.task_id(), settings.request_timeout())
        );
        let snapshot = match snapshot {
            Ok(snapshot) => snapshot,
            Err(e) => {
                if let Some(t) = trace {
                    t.failed(&e);
                }
                return Err(e);
            }
        };
        let (core, observed) =
            Core::resumed(settings, task.task_id().clone(), hold, snapshot, trace);
        Ok(TaskState::from_core(core, observed))
    }
}
