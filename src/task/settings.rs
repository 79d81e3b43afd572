//! The settings a task handle carries, and the builder that sets them.

use std::sync::Arc;
use std::time::Duration;

use super::schedule::{Chosen, Rules};
use crate::Client;
use crate::client::connection::ProgressFn;
use crate::protocol::Progress;

/// How a wait treats the server's input requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputMode {
    /// Answer with the client's [`InputHandlers`](crate::input::InputHandlers)
    /// when every outstanding request has a handler; otherwise stop at
    /// [`Task<InputRequired>`](crate::Task).
    #[default]
    Handlers,
    /// Always stop at `Task<InputRequired>` and let the caller answer with
    /// [`Task::respond`](crate::Task::respond).
    Manual,
}

/// The settings a task handle carries, set once on the builder.
#[derive(bon::Builder)]
#[builder(
    builder_type(
        name = TaskBuilder,
        vis = "pub",
        doc {
            /// Configures a tool call that may become a task. Made by
            /// [`Client::task`]; finished by [`TaskBuilder::call_tool`] or
            /// [`TaskBuilder::resume`].
            ///
            /// Each setter may be called at most once (a second call does not
            /// compile), and every setting travels with the handles the call
            /// returns.
            ///
            /// # Types
            ///
            /// The second type parameter records which setters were called;
            /// you never need to write it.
        }
    ),
    start_fn(name = start, vis = "pub(crate)"),
    finish_fn(name = settings, vis = "pub(super)"),
    state_mod(
        vis = "pub",
        doc {
            /// Type states of [`TaskBuilder`]; you never need to name them.
        }
    )
)]
pub(crate) struct Settings {
    #[builder(start_fn)]
    pub(crate) client: Client,
    /// A lifetime counted from the task's creation. If the task has not
    /// finished when it passes, the client sends `tasks/cancel` and the
    /// outcome is [`Outcome::Expired`].
    ///
    /// 2026-07-28 lets only the server set `ttlMs` (the server may delete
    /// the task when its own TTL passes); this bound is the client's own.
    /// It is sent to the server only inside the legacy `task` opt-in, as
    /// `task: {"ttl": <ms>}`, on a call to a tool that the last
    /// [`Client::list_tools`] listed with `execution.taskSupport`
    /// `optional` or `required` (see [`TaskOptIn`](crate::protocol::TaskOptIn)).
    #[builder(setters(
        name = with_ttl,
        option_fn(doc {
            /// As [`with_ttl`](TaskBuilder::with_ttl), chosen at run time:
            /// `None` sets no lifetime.
        })
    ))]
    pub(crate) ttl: Option<Duration>,
    /// Wait by `subscriptions/listen` and `notifications/tasks` pushes
    /// instead of polling; falls back to polling when the server does not
    /// accept the task id or the stream ends.
    ///
    /// To decide at run time, use [`TaskBuilder::listen_if`].
    #[builder(with = || true, default, setters(option_fn(vis = "", name = maybe_listen_unit)))]
    pub(crate) listen: bool,
    /// Spacing of `tasks/get` when the server sends no `pollIntervalMs`
    /// (default 1 s).
    #[builder(setters(option_fn(doc {
        /// As [`poll_interval`](TaskBuilder::poll_interval); `None` keeps the default.
    })))]
    pub(crate) poll_interval: Option<Duration>,
    /// Floor on any spacing, the server's included (default 50 ms).
    #[builder(setters(option_fn(doc {
        /// As [`min_poll_interval`](TaskBuilder::min_poll_interval); `None` keeps the default.
    })))]
    pub(crate) min_poll_interval: Option<Duration>,
    /// Ceiling on any spacing, the server's included (default 30 s).
    ///
    /// A server may ask for any `pollIntervalMs`, `1e12` included; the
    /// client never waits longer than this between reads of a task, and a
    /// wait that starts when the last read is older than this reads at once.
    /// When it is below `min_poll_interval`, the floor wins.
    #[builder(setters(option_fn(doc {
        /// As [`max_poll_interval`](TaskBuilder::max_poll_interval); `None` keeps the default.
    })))]
    pub(crate) max_poll_interval: Option<Duration>,
    /// Bound on each wait (`finish`, `next`), distinct from the bound on
    /// each request (default 60 s). A wait that reaches it hands the task
    /// back. One wait can be given another bound with
    /// [`Task::finish_within`](crate::Task::finish_within).
    #[builder(default = DEFAULT_TIMEOUT, setters(option_fn(doc {
        /// As [`timeout`](TaskBuilder::timeout); `None` keeps the default.
    })))]
    pub(crate) timeout: Duration,
    /// Bound on each request a wait sends (default: the client's).
    #[builder(setters(option_fn(doc {
        /// As [`request_timeout`](TaskBuilder::request_timeout); `None` keeps the client's.
    })))]
    pub(crate) request_timeout: Option<Duration>,
    /// How waits treat input requests (default [`InputMode::Handlers`]).
    #[builder(default, setters(option_fn(doc {
        /// As [`input`](TaskBuilder::input); `None` keeps the default.
    })))]
    pub(crate) input: InputMode,
    /// Dropping an unfinished handle sends `tasks/cancel` (best effort, on
    /// the current tokio runtime). Without it, dropping a handle only stops
    /// local waiting.
    ///
    /// To decide at run time, use [`TaskBuilder::cancel_on_drop_if`].
    #[builder(with = || true, default, setters(option_fn(vis = "", name = maybe_cancel_on_drop_unit)))]
    pub(crate) cancel_on_drop: bool,
    /// Asks the server for progress reports on the call and hands each to
    /// `f`, in order, as it arrives: the call carries a `progressToken`
    /// (in `_meta`), and the server's `notifications/progress` for it reach
    /// `f` while the call waits for its answer (both eras; a 2025 server
    /// such as the reference `server-everything` reports each step of a
    /// long operation this way).
    ///
    /// Each report also restarts the call's request timeout, so a long
    /// call that keeps reporting is not cut off at the request timeout;
    /// the call is still bounded in all by this builder's
    /// [`timeout`](TaskBuilder::timeout) (or the request timeout, when
    /// that is longer), counted from when it was sent. A report that is
    /// not readable (no number) is skipped and restarts nothing.
    ///
    /// On a 2025-11-25 server, a call that becomes a task keeps its token
    /// for the task's whole life: the reports sent while the task runs
    /// reach `f` too, until the handle finishes or is dropped. (2026-07-28
    /// ends progress with the call's answer; follow a task there with
    /// [`Task::updates`](crate::Task::updates).)
    ///
    /// `f` runs on the task that awaits the call (during a 2025-11-25
    /// task, on a task of its own): keep it short (print, update a
    /// progress bar, send on a channel).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
    /// # use mcp_tasks::protocol::CallToolResult;
    /// # use mcp_tasks::testing::{ScriptedTool, TestServer};
    /// # let server = TestServer::new().tool(ScriptedTool::immediate("export", CallToolResult::text("done")));
    /// # let client = mcp_tasks::Client::connect(server.connect()).await?;
    /// let state = client
    ///     .task()
    ///     .on_progress(|p| println!("export: {p}"))
    ///     .call_tool("export", serde_json::json!({ "table": "orders" }))
    ///     .await?;
    /// let result = state.finish().await?.into_result()?;
    /// # Ok(()) }
    /// ```
    #[builder(
        with = |f: impl Fn(Progress) + Send + Sync + 'static| Arc::new(f) as ProgressFn,
        setters(option_fn(vis = ""))
    )]
    pub(crate) on_progress: Option<ProgressFn>,
}

