//! What the scripted tools do: [`ScriptedTool`] and [`TaskScript`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::protocol::{
    CallToolResult, InputRequests, RpcError, TaskStatus, TaskSupport, Tool, ToolExecution,
};

/// A tool of the [`TestServer`](super::TestServer) and the script it follows
/// when called.
///
/// ```
/// use std::time::Duration;
/// use mcp_tasks::protocol::CallToolResult;
/// use mcp_tasks::testing::{ScriptedTool, TaskScript};
///
/// let echo = ScriptedTool::immediate("echo", CallToolResult::text("hi"))
///     .description("Says hi at once");
/// let export = ScriptedTool::task(
///     "export",
///     TaskScript::new()
///         .poll_interval(Duration::from_millis(100))
///         .working(Duration::from_millis(50), "halfway")
///         .complete(Duration::from_millis(50), CallToolResult::text("done")),
/// );
/// # drop((echo, export));
/// ```
#[derive(Debug, Clone)]
pub struct ScriptedTool {
    pub(super) tool: Tool,
    pub(super) behavior: Behavior,
    /// Calls without `params.task` are refused, as 2025-11-25 servers do.
    pub(super) needs_task_param: bool,
}

/// How a tool answers `tools/call`.
#[derive(Debug, Clone)]
pub(super) enum Behavior {
    /// A `complete` result at once.
    Immediate(CallToolResult),
    /// MRTR: `input_required` until a retry answers every key.
    InputRequired {
        requests: InputRequests,
        request_state: Option<String>,
        result: CallToolResult,
    },
    /// MRTR that never ends.
    InputForever(InputRequests),
    /// A task following a script.
    Task(TaskScript),
    /// A task following the script written for the call's arguments.
    TaskFrom(ScriptFn),
}

/// Writes a task's script from the arguments of its `tools/call`.
#[derive(Clone)]
pub(super) struct ScriptFn(Arc<dyn Fn(&Value) -> TaskScript + Send + Sync>);

impl ScriptFn {
    /// The script for a call with `arguments` (`{}` when the call has none).
    pub(super) fn script(&self, arguments: &Value) -> TaskScript {
        (self.0)(arguments)
    }
}

impl fmt::Debug for ScriptFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ScriptFn(..)")
    }
}

impl ScriptedTool {
    fn with(name: impl Into<String>, behavior: Behavior) -> Self {
        ScriptedTool {
            tool: Tool::new(name),
            behavior,
            needs_task_param: false,
        }
    }

    /// A tool that answers at once with `result` (`resultType: "complete"`).
    pub fn immediate(name: impl Into<String>, result: CallToolResult) -> Self {
        Self::with(name, Behavior::Immediate(result))
    }

    /// A tool that needs input first, through multi round-trip requests (MRTR).
    ///
    /// The first call answers `input_required` with `requests` (and
    /// `requestState`, when `request_state` is `Some`). A retry whose
    /// `inputResponses` answers every key, and whose `requestState` equals
    /// the one sent byte for byte, gets `result` with `structuredContent`
    /// replaced by `{"inputResponses": {key: response, …}}` (the answers to the
    /// requested keys, as received). A retry missing some keys gets
    /// `input_required` again with just the missing keys and the same state;
    /// the server is stateless, so a later retry must again answer every key.
    /// A retry whose `requestState` was changed, dropped or added is answered
    /// with JSON-RPC error `-32602` "requestState was altered".
    pub fn input_required(
        name: impl Into<String>,
        requests: InputRequests,
        request_state: Option<String>,
        result: CallToolResult,
    ) -> Self {
        Self::with(
            name,
            Behavior::InputRequired {
                requests,
                request_state,
                result,
            },
        )
    }

    /// A tool that always answers `input_required` with `requests`, however
    /// it is retried (for testing that the client bounds its MRTR loop).
    pub fn input_forever(name: impl Into<String>, requests: InputRequests) -> Self {
        Self::with(name, Behavior::InputForever(requests))
    }

    /// A tool whose calls become tasks following `script`.
    ///
    /// A call that does not declare the Tasks extension is answered with
    /// `-32021` naming the extension in `data.requiredCapabilities`.
    pub fn task(name: impl Into<String>, script: TaskScript) -> Self {
        Self::with(name, Behavior::Task(script))
    }

    /// A tool whose calls become tasks following the script that `write`
    /// returns for the call's `arguments` (`{}` when the call has none):
    /// a task whose length or result depends on what it was asked, so
    /// that each outcome can be told apart from the others.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_tasks::protocol::CallToolResult;
    /// use mcp_tasks::testing::{ScriptedTool, TaskScript};
    ///
    /// // `{"ms": 50, "n": 7}` works 50 ms, then returns its arguments.
    /// let job = ScriptedTool::task_from_arguments("job", |arguments| {
    ///     let ms = arguments["ms"].as_u64().unwrap_or(300);
    ///     TaskScript::new().complete(
    ///         Duration::from_millis(ms),
    ///         CallToolResult::text("done").with_structured(arguments.clone()),
    ///     )
    /// });
    /// # drop(job);
    /// ```
    ///
    /// As with [`ScriptedTool::task`], a call that does not declare the
    /// Tasks extension is refused.
    pub fn task_from_arguments<F>(name: impl Into<String>, write: F) -> Self
    where
        F: Fn(&Value) -> TaskScript + Send + Sync + 'static,
    {
        Self::with(name, Behavior::TaskFrom(ScriptFn(Arc::new(write))))
    }

