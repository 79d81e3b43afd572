//! A scripted, in-process MCP 2026-07-28 server with the Tasks extension,
//! for testing code that runs tools and tasks.
//!
//! [`TestServer`] speaks the protocol on the wire like a real server: it
//! answers `server/discover`, pages `tools/list`, runs [`ScriptedTool`]s
//! (immediate results, multi round-trip input, tasks following a
//! [`TaskScript`]), serves `tasks/get`, `tasks/update` and `tasks/cancel`,
//! and pushes `notifications/tasks` on `subscriptions/listen` streams. Every
//! request it receives is recorded for assertions, and what clients asked
//! about each task (reads, overlapping reads, answers, cancels) is counted
//! ([`TestServer::counters`]).
//!
//! Everything runs on tokio's clock, so tests can use
//! `#[tokio::test(start_paused = true)]` and take no real time.
//!
//! ```
//! use std::time::Duration;
//! use mcp_tasks::protocol::CallToolResult;
//! use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let server = TestServer::new()
//!     .tool(ScriptedTool::immediate("echo", CallToolResult::text("hi")))
//!     .tool(ScriptedTool::task(
//!         "export",
//!         TaskScript::new()
//!             .poll_interval(Duration::from_millis(100))
//!             .complete(Duration::from_secs(1), CallToolResult::text("exported")),
//!     ));
//! let transport = server.connect(); // hand this to the client
//! # drop(transport);
//! assert_eq!(server.count("tools/call"), 0);
//! # }
//! ```
//!
//! Tasks belong to the server, not to a connection: a task created on one
//! connection can be read from another (as after a reconnect). Listen streams
//! belong to their connection and end with it.
//!
//! To test how code copes with a server that misbehaves (hangs, duplicate or
//! stale pushes, snapshots that go back), give it [`Faults`]:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::time::Duration;
//! use mcp_tasks::Client;
//! use mcp_tasks::testing::{Faults, ScriptedTool, TaskScript, TestServer};
//!
//! let server = TestServer::new()
//!     .tool(ScriptedTool::task("export", TaskScript::new()))
//!     .faults(Faults::new().never_answer("tools/call"));
//! let client = Client::builder()
//!     .request_timeout(Duration::from_millis(50))
//!     .connect(server.connect())
//!     .await
//!     .unwrap();
//! let e = client.call_tool("export", ()).await.unwrap_err();
//! assert!(e.is_timeout() && e.is_outcome_unknown());
//! assert_eq!(server.faults_fired(), 1);
//! # }
//! ```
//!
//! To test how code copes with a task store that misbehaves (away, a
//! corrupt record, a write that stalls or comes after another worker took
//! the record over), wrap the store in a [`HookedStore`].

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use crate::protocol::{
    Completion, CompletionRef, GetPromptResult, InputRequests, PROTOCOL_VERSION, Prompt, Resource,
    ResourceContents, ResourceTemplate, TaskId,
};
use crate::transport::memory::{self, MemoryTransport};
use crate::transport::{LineTransport, Transport};

mod counts;
mod faults;
mod record;
mod resources;
mod script;
mod serve;
mod store;
mod tasks;
mod wire;

#[cfg(test)]
mod tests;

pub use counts::{Counters, TaskCounts, Totals};
pub use faults::Faults;
pub use record::RecordedRequest;
pub use script::{ScriptedTool, TaskScript};
pub use store::{HookedStore, StoreCall, StoreReply};

/// The default `tools/list` page size.
const DEFAULT_PAGE_SIZE: usize = 50;

/// A scripted MCP 2026-07-28 server with the Tasks extension. See the
/// [module documentation](self).
///
/// Configure it with the builder methods before serving; clones share the
/// recorded requests, the tasks and the subscriptions.
#[derive(Clone)]
pub struct TestServer {
    config: Arc<Config>,
    shared: Arc<tasks::Shared>,
}

#[derive(Debug, Clone)]
struct Config {
    tools: Vec<ScriptedTool>,
    page_size: usize,
    supported_versions: Vec<String>,
    accept_listen_task_ids: bool,
    listen_supported: bool,
    read_delay: Duration,
    keep_requests: bool,
    /// Resources, each with what `resources/read` answers.
    resources: Vec<(Resource, ResourceContents)>,
    resource_templates: Vec<ResourceTemplate>,
    /// Prompts, each with what `prompts/get` answers.
    prompts: Vec<(Prompt, GetPromptResult)>,
    /// What `completion/complete` offers, by reference and argument name.
    completions: Vec<(CompletionRef, String, Completion)>,
    /// Whether `resources.subscribe` is advertised (default true).
    resource_subscribe: bool,
    /// Input asked for before a `prompts/get` or `resources/read` is
    /// answered, by method and prompt name or resource URI.
    inputs_first: Vec<(String, String, InputRequests)>,
}

impl fmt::Debug for TestServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("TestServer")
            .field(
                "tools",
                &self
                    .config
                    .tools
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>(),
            )
            .field("tasks", &state.task_ids().len())
            .field("requests", &state.requests().len())
            .field("open_subscriptions", &state.open_subscriptions())
            .finish_non_exhaustive()
    }
}