/// The spacing of reads when the server suggests none.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The floor on the spacing of reads.
const DEFAULT_MIN_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// The ceiling on the spacing of reads.
const DEFAULT_MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);
/// The bound on one wait.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl<S: task_builder::State> TaskBuilder<S> {
    /// [`listen`](TaskBuilder::listen) when `yes`, polling otherwise: for
    /// a choice made at run time, in one call chain.
    ///
    /// ```
    /// # async fn f(client: mcp_tasks::Client, push: bool) -> mcp_tasks::Result<()> {
    /// let state = client.task().listen_if(push).call_tool("export", ()).await?;
    /// # Ok(()) }
    /// ```
    pub fn listen_if(self, yes: bool) -> TaskBuilder<task_builder::SetListen<S>>
    where
        S::Listen: task_builder::IsUnset,
    {
        self.maybe_listen_unit(yes.then_some(()))
    }

    /// [`cancel_on_drop`](TaskBuilder::cancel_on_drop) when `yes`: for a
    /// choice made at run time, in one call chain.
    pub fn cancel_on_drop_if(self, yes: bool) -> TaskBuilder<task_builder::SetCancelOnDrop<S>>
    where
        S::CancelOnDrop: task_builder::IsUnset,
    {
        self.maybe_cancel_on_drop_unit(yes.then_some(()))
    }
}

impl Settings {
    /// The bound on each request: the task's own, else the client's.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
            .unwrap_or_else(|| self.client.request_timeout())
    }
}

/// The settings a task's handle keeps for as long as it lives: the
/// builder's, less the lifetime (`with_ttl`, which becomes a moment when
/// the task is created) and the progress callback (which goes to the call).
pub(crate) struct HandleSettings {
    /// The client the handle talks through.
    pub(crate) client: Client,
    /// The spacing of the task's reads.
    pub(crate) rules: Rules,
    /// The spacing settings the builder was given (for a tracker, which
    /// keeps them in the task's record).
    pub(crate) chosen: Chosen,
    /// The bound on each wait.
    pub(crate) timeout: Duration,
    /// The bound on each request; `None`: the client's.
    request_timeout: Option<Duration>,
    /// Wait by pushes rather than by polling.
    pub(crate) listen: bool,
    /// How waits treat input requests.
    pub(crate) input: InputMode,
    /// Dropping an unfinished handle sends `tasks/cancel`.
    pub(crate) cancel_on_drop: bool,
}

impl Settings {
    fn chosen_poll(&self) -> Chosen {
        Chosen {
            interval: self.poll_interval,
            floor: self.min_poll_interval,
            ceiling: self.max_poll_interval,
        }
    }
}

impl From<Settings> for HandleSettings {
    fn from(s: Settings) -> HandleSettings {
        let chosen = s.chosen_poll();
        HandleSettings {
            client: s.client,
            rules: chosen.over(Rules {
                default: DEFAULT_POLL_INTERVAL,
                floor: DEFAULT_MIN_POLL_INTERVAL,
                ceiling: DEFAULT_MAX_POLL_INTERVAL,
            }),
            chosen,
            timeout: s.timeout,
            request_timeout: s.request_timeout,
            listen: s.listen,
            input: s.input,
            cancel_on_drop: s.cancel_on_drop,
        }
    }
}

impl HandleSettings {
    /// The bound on each request: the task's own, else the client's.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
            .unwrap_or_else(|| self.client.request_timeout())
    }
}
