//! Typed task handles: the typestate API for long-running tool calls.
//!
//! # Lifecycle
//!
//! ```text
//!  client.task()…call_tool(name, args)
//!        │
//!        ├── immediate result ───────────────────────────────▶ Task<Finished>  (id() == None)
//!        │
//!        ▼
//!  Task<Pending> ── next() / refresh() ──▶ TaskState ──┐
//!        │  ▲                                           │
//!        │  └──────────── respond(answers) ─────────────┤
//!        │                                              ▼
//!        │                                   Task<InputRequired>
//!        │                                              │
//!        └── finish() / .await ──┬──────────────────────┘
//!                                ▼
//!                          Task<Finished> ── outcome(): Completed | Failed | Cancelled | Expired
//! ```
//!
//! | method | `Pending` | `InputRequired` | `Finished` |
//! |---|---|---|---|
//! | `status_message()`, `snapshot()` | yes | yes | yes |
//! | `id()` | yes | yes | `Option` |
//! | `refresh()` (`tasks/get`) | yes | yes | — |
//! | `next()` (wait for a change) | yes | — | — |
//! | `finish()`, `.await` | yes | yes | — |
//! | `requests()`, `respond()` (`tasks/update`) | — | yes | — |
//! | `cancel()`, `cancel_and_wait()` (`tasks/cancel`) | yes | yes | — |
//! | `reference()` | yes | yes | — |
//! | `updates()` (a `Stream` of snapshots) | yes | — | — |
//! | `outcome()`, `into_result()`, `structured()` | — | — | yes |
//!
//! Transitions consume the handle. A failed one returns it inside a
//! [`TaskError`], so no error after creation loses the task; a wait that
//! reaches its deadline returns it too.
//!
//! # Tracing
//!
//! Each handle's life is one [`tracing`](https://docs.rs/tracing) span,
//! and each request it sends is a span inside it, so a tracing backend can
//! group by task and see what each one is doing.
//!
//! **`mcp_tasks.task`** (level `INFO`) opens when `call_tool` sends its
//! `tools/call` (or `resume` its read) and closes when the handle's life
//! ends: the task is seen to end, or the handle is dropped, detached
//! ([`Task::detach`] turns it into a [`TaskRef`]), or let go by
//! [`Task::cancel`]. A wait (`finish`, `next`, `updates`, `cancel_and_wait`)
//! and every other method that sends a request (`refresh`, `respond`,
//! `cancel`) runs inside it. Its fields:
//!
//! | field | value |
//! |---|---|
//! | `tool` | the tool's name (empty on a resumed task: a `TaskRef` does not carry it) |
//! | `task_id` | the redacted id, [`TaskId::redacted`](crate::protocol::TaskId::redacted) (`#a52d1d55`); never the whole id. Empty for an immediate answer |
//! | `protocol_version` | the revision the session speaks (`2026-07-28`, `2025-11-25`, …) |
//! | `era` | `modern` (2026-07-28) or `initialize` (the initialize-era revisions) |
//! | `resumed` | whether `resume` made the handle |
//! | `outcome` | at the end: `completed`, `failed`, `cancelled`, `expired` (the task's [`Outcome`]); `dropped` (the handle was dropped unfinished), `detached`, `cancel_requested` (`cancel()` was acknowledged and the handle let go); `error` (`call_tool` or `resume` failed before there was a handle) |
//! | `reads` | at the end: the `tasks/get` requests sent for the task |
//! | `input_rounds` | at the end: the answers to the task's input requests the server acknowledged (one per `tasks/update`) |
//! | `error` | with `outcome = "error"`: the kind of error (as on a request) |
//!
//! Its events (`INFO`, but for `task resumed`): `task created`
//! (`status`), `task resumed` (`status`; `DEBUG`, since a
//! [`Tracker`](crate::store::Tracker) resumes a task on every read),
//! `status changed` (`from`, `to`, and `requests` open when
//! `to` is `input_required`), `input answered` (`round`, `answers`),
//! `cancel sent`, and `tools/call asked for input` (`round`, `requests`)
//! for the input rounds of the call itself, before a task exists. A
//! handle dropped with `cancel_on_drop` keeps its span open until the
//! `tasks/cancel` it sends has its answer.
//!
//! **`mcp_tasks.request`** (level `DEBUG`), one per JSON-RPC request, a
//! child of the span current when it is sent (the task span for a task's
//! requests; requests that belong to no task, such as `server/discover`,
//! are children of the caller's span). Fields: `method`, `request_id`,
//! `duration_us` (until the reply, or until the request was given up),
//! and on failure `error`: `timeout`, `transport`, `rpc`, `protocol`,
//! `outcome_unknown`, `server_cancelled`, `refused`, … (`abandoned` when
//! the request's future was dropped first), with `rpc_code` for a JSON-RPC
//! error and `http_status` for a failed HTTP reply.
//!
//! With no subscriber (or one that filters these spans out), a handle
//! holds no span and a wait is not wrapped in one: a pending task costs the
//! same as without tracing.
//!
//! `cargo run --example tracing` prints the spans of a task that works,
//! asks for a confirmation (answered by a handler) and completes, with
//! `tracing-subscriber`'s `fmt` layer:
//!
//! ```text
//! DEBUG mcp_tasks.request{method="server/discover"}: new
//! DEBUG mcp_tasks.request{method="server/discover" request_id=1 duration_us=638}: close
//!  INFO mcp_tasks.task{tool="export" era="modern" resumed=false}: new
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false}:mcp_tasks.request{method="tools/call"}: new
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false}:mcp_tasks.request{method="tools/call" request_id=2 duration_us=434}: close
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false}: tools/call became a task task=TaskId(#f1c4ac69) status=working
//!  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}: task created status="working"
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get"}: new
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get" request_id=3 duration_us=566}: close
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get"}: new
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get" request_id=4 duration_us=703}: close
//!  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}: status changed from="working" to="input_required" requests=1
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/update"}: new
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/update" request_id=5 duration_us=438}: close
//!  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}: input answered round=1 answers=1
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get"}: new
//! DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get" request_id=6 duration_us=633}: close
//!  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}: status changed from="input_required" to="completed"
//!  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69" outcome="completed" reads=3 input_rounds=1}: close
//! result: 42 rows exported
//! ```
//!
//! # Compile-time guarantees
//!
//! Each guarantee below is shown by a program that compiles and a twin,
//! one line different, that does not, with the error it fails with (so a
//! twin that fails for another reason, a new lint say, fails the docs).
//!
//! A setter can be called only once:
//!
//! ```
//! # use std::time::Duration;
//! # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
//! let state = client.task().with_ttl(Duration::from_secs(60)).call_tool("export", ()).await?;
//! # drop(state); Ok(()) }
//! ```
//! ```compile_fail,E0277
//! # use std::time::Duration;
//! # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
//! let state = client.task().with_ttl(Duration::from_secs(60)).with_ttl(Duration::from_secs(9)).call_tool("export", ()).await?;
//! # drop(state); Ok(()) }
//! ```
//!
//! `call_tool` needs the tool's name and its arguments:
//!
//! ```
//! # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
//! let state = client.task().listen().call_tool("export", serde_json::json!({"id": 7})).await?;
//! # drop(state); Ok(()) }
//! ```
//! ```compile_fail,E0061
//! # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
//! let state = client.task().listen().call_tool("export").await?;
//! # drop(state); Ok(()) }
//! ```
//!
//! Only a finished task has an outcome:
//!
//! ```
//! # use mcp_tasks::{Task, Finished};
//! fn report(task: Task<Finished>) { println!("{:?}", task.outcome()); }
//! ```
//! ```compile_fail,E0599
//! # use mcp_tasks::{Task, Pending};
//! fn report(task: Task<Pending>) { println!("{:?}", task.outcome()); }
//! ```
//!
//! Only a task that asks for input can be answered:
//!
//! ```
//! # use mcp_tasks::{Task, InputRequired, protocol::InputResponses};
//! async fn answer(task: Task<InputRequired>, answers: InputResponses) { let _ = task.respond(answers).await; }
//! ```
//! ```compile_fail,E0599
//! # use mcp_tasks::{Task, Pending, protocol::InputResponses};
//! async fn answer(task: Task<Pending>, answers: InputResponses) { let _ = task.respond(answers).await; }
//! ```
//!
//! A finished task cannot be cancelled:
//!
//! ```
//! # use mcp_tasks::{Task, Pending};
//! async fn stop(task: Task<Pending>) { let _ = task.cancel().await; }
//! ```
//! ```compile_fail,E0599
//! # use mcp_tasks::{Task, Finished};
//! async fn stop(task: Task<Finished>) { let _ = task.cancel().await; }
//! ```
//!
//! A handle is used up by a transition; carry on with the one it returns:
//!
//! ```
//! # use mcp_tasks::{Task, Pending};
//! async fn wait(task: Task<Pending>) {
//!     let state = task.refresh().await;
//!     let _ = state;
//! }
//! ```
//! ```compile_fail,E0382
//! # use mcp_tasks::{Task, Pending};
//! async fn wait(task: Task<Pending>) {
//!     let state = task.refresh().await;
//!     let _ = task.refresh().await;
//! }
//! ```

mod any;
mod builder;
mod core;
mod drive;
mod handle;
pub(crate) mod machine;
mod observed;
mod outcome;
mod reference;
pub(crate) mod schedule;
mod settings;
mod snapshot;
mod state;
mod trace;
mod updates;

pub use any::TaskState;
pub use handle::{Task, TaskError};
pub use outcome::Outcome;
pub use reference::TaskRef;
pub use settings::{InputMode, TaskBuilder, task_builder};
pub use snapshot::Snapshot;
pub use state::{Cancellable, Finished, InputRequired, Pending, State};
pub use updates::Updates;