    /// Sets the description shown by `tools/list`.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.tool.description = Some(d.into());
        self
    }

    /// Sets the input schema shown by `tools/list` (default `{"type":"object"}`).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.tool.input_schema = schema;
        self
    }

    /// Shows `execution: {"taskSupport": …}` for the tool in `tools/list`,
    /// as servers still on 2025-11-25 do. It changes nothing else: pair it
    /// with [`ScriptedTool::require_task_param`] to act on it.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.tool.execution = Some(ToolExecution::task_support(support));
        self
    }

    /// Refuses every call whose params lack the legacy `task` member with
    /// `-32601` "Tool required task augmented call", as neva 0.9 does for a
    /// tool whose task support is `required`. A call that carries it
    /// follows the tool's script.
    pub fn require_task_param(mut self) -> Self {
        self.needs_task_param = true;
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// The tool as `tools/list` shows it: name, description, input schema.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }
}

/// The life of a task, step by step, on tokio's clock.
///
/// Steps run in order; each one's `after` is measured from the end of the
/// previous step (for the first, from the task's creation; for an
/// [`input`](TaskScript::input) step, its end is when the last key is
/// answered). A script without a terminal step leaves the task in its last
/// status forever.
///
/// ```
/// use std::time::Duration;
/// use mcp_tasks::protocol::InputRequest;
/// use mcp_tasks::testing::TaskScript;
///
/// let ms = Duration::from_millis;
/// let script = TaskScript::new()
///     .ttl(Duration::from_secs(60))
///     .poll_interval(ms(200))
///     .input(ms(100), [("approve".to_owned(), InputRequest::form("OK?", serde_json::json!({"type": "object"})))].into())
///     .working(ms(0), "approved, exporting")
///     .complete_with_inputs(ms(500));
/// # drop(script);
/// ```
#[derive(Debug, Clone)]
pub struct TaskScript {
    pub(super) poll_interval: Option<Duration>,
    pub(super) ttl: Option<Duration>,
    pub(super) initial_status: TaskStatus,
    pub(super) status_message: Option<String>,
    pub(super) steps: Vec<Step>,
    pub(super) cancel_delay: Duration,
    pub(super) ignore_cancel: bool,
}

/// One step of a [`TaskScript`].
#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) after: Duration,
    pub(super) action: Action,
}

/// What a step does to the task.
#[derive(Debug, Clone)]
pub(super) enum Action {
    Working(String),
    SetPollInterval(Duration),
    Input(InputRequests),
    Complete(CallToolResult),
    CompleteWithInputs,
    Fail(RpcError),
}

impl Default for TaskScript {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskScript {
    /// An empty script: the task stays `working` forever.
    pub fn new() -> Self {
        TaskScript {
            poll_interval: None,
            ttl: None,
            initial_status: TaskStatus::Working,
            status_message: None,
            steps: Vec::new(),
            cancel_delay: Duration::ZERO,
            ignore_cancel: false,
        }
    }

    fn step(mut self, after: Duration, action: Action) -> Self {
        self.steps.push(Step { after, action });
        self
    }

    /// `pollIntervalMs` on every snapshot (omitted when unset).
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.poll_interval = Some(d);
        self
    }

    /// `ttlMs`. When it has passed (measured from creation) the task is
    /// deleted: `tasks/*` then answer `-32602` "task not found". Without it
    /// `ttlMs` is `null` (unlimited).
    pub fn ttl(mut self, d: Duration) -> Self {
        self.ttl = Some(d);
        self
    }

    /// The status reported in the `CreateTaskResult` (default `working`).
    /// The task's real state still starts `working` and follows the steps.
    pub fn initial_status(mut self, s: TaskStatus) -> Self {
        self.initial_status = s;
        self
    }

    /// The initial `statusMessage`.
    pub fn status_message(mut self, m: impl Into<String>) -> Self {
        self.status_message = Some(m.into());
        self
    }

    /// After `after`, status `working` with `message` as `statusMessage`.
    pub fn working(self, after: Duration, message: impl Into<String>) -> Self {
        self.step(after, Action::Working(message.into()))
    }

    /// After `after`, `pollIntervalMs` becomes `d` (the status does not change).
    pub fn set_poll_interval(self, after: Duration, d: Duration) -> Self {
        self.step(after, Action::SetPollInterval(d))
    }

    /// After `after`, status `input_required` with `requests`.
    ///
    /// The script pauses until every key is answered through `tasks/update`.
    /// A partial answer keeps the task `input_required` with the remaining
    /// keys; unknown and already-answered keys are ignored. Once all are
    /// answered the task turns `working` and the script goes on. Keys already
    /// answered earlier in the task are dropped from `requests`; if none
    /// remain, the step does nothing.
    pub fn input(self, after: Duration, requests: InputRequests) -> Self {
        self.step(after, Action::Input(requests))
    }

    /// After `after`, status `completed` with `result` (terminal).
    pub fn complete(self, after: Duration, result: CallToolResult) -> Self {
        self.step(after, Action::Complete(result))
    }

    /// After `after`, status `completed` (terminal) with a result whose
    /// `structuredContent` is `{"inputResponses": {key: response, …}}`: every
    /// answer the task received, as received.
    pub fn complete_with_inputs(self, after: Duration) -> Self {
        self.step(after, Action::CompleteWithInputs)
    }

    /// After `after`, status `failed` with `error` (terminal); the
    /// `statusMessage` becomes the error's message.
    pub fn fail(self, after: Duration, error: RpcError) -> Self {
        self.step(after, Action::Fail(error))
    }

    /// `tasks/cancel` is acknowledged at once and the task turns `cancelled`
    /// after `d` (default zero: at once), unless it ended first.
    pub fn cancel_delay(mut self, d: Duration) -> Self {
        self.cancel_delay = d;
        self
    }

    /// `tasks/cancel` is acknowledged but the task keeps running.
    pub fn ignore_cancel(mut self) -> Self {
        self.ignore_cancel = true;
        self
    }
}
