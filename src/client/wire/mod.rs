//! The seam between the era-blind task layer and the protocol a server
//! speaks. Every task-level operation goes through [`Wire`]: start a call,
//! read a task, send answers, cancel, watch. The 2026-07-28 wire is one
//! variant and the initialize era's session another; the modern path pays
//! one branch for it. What differs between eras beyond the verbs is asked
//! in capability words (does a task keep its call's progress token, does
//! the server ask for input by request, ...), never "which era is this":
//! a new era is a module of its own here (`modern.rs`, `legacy/`) and one
//! arm in each method.

mod envelope;
mod heard;
mod legacy;
mod modern;
pub(crate) mod probe;
mod pushes;
mod start;

use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub(crate) use heard::Heard;
pub(crate) use legacy::{KnownTools, Legacy, Registry, wants_opt_in};
pub(crate) use modern::{Lists, Modern};
pub(crate) use pushes::{Push, Watch};
pub(crate) use start::{BoxFuture, Call, NewTask, Started, TaskHold, ToolListing};

use super::connection::Connection;
use crate::error::{Error, Result};
use crate::input::InputHandlers;
use crate::protocol::versions::{self, Era};
use crate::protocol::{DetailedTask, InputResponses, TaskId};
pub(crate) use envelope::Envelope;

/// The connection, spoken in the era the server speaks.
pub(crate) enum Wire {
    /// MCP 2026-07-28 with the Tasks extension.
    Modern(Modern),
    /// An initialize-era session (2025-11-25 and earlier).
    Legacy(Legacy),
}

impl Wire {
    pub(crate) fn connection(&self) -> &Connection {
        match self {
            Wire::Modern(m) => m.connection(),
            Wire::Legacy(l) => l.connection(),
        }
    }

    pub(crate) fn envelope(&self) -> &Envelope {
        match self {
            Wire::Modern(m) => m.envelope(),
            Wire::Legacy(l) => l.envelope(),
        }
    }

    /// Sends one request of a method that is not task-level (discovery,
    /// listing): the era's envelope, renegotiation included.
    pub(crate) async fn send<P: Serialize>(
        &self,
        method: &'static str,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        match self {
            Wire::Modern(m) => m.send(method, None, params, timeout).await,
            Wire::Legacy(l) => l.send(method, None, params, timeout).await,
        }
    }

    /// Sends a request that may ask for input first (`prompts/get`,
    /// `resources/read`), naming what it acts on: on 2026-07-28 its input
    /// rounds are answered with `handlers`, at most `max_rounds` of them;
    /// an initialize-era server asks with requests of its own instead,
    /// which the session answers as they come.
    pub(crate) async fn send_answering<P: Serialize>(
        &self,
        method: &'static str,
        name: &str,
        params: &P,
        handlers: &InputHandlers,
        max_rounds: usize,
    ) -> Result<Box<RawValue>> {
        match self {
            Wire::Modern(m) => {
                m.send_answering(method, name, params, handlers, max_rounds)
                    .await
            }
            Wire::Legacy(l) => l.send(method, Some(name), params, None).await,
        }
    }

    /// Starts a tool call: a complete result, or a task's seed.
    pub(crate) async fn start(&self, call: Call<'_>) -> Result<Started> {
        match self {
            Wire::Modern(m) => m.start(call).await,
            Wire::Legacy(l) => l.start(call).await,
        }
    }

    /// Reads a task once.
    pub(crate) async fn read(&self, id: &TaskId, timeout: Duration) -> Result<DetailedTask> {
        match self {
            Wire::Modern(m) => m.read(id, Some(timeout)).await,
            Wire::Legacy(l) => l.read(id, timeout).await,
        }
    }

    /// Sends answers to a task's input requests.
    pub(crate) async fn answer(
        &self,
        id: &TaskId,
        responses: &InputResponses,
        timeout: Duration,
    ) -> Result<()> {
        match self {
            Wire::Modern(m) => m.answer(id, responses, Some(timeout)).await,
            Wire::Legacy(l) => l.answer(id, responses).await,
        }
    }

    /// Asks the server to cancel a task.
    pub(crate) async fn cancel(&self, id: &TaskId, timeout: Duration) -> Result<()> {
        match self {
            Wire::Modern(m) => m.cancel(id, Some(timeout)).await,
            Wire::Legacy(l) => l.cancel(id, timeout).await,
        }
    }

    /// Watches a task for pushes (on 2025-11-25, the status notifications
    /// that make a handle read sooner); `None` where there are none (poll).
    pub(crate) fn watch(&self, id: TaskId) -> Option<Watch> {
        match self {
            Wire::Modern(m) => Some(m.watch(id)),
            Wire::Legacy(l) => Some(l.registry().watch(&id)),
        }
    }
}

/// What a connection can do, asked in capability words: callers never ask
/// which era it is, so a new era is one more arm in each method here.
impl Wire {
    /// The era of the session, for the `era` field of task traces.
    pub(crate) fn era(&self) -> Era {
        match self {
            Wire::Modern(_) => Era::Modern,
            Wire::Legacy(_) => Era::Initialize,
        }
    }