impl Default for TestServer {
    fn default() -> Self {
        Self::new()
    }
}

impl TestServer {
    /// A server with no tools that speaks `2026-07-28`, advertises `tools`
    /// and the Tasks extension, and names itself `mcp-tasks-test-server`
    /// with this crate's version.
    pub fn new() -> Self {
        TestServer {
            config: Arc::new(Config {
                tools: Vec::new(),
                page_size: DEFAULT_PAGE_SIZE,
                supported_versions: vec![PROTOCOL_VERSION.to_owned()],
                accept_listen_task_ids: true,
                listen_supported: true,
                read_delay: Duration::ZERO,
                keep_requests: true,
                resources: Vec::new(),
                resource_templates: Vec::new(),
                prompts: Vec::new(),
                completions: Vec::new(),
                resource_subscribe: true,
                inputs_first: Vec::new(),
            }),
            shared: tasks::Shared::new(),
        }
    }

    fn config(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// Adds a tool (replacing one of the same name). `tools/list` shows tools
    /// in the order they were added.
    pub fn tool(mut self, tool: ScriptedTool) -> Self {
        let tools = &mut self.config().tools;
        match tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(existing) => *existing = tool,
            None => tools.push(tool),
        }
        self
    }

    /// Adds a resource (replacing one of the same URI) and what
    /// `resources/read` answers for it. With any resource or template the
    /// server advertises `resources` (with `subscribe` and `listChanged`).
    pub fn resource(mut self, resource: Resource, contents: ResourceContents) -> Self {
        let resources = &mut self.config().resources;
        resources.retain(|(r, _)| r.uri != resource.uri);
        resources.push((resource, contents));
        self
    }

