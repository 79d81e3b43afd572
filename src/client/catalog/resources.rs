//! The server's resources: listing them and their templates, reading one,
//! and subscribing to its updates, on both eras.

use crate::client::catalog::capabilities::Needs;
use crate::client::catalog::pages::Pages;
use crate::client::{Client, decode};
use crate::error::Result;
use crate::protocol::method;
use crate::protocol::{ReadResourceResult, Resource, ResourceParams, ResourceTemplate};

impl Client {
    /// Lists every resource (`resources/list`), following `nextCursor`
    /// across pages within the same bounds as [`Client::list_tools`]
    /// (`max_listed_memory`, `max_listed_bytes`, `list_timeout`, a cursor
    /// sent twice is an error); [`Client::resource_pages`] reads one page
    /// at a time.
    ///
    /// A resource counts 224 bytes and its strings against
    /// [`max_listed_memory`](crate::ClientBuilder::max_listed_memory)
    /// (64 MiB by default): `{"uri":"file:///a.txt","name":"a.txt"}`
    /// counts 288 bytes, so the default holds about 230,000 such.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
    /// use mcp_tasks::Client;
    /// use mcp_tasks::protocol::{Resource, ResourceBody, ResourceContents};
    /// use mcp_tasks::testing::TestServer;
    ///
    /// let server = TestServer::new().resource(
    ///     Resource::new("file:///notes.txt", "notes"),
    ///     ResourceContents::text("file:///notes.txt", "buy milk"),
    /// );
    /// let client = Client::connect(server.connect()).await?;
    /// let listed = client.list_resources().await?;
    /// assert_eq!(listed[0].name, "notes");
    /// let read = client.read_resource(&listed[0].uri).await?;
    /// assert_eq!(read.contents[0].body().ok(), Some(ResourceBody::Text("buy milk")));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::is_missing_capability`](crate::Error::is_missing_capability)
    /// when the server did not advertise `resources` (nothing is sent);
    /// otherwise as [`Client::list_tools`].
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        self.list_all::<Resource>().await
    }

    /// The resources one `resources/list` page at a time; see [`Pages`].
    pub fn resource_pages(&self) -> Pages<Resource> {
        Pages::new(self.clone())
    }

    /// Lists every resource template (`resources/templates/list`), as
    /// [`Client::list_resources`] lists resources (a template counts 208
    /// bytes and its strings against `max_listed_memory`).
    ///
    /// # Errors
    ///
    /// As [`Client::list_resources`].
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.list_all::<ResourceTemplate>().await
    }

    /// The resource templates one page at a time; see [`Pages`].
    pub fn resource_template_pages(&self) -> Pages<ResourceTemplate> {
        Pages::new(self.clone())
    }

    /// Reads one resource (`resources/read`).
    ///
    /// The contents are read tolerantly (see
    /// [`ResourceContents::body`](crate::protocol::ResourceContents::body)
    /// for an entry with both `text` and `blob`, or a `blob` that is not
    /// base64). On 2026-07-28 the server may ask for input first: it is
    /// answered by the installed handlers and the read sent again, as in
    /// [`Client::get_prompt`].
    ///
    /// # Errors
    ///
    /// [`Error::is_missing_capability`](crate::Error::is_missing_capability)
    /// when the server did not advertise `resources`;
    /// [`Error::is_input_required`](crate::Error::is_input_required) when
    /// a 2026-07-28 server asks for input that no installed handler
    /// answers; [`Error::is_protocol`](crate::Error::is_protocol) for a
    /// malformed result, or a server still asking for input after
    /// `max_input_rounds` rounds; any request error (a resource the server
    /// does not know is usually `-32602`, `-32002` from older servers).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        self.require(Needs::Resources, method::RESOURCES_READ)
            .await?;
        let params = ResourceParams {
            uri: uri.to_owned(),
        };
        let raw = self
            .send_answering(method::RESOURCES_READ, uri, &params)
            .await?;
        decode(&raw, method::RESOURCES_READ)
    }

    /// Subscribes to updates of one resource: each change comes as a
    /// [`ResourceUpdated`](crate::protocol::ResourceUpdated) to the
    /// builder's [`on_resource_updated`](crate::ClientBuilder::on_resource_updated).
    ///
    /// On an initialize-era session this is `resources/subscribe`. On
    /// 2026-07-28, where that method is gone, the client keeps one
    /// `subscriptions/listen` stream for every resource subscribed to
    /// (and for the list changes, when
    /// [`on_list_changed`](crate::ClientBuilder::on_list_changed) is set); each
    /// subscription opens a new stream with the whole set and closes the
    /// old one once the new one is acknowledged, so an update that comes
    /// right then may be delivered twice. Subscribing to a URI already
    /// subscribed to sends nothing while its stream is open; when the
    /// server has ended the stream, it is opened again first (the client
    /// also reopens an ended stream by itself, after 1 s, doubling to 30 s,
    /// and gives up after 5 attempts in a row that heard nothing).
    ///
    /// Only updates of subscribed resources reach the callback: the URI
    /// subscribed to, or one under it (followed by `/`, `?` or `#`), as the
    /// specification lets an update name a sub-resource.
    ///
    /// # Errors
    ///
    /// [`Error::is_missing_capability`](crate::Error::is_missing_capability)
    /// when the server did not advertise `resources.subscribe` (nothing is
    /// sent); on 2026-07-28 [`Error::is_protocol`](crate::Error::is_protocol)
    /// when the stream's acknowledgement leaves the URI out, or does not
    /// come within the request timeout, and the server's error when it
    /// refuses the stream; any request error.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<()> {
        self.resource_subscription(uri, true).await
    }

    /// Ends a subscription made by [`Client::subscribe_resource`]
    /// (`resources/unsubscribe` on an initialize-era session; on
    /// 2026-07-28 a new listen stream without the URI, or none when it was
    /// the last). A URI not subscribed to sends nothing on 2026-07-28.
    ///
    /// # Errors
    ///
    /// As [`Client::subscribe_resource`].
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<()> {
        self.resource_subscription(uri, false).await
    }

    /// Subscribes to `uri` (`subscribe`) or ends its subscription, once
    /// the server is known to take subscriptions (see
    /// [`Wire::subscribe_resource`](crate::client::Wire::subscribe_resource)).
    async fn resource_subscription(&self, uri: &str, subscribe: bool) -> Result<()> {
        let method = if subscribe {
            method::RESOURCES_SUBSCRIBE
        } else {
            method::RESOURCES_UNSUBSCRIBE
        };
        self.require(Needs::ResourceSubscriptions, method).await?;
        self.wire().subscribe_resource(uri, subscribe).await
    }
}