    /// Whether this session can read a task made under protocol
    /// `version`; `None` for a version this client does not know.
    pub(crate) fn reads_tasks_of(&self, version: &str) -> Option<bool> {
        versions::find(version).map(|r| r.era == self.era())
    }

    /// Holds task `id` for a handle, where the session needs to (see
    /// [`TaskHold`]); `None` where nothing is held.
    pub(crate) fn hold(&self, id: &TaskId) -> Option<TaskHold> {
        match self {
            Wire::Modern(_) => None,
            Wire::Legacy(l) => Some(TaskHold::new(l.follow(id))),
        }
    }

    /// The `_meta` a request sent by hand carries, where every request
    /// carries one (2026-07-28: version, capabilities, info); `None` where
    /// the handshake said it all.
    pub(crate) fn request_meta(&self, method: &str) -> Option<Map<String, Value>> {
        match self {
            Wire::Modern(m) => Some(m.envelope().meta_object(method)),
            Wire::Legacy(_) => None,
        }
    }

    /// Whether resource subscriptions are kept on a `subscriptions/listen`
    /// stream (2026-07-28) rather than by `resources/subscribe` requests.
    pub(crate) fn subscribes_by_listening(&self) -> bool {
        match self {
            Wire::Modern(_) => true,
            Wire::Legacy(_) => false,
        }
    }

    /// Answers the requests the server sends (taken from the connection
    /// before the handshake, so that those sent during it wait): with
    /// `handlers` where the server asks for input by request
    /// (`elicitation/create`, `sampling/createMessage`, `roots/list`,
    /// and on 2025-11-25 the tasks the client hosts), refused with
    /// `-32601` on 2026-07-28, which asks in results instead.
    pub(crate) fn serve_requests(
        &self,
        requests: tokio::sync::mpsc::Receiver<super::connection::ServerRequest>,
        handlers: InputHandlers,
    ) {
        match self {
            Wire::Modern(m) => m.refuse_requests(requests),
            Wire::Legacy(l) => l.serve_requests(requests, handlers),
        }
    }

    /// The tasks this session follows by their status notifications
    /// (2025-11-25's `notifications/tasks/status`), for the dispatcher.
    pub(crate) fn registry(&self) -> Option<&std::sync::Arc<Registry>> {
        match self {
            Wire::Modern(_) => None,
            Wire::Legacy(l) => Some(l.registry()),
        }
    }

    /// How many tasks the client hosts for the server now (2025-11-25).
    pub(crate) fn hosted_tasks(&self) -> usize {
        match self {
            Wire::Modern(_) => 0,
            Wire::Legacy(l) => l.hosted_tasks(),
        }
    }

    /// Readies resource subscriptions: the URIs subscribed to are kept in
    /// `heard`, which the dispatcher reads; where subscriptions live on a
    /// listen stream (2026-07-28), its events go to `forward` and each
    /// stream also asks for the list changes of `lists`.
    pub(crate) fn hear(
        &mut self,
        heard: Heard,
        forward: tokio::sync::mpsc::Sender<super::connection::Notification>,
        lists: Lists,
    ) {
        match self {
            Wire::Modern(m) => m.hear(forward, lists, heard),
            Wire::Legacy(l) => l.hear(heard),
        }
    }

    /// Subscribes to updates of `uri` (`subscribe`), or ends the
    /// subscription: on the client's listen stream on 2026-07-28, by
    /// request on the initialize era.
    pub(crate) async fn subscribe_resource(&self, uri: &str, subscribe: bool) -> Result<()> {
        match self {
            Wire::Modern(m) => m.subscribe_resource(uri, subscribe).await,
            Wire::Legacy(l) => l.subscribe_resource(uri, subscribe).await,
        }
    }

    /// Listens for the list changes asked for where they come only on a
    /// listen stream (2026-07-28); elsewhere they come by themselves and
    /// nothing is sent.
    pub(crate) async fn listen_for_list_changes(&self) -> Result<()> {
        match self {
            Wire::Modern(m) => m.listen_lists().await,
            Wire::Legacy(_) => Ok(()),
        }
    }

    /// One page of the initialize era's `tasks/list`.
    pub(crate) async fn list_tasks(
        &self,
        cursor: Option<&str>,
    ) -> Result<crate::protocol::ListTasksResult> {
        match self {
            Wire::Legacy(l) => l.list_tasks(cursor).await,
            Wire::Modern(_) => Err(crate::error::Error::builder(
                "tasks/list is an initialize-era (2025-11-25) method; \
                 a 2026-07-28 server has no task listing",
            )
            .with_method(crate::protocol::method::TASKS_LIST)),
        }
    }
}

/// Checks that a `tasks/get` answer names the task asked for (both eras).
fn same_task(asked: &TaskId, answered: &TaskId) -> Result<()> {
    if answered == asked {
        return Ok(());
    }
    Err(Error::protocol("tasks/get answered for another task")
        .with_method(crate::protocol::method::TASKS_GET)
        .with_task(asked))
}
