//! OAuth 2.1 authorization for [`Http`](crate::transport::Http), as the MCP
//! authorization specification (2025-06-18, 2025-11-25, 2026-07-28) asks
//! (feature `oauth`).
//!
//! Give the transport an [`OAuth`] configuration with
//! [`Http::auth`](crate::transport::Http::auth) and it authorizes by
//! itself the first time the server answers `401 Unauthorized`:
//!
//! 1. **Discovery.** The `401`'s `WWW-Authenticate` names the protected
//!    resource metadata (RFC 9728), else it is looked for at the well-known
//!    URIs (path-inserted, then at the root). Its `resource` must be this
//!    server (same origin, the endpoint's path or a parent of it). Its
//!    first authorization server's metadata is read (RFC 8414, then OpenID
//!    Connect discovery, with the path variants), and its `issuer` must be
//!    exactly that server's identifier.
//! 2. **The client.** Credentials given to [`OAuthBuilder::client_id`] when
//!    set; else a client ID metadata document URL
//!    ([`OAuthBuilder::client_metadata_url`]) when the server supports
//!    them; else dynamic client registration (RFC 7591). The token
//!    endpoint is authenticated with `client_secret_basic`,
//!    `client_secret_post` or `none`, as the registration and the server's
//!    metadata say.
//! 3. **The flow.** The authorization code grant with PKCE S256 (a server
//!    that does not advertise S256 is refused), `state`, and the
//!    `resource` indicator (RFC 8707) on the authorization and token
//!    requests. The [`Authorizer`] sends the user to the authorization URL
//!    and returns the redirect, whose `state` and `iss` (RFC 9207) are
//!    checked before the code is exchanged.
//! 4. **Scopes.** Those of the challenge, else the resource's
//!    `scopes_supported`, else none; `offline_access` too when the
//!    authorization server lists it (for a refresh token). A `403` with
//!    `error="insufficient_scope"` asks again for the union of the scopes
//!    held and those challenged, at most
//!    [`OAuthBuilder::max_step_ups`] times per request, and never for
//!    scopes the token already has. At most 256 scopes are asked for at
//!    once (the first ones, in that order; a warning names the bound), and
//!    every list is merged in one pass, however long the server's is.
//! 5. **Tokens.** Every request (task polls, `subscriptions/listen`, the
//!    initialize era's `GET` stream, `DELETE`) carries the current access
//!    token. It is refreshed shortly before it expires and on a `401`; a
//!    refresh runs on its own, so requests in flight or waiting are not
//!    disturbed, and requests that meet the same `401` share one
//!    authorization. When the protected resource names another
//!    authorization server, the old credentials are dropped and the client
//!    registers anew there. The [`TokenStore`] keeps the credentials
//!    ([`MemoryTokenStore`] by default; [`FileTokenStore`] survives a
//!    restart).
//!
//! A request that needed authorization is sent again once it is done (it
//! was refused, so it did not run: even a `tools/call` is safe to send
//! again). When authorization fails, the request fails with the `401` (or
//! `403`) in [`Error::http_status`](crate::Error::http_status) and a
//! message naming the step that failed (`discovery`, `registration`,
//! `authorization`, `token`, `token store`).
//!
//! Tokens, codes, PKCE verifiers and client secrets never appear in logs,
//! error messages or `Debug` output.
//!
//! ```no_run
//! # async fn f() -> Result<(), mcp_tasks::BoxError> {
//! use mcp_tasks::Client;
//! use mcp_tasks::transport::Http;
//! use mcp_tasks::transport::auth::{FileTokenStore, LoopbackRedirect, OAuth};
//!
//! let redirect = LoopbackRedirect::bind(8765).await?;
//! let oauth = OAuth::builder()
//!     .authorizer(redirect)
//!     .client_name("my-agent")
//!     .store(FileTokenStore::new("/home/me/.config/my-agent/tokens.json"))
//!     .build();
//! let client = Client::builder()
//!     .protocol_version("2026-07-28")
//!     .connect(Http::new("https://mcp.example.com/mcp").auth(oauth))
//!     .await?;
//! let tools = client.list_tools().await?;
//! # Ok(()) }
//! ```
//!
//! The first request waits for the user to authorize: give it time
//! ([`ClientBuilder::request_timeout`](crate::ClientBuilder::request_timeout)),
//! and pin the protocol version, since `connect`'s version probe is
//! bounded to 10 s.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use url::Url;

