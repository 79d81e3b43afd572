//! One snapshot of the connection's diagnostic counters.

use std::sync::atomic::Ordering;

use crate::client::Client;

/// What a [`Client`]'s connection has counted so far, read at once by
/// [`Client::stats`]: for diagnostics and metrics.
///
/// The gauges (`pending_requests`, `hosted_tasks`) say how things stand
/// now; the other counts only grow over the connection's life.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
/// use mcp_tasks::Client;
/// use mcp_tasks::testing::TestServer;
///
/// let client = Client::connect(TestServer::new().connect()).await?;
/// client.list_tools().await?;
/// let stats = client.stats();
/// assert_eq!(stats.pending_requests, 0);
/// assert_eq!(stats.discarded_messages, 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStats {
    /// How many requests are waiting for a reply. It returns to zero once
    /// every request has been answered, timed out or been dropped.
    pub pending_requests: usize,
    /// How many tasks the client hosts for the server right now: running
    /// and finished ones not yet dropped.
    ///
    /// On a 2025-11-25 session, a server may send `elicitation/create` or
    /// `sampling/createMessage` as a task (`params.task`) when the client
    /// declared it: it does so at `initialize` for the elicitation and
    /// sampling handlers installed. The client answers with the task at
    /// once, runs the handler in the background and answers the server's
    /// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`.
    ///
    /// At most 64 are hosted at once (further ones are refused with
    /// `-32603`); a finished one is kept for its `ttl` (the server's,
    /// clamped to 1 s ..= 10 min; 60 s when it asks for none) after it
    /// ends. Always 0 on other sessions.
    pub hosted_tasks: usize,
    /// How many messages from the server were skipped: lines that are not
    /// UTF-8 or not JSON-RPC, and replies under an id no request is
    /// waiting for (late, or never sent).
    ///
    /// Skipping keeps the connection alive, but a skipped message may have
    /// been a reply: a request that then times out says how many messages
    /// were skipped while it waited.
    pub discarded_messages: u64,
    /// How many of the server's requests got no answer from the client:
    /// the answer could not be sent because the connection was gone, the
    /// client's outgoing queue stayed full for 10 s (a stuck transport),
    /// or, for the answers the client gives at once (`ping`, refusals),
    /// 8 MiB of them already waited for a server that did not read them.
    ///
    /// Every other request of the server's is answered exactly once: with
    /// a result, or a JSON-RPC error (`-32601` when nothing answers its
    /// method, `-32603` when too many wait). A request the server itself
    /// cancels gets no answer and is not counted here.
    pub dropped_answers: u64,
    /// How many of the server's requests were ignored because they
    /// repeated the id of a request of the server's answered lately (the
    /// last 1024) or still being answered: a server replaying its stream
    /// after a reconnection, say. Each id is answered once, and a handler
    /// is never asked the same question twice.
    pub repeated_requests: u64,
    /// How many of the server's notifications were dropped because the
    /// client fell behind: the connection's queue was full, a stream's
    /// queue was (a listen stream's, a task's pushes, a call's progress:
    /// 64 each), or a callback
    /// ([`on_log`](crate::ClientBuilder::on_log),
    /// [`on_list_changed`](crate::ClientBuilder::on_list_changed),
    /// [`on_elicitation_complete`](crate::input::InputHandlers::on_elicitation_complete))
    /// was busy with 64 waiting.
    pub dropped_notifications: u64,
    /// How many times closing the connection had to end the server by
    /// force (0 or 1: a connection closes once): a stdio child, or a
    /// process of its group, still running
    /// [`Stdio::shutdown_timeout`](crate::transport::Stdio::shutdown_timeout)
    /// after its stdin closed, and ended by SIGTERM or SIGKILL. The close
    /// still succeeded ([`Client::close`] says `Ok`), and it is logged at
    /// `warn`.
    ///
    /// Read it on a clone: `close` takes the client.
    pub servers_killed: u64,
}

impl Client {
    /// The connection's diagnostic counters, read now; see [`ClientStats`].
    pub fn stats(&self) -> ClientStats {
        let connection = self.wire().connection();
        ClientStats {
            pending_requests: connection.pending_len(),
            hosted_tasks: self.inner.wire.hosted_tasks(),
            discarded_messages: connection.discarded(),
            dropped_answers: connection.dropped_answers(),
            repeated_requests: connection.repeated_requests(),
            dropped_notifications: connection.notifications_dropped()
                + self.notify_dropped().load(Ordering::Relaxed),
            servers_killed: connection.servers_killed(),
        }
    }
}