    /// Adds a resource template; see [`TestServer::resource`].
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.config().resource_templates.push(template);
        self
    }

    /// Whether `resources.subscribe` is advertised, and listen streams
    /// accept `resourceSubscriptions` (default `true`).
    pub fn resource_subscribe(mut self, yes: bool) -> Self {
        self.config().resource_subscribe = yes;
        self
    }

    /// Adds a prompt (replacing one of the same name) and what
    /// `prompts/get` answers for it; the server then advertises `prompts`.
    /// A `prompts/get` without an argument the prompt marks required is
    /// answered with `-32602`; the arguments given come back in the
    /// result's `_meta.arguments`, and each replaces `{name}` in the text
    /// of the messages.
    pub fn prompt(mut self, prompt: Prompt, result: GetPromptResult) -> Self {
        let prompts = &mut self.config().prompts;
        prompts.retain(|(p, _)| p.name != prompt.name);
        prompts.push((prompt, result));
        self
    }

    /// Makes `prompts/get` of the prompt `name` ask for `requests` first
    /// (an `input_required` result with `requestState`
    /// `"prompts/get NAME"`); a retry that answers every key and echoes
    /// the state gets the prompt, the answers in its
    /// `_meta.inputResponses`. A retry missing some keys is asked again
    /// for those; one whose state was changed gets `-32602`.
    pub fn prompt_input(mut self, name: impl Into<String>, requests: InputRequests) -> Self {
        self.config()
            .inputs_first
            .push((resources::PROMPTS_GET.to_owned(), name.into(), requests));
        self
    }

    /// Makes `resources/read` of `uri` ask for `requests` first, as
    /// [`TestServer::prompt_input`] does for a prompt (the answers come
    /// back in the read result's `_meta.inputResponses`).
    pub fn resource_input(mut self, uri: impl Into<String>, requests: InputRequests) -> Self {
        self.config().inputs_first.push((
            resources::RESOURCES_READ.to_owned(),
            uri.into(),
            requests,
        ));
        self
    }

    /// What `completion/complete` offers for `argument` of `reference`;
    /// the server then advertises `completions`. It answers with the
    /// values that start with what was typed (`total` and `hasMore` as
    /// given), and with none for a reference or argument it was not given.
    pub fn completion(
        mut self,
        reference: CompletionRef,
        argument: impl Into<String>,
        values: Completion,
    ) -> Self {
        self.config()
            .completions
            .push((reference, argument.into(), values));
        self
    }

    /// How many items one page of a listing (`tools/list`,
    /// `resources/list`, `resources/templates/list`, `prompts/list`) holds
    /// (default 50; at least 1). The cursor is the index of the next
    /// item, as a string.
    pub fn page_size(mut self, n: usize) -> Self {
        self.config().page_size = n.max(1);
        self
    }

    /// The protocol versions the server accepts (default `["2026-07-28"]`).
    ///
    /// A request whose `_meta` names another version is answered with
    /// `-32022` and `data: {"supported": [...], "requested": "<version>"}`.
    pub fn supported_versions<I, S>(mut self, versions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config().supported_versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// Whether listen acknowledgements keep `taskIds` (default `true`).
    ///
    /// With `false` the acknowledgement drops `taskIds` and nothing is pushed,
    /// as servers that do not push task updates behave.
    pub fn accept_listen_task_ids(mut self, accept: bool) -> Self {
        self.config().accept_listen_task_ids = accept;
        self
    }

    /// Whether `subscriptions/listen` exists (default `true`); without it the
    /// method is answered with `-32601`.
    pub fn listen_supported(mut self, yes: bool) -> Self {
        self.config().listen_supported = yes;
        self
    }

    /// Holds every `tasks/get` reply for `d` before sending it (default
    /// zero: at once), as a slow server does. The snapshot is taken when
    /// the read arrives. Reads of the same task that arrive meanwhile
    /// count as [`TaskCounts::overlapping_reads`].
    pub fn read_delay(mut self, d: Duration) -> Self {
        self.config().read_delay = d;
        self
    }

    /// Whether every request and notification is kept for
    /// [`TestServer::requests`] (default `true`). A server that serves
    /// many clients for long (hundreds of thousands of requests, each
    /// kept with its params) can keep only the counts instead: by method
    /// ([`TestServer::count`]) and by task ([`TestServer::counters`]);
    /// [`TestServer::requests`] is then empty.
    pub fn keep_requests(mut self, keep: bool) -> Self {
        self.config().keep_requests = keep;
        self
    }

    /// Makes the server misbehave in the ways `faults` lists (replacing any
    /// set given before). The faults apply to every clone of this server,
    /// since clones share their tasks and streams.
    pub fn faults(self, faults: Faults) -> Self {
        self.shared.lock().set_faults(faults);
        self
    }

    /// How many times a fault from [`TestServer::faults`] changed what the
    /// server did: a reply withheld or replaced, a push duplicated, held
    /// back, regressed or sent astray. A test of a fault can check it is
    /// not zero, so that it does not pass without the fault happening.
    pub fn faults_fired(&self) -> usize {
        self.shared.lock().faults_fired()
    }

    /// Serves a new in-memory connection and returns the client's end.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the server runs on a spawned task).
    pub fn connect(&self) -> MemoryTransport {
        let (client, server) = memory::pair();
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.serve(server).await {
                warn!("test server: the connection failed: {e}");
            }
        });
        client
    }

    /// Serves one connection until the peer closes it.
    ///
    /// Requests are handled concurrently; responses and notifications go out
    /// in the order they are produced.
    ///
    /// # Errors
    ///
    /// When the transport fails to open or to read.
    pub async fn serve<T: Transport>(&self, transport: T) -> io::Result<()> {
        self.run_connection(transport).await
    }

    /// Serves this process's stdin and stdout, one JSON message per line,
    /// until stdin closes. Useful to run the test server as a child process.
    ///
    /// # Errors
    ///
    /// When reading stdin fails.
    pub async fn serve_stdio(&self) -> io::Result<()> {
        self.serve(LineTransport::new(tokio::io::stdin(), tokio::io::stdout()))
            .await
    }

    /// Every request and notification received so far, in order (none
    /// with [`TestServer::keep_requests`] `false`).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests().to_vec()
    }

    /// How many requests or notifications with this method were received.
    pub fn count(&self, method: &str) -> usize {
        self.shared.lock().count(method)
    }

    /// The ids of the tasks created so far, in order (expired ones included).
    pub fn task_ids(&self) -> Vec<TaskId> {
        self.shared.lock().task_ids().to_vec()
    }

    /// What clients asked about `task` so far, if this server created it.
    pub fn task_counts(&self, task: &str) -> Option<TaskCounts> {
        self.shared.lock().tally().of(task)
    }

    /// What clients asked about every task this server created, and the
    /// totals: reads, overlapping reads, answers per input key, cancels.
    pub fn counters(&self) -> Counters {
        self.shared.lock().tally().counters()
    }

    /// Gracefully ends every open listen stream: each gets its final response
    /// `{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId": <id>}}`.
    pub fn end_subscriptions(&self) {
        self.shared.lock().end_subscriptions();
    }

    /// How many listen streams are open.
    pub fn open_subscriptions(&self) -> usize {
        self.shared.lock().open_subscriptions()
    }

    /// Sends `notifications/resources/updated` for `uri` on every listen
    /// stream subscribed to it; returns how many.
    pub fn update_resource(&self, uri: &str) -> usize {
        self.shared.lock().resource_updated(uri)
    }

    /// Sends `notifications/resources/list_changed` on every listen stream
    /// that asked for it; returns how many.
    pub fn resources_list_changed(&self) -> usize {
        self.shared
            .lock()
            .list_changed("notifications/resources/list_changed")
    }

    /// Sends `notifications/prompts/list_changed` on every listen stream
    /// that asked for it; returns how many.
    pub fn prompts_list_changed(&self) -> usize {
        self.shared
            .lock()
            .list_changed("notifications/prompts/list_changed")
    }

    /// Sends `notifications/tools/list_changed` on every listen stream
    /// that asked for it; returns how many.
    pub fn tools_list_changed(&self) -> usize {
        self.shared
            .lock()
            .list_changed("notifications/tools/list_changed")
    }

    /// How many `notifications/tasks` were sent so far, over all streams.
    pub fn pushes(&self) -> usize {
        self.shared.lock().pushes()
    }
}
