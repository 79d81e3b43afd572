#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]
#![deny(unused_must_use)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings), allow(dead_code, unused_variables))))]
//! A typestate client for long-running MCP tool calls.
//!
//! MCP servers can answer a `tools/call` with a durable *task* instead of a
//! result (the Tasks extension of MCP revision 2026-07-28, or the
//! experimental tasks of 2025-11-25). `mcp-tasks` drives such calls from
//! application code: it polls at the server's interval, answers the
//! server's input requests, cancels, resumes, and hands back a handle whose
//! type says where the task stands. It speaks 2026-07-28 and the
//! initialize era (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05),
//! negotiated on connect, behind the same API.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
//! use std::time::Duration;
//! use mcp_tasks::{Client, TaskState};
//! # use mcp_tasks::protocol::CallToolResult;
//! # use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
//! # let server = TestServer::new().tool(ScriptedTool::task("export", TaskScript::new()
//! #     .working(Duration::from_millis(5), "exporting")
//! #     .complete(Duration::from_millis(5), CallToolResult::text("42 rows"))));
//! # let transport = server.connect();
//!
//! let client = Client::connect(transport).await?;
//! let state = client
//!     .task()
//!     .with_ttl(Duration::from_secs(300))
//!     .call_tool("export", serde_json::json!({ "table": "orders" }))
//!     .await?;
//! match state {
//!     TaskState::Pending(task) => println!("working: {:?}", task.status_message()),
//!     TaskState::InputRequired(task) => println!("needs: {:?}", task.requests().keys()),
//!     TaskState::Finished(task) => println!("done: {:?}", task.outcome()),
//! }
//! # Ok(()) }
//! ```
//!
//! # Tour
//!
//! - [`Client`]: connect over a [`transport`] (a child process by
//!   default), [`discover`](Client::discover), [`list_tools`](Client::list_tools),
//!   and [`call_tool`](Client::call_tool) for a plain call that just returns
//!   the result, whatever shape the server answers in.
//! - [`Client::task`]: the typestate builder. Its handles — [`Task<Pending>`],
//!   [`Task<InputRequired>`], [`Task<Finished>`] — have only the methods
//!   valid in their state; see [`Task`] for the lifecycle and the
//!   compile-time guarantees.
//! - `listen()` on the builder: follow tasks by `notifications/tasks` pushes
//!   over one shared `subscriptions/listen` stream, falling back to polling
//!   when the server does not push; [`Task::updates`] streams the snapshots.
//! - [`input`]: handlers that answer elicitation, sampling and roots
//!   requests, in MRTR rounds and inside tasks alike.
//! - Server notifications: log messages reach `tracing` and
//!   [`ClientBuilder::on_log`] ([`Client::set_log_level`] asks for a
//!   level), `list_changed` reaches [`ClientBuilder::on_list_changed`]
//!   (and makes the client forget a stale tool listing), and a server's
//!   `notifications/cancelled` ends the request it names at once
//!   ([`Error::is_server_cancelled`]).
//! - [`TaskRef`]: persist a task and resume it after a restart.
//! - [`store`]: tasks that outlive the process. A [`store::TaskStore`]
//!   (in memory, a SQLite file, or Postgres for many machines) keeps every
//!   task, and a [`store::Tracker`] worker drives them from it, hands each
//!   outcome to you until acknowledged, and survives crashes and restarts.
//! - Tracing: one `mcp_tasks.task` span per task handle, with the
//!   `mcp_tasks.request` spans of its requests inside; see
//!   [`Task`'s docs](Task#tracing).
//! - [`Error`]: one opaque error with predicates (`is_timeout`,
//!   `is_deadline`, `is_task_not_found`, `rpc_error`, …). A failed task is
//!   not an error but an [`Outcome`].
//!
//! # Resources, prompts and completion
//!
//! The rest of a server, typed, on both eras, with the same API:
//!
//! - Resources: [`Client::list_resources`], [`Client::list_resource_templates`],
//!   [`Client::read_resource`] (contents as text or bytes through
//!   [`ResourceContents::body`](protocol::ResourceContents::body)), and
//!   [`Client::subscribe_resource`], whose updates reach
//!   [`ClientBuilder::on_resource_updated`].
//! - Prompts: [`Client::list_prompts`] and [`Client::get_prompt`], whose
//!   messages carry the same [`ContentBlock`](protocol::ContentBlock)s as
//!   tool results.
//! - Completion: [`Client::complete`] for a prompt's argument or a resource
//!   template's variable.
//!
//! Every listing (tools too) goes through one pager with the same bounds,
//! or page by page with [`Pages`]. A request for what the server did not
//! advertise fails with [`Error::is_missing_capability`] and sends nothing.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
//! use mcp_tasks::Client;
//! use mcp_tasks::protocol::{
//!     Completion, CompletionArgument, CompletionRef, GetPromptResult, Prompt, PromptMessage,
//!     Resource, ResourceBody, ResourceContents, Role,
//! };
//! use mcp_tasks::testing::TestServer;
//!
//! let server = TestServer::new()
//!     .resource(Resource::new("mem://motd", "motd"), ResourceContents::text("mem://motd", "hi"))
//!     .prompt(Prompt::new("greet"), GetPromptResult::new([PromptMessage::text(Role::User, "Hello")]))
//!     .completion(CompletionRef::prompt("greet"), "name", Completion::new(["Ada", "Alan"]));
//! let client = Client::connect(server.connect()).await?;
//!
//! let motd = client.read_resource("mem://motd").await?;
//! assert_eq!(motd.contents[0].body().ok(), Some(ResourceBody::Text("hi")));
//! let greeting = client.get_prompt("greet", [("name", "Ada")]).await?;
//! assert_eq!(greeting.messages.len(), 1);
//! let names = client
//!     .complete(CompletionRef::prompt("greet"), CompletionArgument::new("name", "Al"), None)
//!     .await?;
//! assert_eq!(names.values, ["Alan"]);
//! # Ok(()) }
//! ```
//!
//! # Feature flags
//!
//! - `stdio` *(enabled by default)*: the [`Stdio`] child
//!   process transport and [`LineTransport`].
#![cfg_attr(
    feature = "http",
    doc = "- `http`: the [`Http`] Streamable HTTP transport for"
)]
#![cfg_attr(
    not(feature = "http"),
    doc = "- `http`: the `Http` Streamable HTTP transport for"
)]
//!   remote servers (reqwest; TLS by rustls with the `ring` provider and
//!   the platform's trust store, so no system library is needed to build).
//! - `native-tls`: `http` with the platform's TLS instead of rustls
//!   (OpenSSL on Linux, which needs its headers and `pkg-config` to build).
//! - `oauth`: `http` with OAuth 2.1 authorization as MCP specifies it
//!   (`transport::auth`: discovery, client registration, the authorization
//!   code flow with PKCE, refresh, step-up; oauth2 and url).
#![cfg_attr(
    feature = "sqlite",
    doc = "- `sqlite`: [`store::SqliteStore`], a task store in one SQLite file"
)]
#![cfg_attr(
    not(feature = "sqlite"),
    doc = "- `sqlite`: `store::SqliteStore`, a task store in one SQLite file"
)]
//!   (SQLite is built with the crate: no system library).
#![cfg_attr(
    feature = "postgres",
    doc = "- `postgres`: [`store::PostgresStore`], a task store many workers share"
)]
#![cfg_attr(
    not(feature = "postgres"),
    doc = "- `postgres`: `store::PostgresStore`, a task store many workers share"
)]
//!   (tokio-postgres, without TLS).
#![cfg_attr(
    feature = "test-util",
    doc = "- `test-util`: [`testing`], a scripted in-process 2026-07-28 Tasks server"
)]
#![cfg_attr(
    not(feature = "test-util"),
    doc = "- `test-util`: `testing`, a scripted in-process 2026-07-28 Tasks server"
)]
//!   to test task code against.
#![cfg_attr(
    feature = "inbox",
    doc = "- `inbox`: [`inbox::router`], web pages over a task store where people"
)]
#![cfg_attr(
    not(feature = "inbox"),
    doc = "- `inbox`: `inbox::router`, web pages over a task store where people"
)]
//!   see tracked tasks, cancel them and answer their questions (an axum
//!   router to mount; `mcp-tasks serve` serves it on its own).
//!
//! # Cancel safety
//!
//! Dropping a request future removes the request from the client's table
//! and tells the server (`notifications/cancelled` on stdio; over HTTP the
//! request's response stream is closed instead). Dropping a wait
//! (`finish`, `next`) drops the handle it consumed; the task runs on on the
//! server, and a [`TaskRef`] taken before resumes it.
//!
//! # Stability
//!
//! `Display` texts of errors, the default poll interval, floor and timeouts
//! may change in minor releases.

