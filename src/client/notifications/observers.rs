//! The public side of server notifications: the builder's callbacks,
//! `logging/setLevel`. The dispatching is in `notifications/mod.rs`; the drop count
//! is in `stats.rs`.

use std::future::Future;

use crate::client::notifications::ListChanged;
use crate::client::{Client, ClientBuilder, client_builder};
use crate::error::Result;
use crate::input::callback;
use crate::protocol::method;
use crate::protocol::{LogLevel, LogMessage, ResourceUpdated, SetLevelParams};

impl<S: client_builder::State> ClientBuilder<S> {
    /// Called with every log message the server sends
    /// (`notifications/message`), besides the `tracing` event each becomes
    /// (target [`SERVER_LOG_TARGET`](crate::SERVER_LOG_TARGET); `debug`
    /// maps to `DEBUG`, `info` and `notice` to `INFO`, `warning` to
    /// `WARN`, the four above to `ERROR`, with `level`, `logger` and `data`
    /// as fields).
    ///
    /// An initialize-era server sends messages at the level it chose until
    /// [`Client::set_log_level`] asks for another; a 2026-07-28 server
    /// sends none to this client.
    ///
    /// The callback runs on its own task, one message at a time, never on
    /// the connection's reader: while it is busy up to 64 messages wait,
    /// and more are dropped and counted in
    /// [`ClientStats::dropped_notifications`](crate::ClientStats::dropped_notifications).
    /// A callback that panics gets no more messages.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
    /// use mcp_tasks::Client;
    /// use mcp_tasks::protocol::{LogLevel, LogMessage};
    /// # use mcp_tasks::testing::TestServer;
    /// # let transport = TestServer::new().connect();
    ///
    /// let client = Client::builder()
    ///     .on_log(|msg: LogMessage| async move {
    ///         if msg.level >= LogLevel::Warning {
    ///             let logger = msg.logger.as_deref().unwrap_or("server");
    ///             eprintln!("[{}] {logger}: {}", msg.level, msg.data);
    ///         }
    ///     })
    ///     .connect(transport)
    ///     .await?;
    /// # let _ = client;
    /// # Ok(()) }
    /// ```
    pub fn on_log<F, Fut>(self, handler: F) -> ClientBuilder<client_builder::SetOnLog<S>>
    where
        S::OnLog: client_builder::IsUnset,
        F: Fn(LogMessage) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_log_internal(callback(handler))
    }

    /// Called when the server says one of its lists changed
    /// (`notifications/{tools,prompts,resources}/list_changed`). By the
    /// time it runs for [`ListChanged::Tools`], the client has already
    /// forgotten the last listing; without this callback that still
    /// happens.
    ///
    /// On 2026-07-28, where list changes come only on a
    /// `subscriptions/listen` stream, setting it makes the client open one
    /// right after connecting (in the background, not delaying
    /// [`connect`](ClientBuilder::connect)) for the lists whose
    /// capability says `listChanged` in its `server/discover` answer. The
    /// same stream carries the updates of [`Client::subscribe_resource`].
    /// A client that pinned the version, and so never probed the server,
    /// opens none at connect: its streams for resource subscriptions ask
    /// for all three lists, and the acknowledgement says which the server
    /// honours. A server that ends the stream is not asked again until a
    /// subscription changes. On an initialize-era session the server sends
    /// list changes unasked.
    ///
    /// It runs as the [`on_log`](ClientBuilder::on_log) callback does: on
    /// its own task, behind a queue of 64.
    pub fn on_list_changed<F, Fut>(
        self,
        handler: F,
    ) -> ClientBuilder<client_builder::SetOnListChanged<S>>
    where
        S::OnListChanged: client_builder::IsUnset,
        F: Fn(ListChanged) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_list_changed_internal(callback(handler))
    }

    /// Called when a resource subscribed to with
    /// [`Client::subscribe_resource`] changes
    /// (`notifications/resources/updated`); read it again to see how.
    ///
    /// It runs as the [`on_log`](ClientBuilder::on_log) callback does: on
    /// its own task, behind a queue of 64.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
    /// use mcp_tasks::Client;
    /// use mcp_tasks::protocol::{Resource, ResourceContents, ResourceUpdated};
    /// use mcp_tasks::testing::TestServer;
    ///
    /// let server = TestServer::new().resource(
    ///     Resource::new("file:///log", "log"),
    ///     ResourceContents::text("file:///log", "line 1"),
    /// );
    /// let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    /// let client = Client::builder()
    ///     .on_resource_updated(move |update: ResourceUpdated| {
    ///         let tx = tx.clone();
    ///         async move { let _ = tx.send(update.uri).await; }
    ///     })
    ///     .connect(server.connect())
    ///     .await?;
    /// client.subscribe_resource("file:///log").await?;
    /// server.update_resource("file:///log");
    /// assert_eq!(rx.recv().await.as_deref(), Some("file:///log"));
    /// # Ok(()) }
    /// ```
    pub fn on_resource_updated<F, Fut>(
        self,
        handler: F,
    ) -> ClientBuilder<client_builder::SetOnResourceUpdated<S>>
    where
        S::OnResourceUpdated: client_builder::IsUnset,
        F: Fn(ResourceUpdated) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_resource_updated_internal(callback(handler))
    }
}

impl Client {
    /// Asks the server to send log messages at `level` and above
    /// (`logging/setLevel`); they reach `tracing` and the
    /// [`on_log`](ClientBuilder::on_log) callback.
    ///
    /// The request is sent whatever the server declared: a server without
    /// the `logging` capability usually answers `-32601`, and so does a
    /// 2026-07-28 server, where the method is gone (logging is deprecated
    /// there).
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
    /// use mcp_tasks::protocol::LogLevel;
    ///
    /// client.set_log_level(LogLevel::Warning).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// Any request error; [`Error::rpc_error`](crate::Error::rpc_error)
    /// holds the server's refusal.
    pub async fn set_log_level(&self, level: LogLevel) -> Result<()> {
        self.wire()
            .send(method::LOGGING_SET_LEVEL, &SetLevelParams::new(level), None)
            .await
            .map(drop)
    }
}
