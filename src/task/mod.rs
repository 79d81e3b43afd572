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
mod settings;
mod snapshot;
mod state;
mod updates;

pub use any::TaskState;
pub use handle::{Task, TaskError};
pub use outcome::Outcome;
pub use reference::TaskRef;
pub use settings::{InputMode, TaskBuilder, task_builder};
pub use snapshot::Snapshot;
pub use state::{Cancellable, Finished, InputRequired, Pending, State};
pub use updates::Updates;