mod client;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod human;
#[cfg(feature = "inbox")]
#[cfg_attr(docsrs, doc(cfg(feature = "inbox")))]
pub mod inbox;
pub mod input;
pub mod protocol;
pub mod store;
mod task;
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod testing;
pub mod transport;

pub use client::{
    Client, ClientBuilder, ClientStats, ListChanged, Listed, Pages, SERVER_LOG_TARGET, ToolPages,
    client_builder,
};
pub use error::{BoxError, Error, Result};
pub use input::InputHandlers;
pub use task::{
    Cancellable, Finished, InputMode, InputRequired, Outcome, Pending, State, Task, TaskBuilder,
    TaskError, TaskRef, TaskState, Updates, task_builder,
};
#[cfg(feature = "http")]
pub use transport::Http;
#[cfg(feature = "stdio")]
pub use transport::{LineTransport, Stdio};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[allow(dead_code)]
fn _assert_impls() {
    fn send_sync_static<T: Send + Sync + 'static>() {}
    send_sync_static::<Client>();
    send_sync_static::<Error>();
    send_sync_static::<Task<Pending>>();
    send_sync_static::<Task<InputRequired>>();
    send_sync_static::<Task<Finished>>();
    send_sync_static::<TaskState>();
    send_sync_static::<TaskRef>();
}