use crate::error::BoxError;

mod challenge;
mod connection;
mod discovery;
mod error;
mod fetch;
mod flow;
mod loopback;
mod registration;
mod secret;
mod store;

pub(super) use connection::{Authorization, Verdict};
pub use loopback::LoopbackRedirect;
pub use secret::Secret;
pub use store::{Credentials, FileTokenStore, MemoryTokenStore, TokenStore};

/// A boxed future, as [`Authorizer::authorize`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Sends the user to the authorization server and brings back its redirect.
///
/// [`LoopbackRedirect`] is the usual one: it receives the redirect on
/// `127.0.0.1`. Implement it to open a browser yourself, to use a custom
/// URI scheme, or (in tests) to answer a headless authorization server.
pub trait Authorizer: Send + Sync {
    /// The redirect URI sent with each authorization request and
    /// registered with the authorization server.
    fn redirect_uri(&self) -> String;

    /// Has the user visit `url` (the authorization request) and returns the
    /// URL the authorization server redirected to, query included: the
    /// transport reads the code, `state` and `iss` from it.
    ///
    /// # Errors
    ///
    /// When no redirect came (the user gave up, a timeout): the request
    /// that needed authorization fails with this error.
    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, BoxError>>;
}

/// How [`Http`](crate::transport::Http) obtains and keeps OAuth tokens.
/// Built with [`OAuth::builder`]; see the [module](self) for the flow.
///
/// `Debug` shows no secret.
#[derive(bon::Builder, Clone)]
#[builder(
    builder_type(
        name = OAuthBuilder,
        vis = "pub",
        doc {
            /// Configures [`OAuth`]. Start with [`OAuth::builder`], set the
            /// [`authorizer`](OAuthBuilder::authorizer), finish with
            /// [`build`](OAuthBuilder::build).
        }
    ),
    state_mod(name = oauth_builder, vis = "pub", doc {
        /// Type states of [`OAuthBuilder`]; you never need to name them.
    }),
    on(String, into)
)]
pub struct OAuth {
    /// How the user is sent to the authorization server (required).
    #[builder(with = |authorizer: impl Authorizer + 'static| Arc::new(authorizer) as Arc<dyn Authorizer>)]
    authorizer: Arc<dyn Authorizer>,
    /// A client id registered beforehand with the authorization server
    /// (preferred over every other way to have one).
    client_id: Option<String>,
    /// The secret of that client, if it has one (sent as
    /// `client_secret_basic` or `client_secret_post`, whichever the server
    /// offers, Basic first).
    #[builder(with = |secret: impl Into<String>| Secret::new(secret))]
    client_secret: Option<Secret>,
    /// The issuer the configured client id belongs to: with it, the id is
    /// used at that authorization server only (default: at any).
    client_issuer: Option<String>,
    /// The HTTPS URL of this client's metadata document (a client ID
    /// metadata document), used as its `client_id` by servers that
    /// advertise `client_id_metadata_document_supported`. The document
    /// must list the authorizer's redirect URI.
    client_metadata_url: Option<String>,
    /// The `client_name` sent with dynamic registration (default: this
    /// crate's name).
    #[builder(default = env!("CARGO_PKG_NAME").to_owned())]
    client_name: String,
    /// Where credentials are kept between connections (default: a
    /// [`MemoryTokenStore`] of this configuration).
    #[builder(
        with = |store: impl TokenStore + 'static| Arc::new(store) as Arc<dyn TokenStore>,
        default = Arc::new(MemoryTokenStore::new()) as Arc<dyn TokenStore>
    )]
    store: Arc<dyn TokenStore>,
    /// Whether to ask for `offline_access` (a refresh token) when the
    /// authorization server lists it (default: yes).
    #[builder(default = true)]
    offline_access: bool,
    /// Most step-up authorizations (`403 insufficient_scope`) for one
    /// request (default 2).
    #[builder(default = 2)]
    max_step_ups: u32,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("redirect_uri", &self.authorizer.redirect_uri())
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("client_issuer", &self.client_issuer)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("offline_access", &self.offline_access)
            .field("max_step_ups", &self.max_step_ups)
            .finish_non_exhaustive()
    }
}
