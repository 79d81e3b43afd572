//! What the tests of this binary share: the headless user, the client
//! connected through it, and the checks of an error's text.

use std::time::Duration;

use mcp_tasks::transport::Http;
use mcp_tasks::transport::auth::{Authorizer, BoxFuture, OAuth};
use mcp_tasks::{BoxError, Client};

use crate::server::{AuthServer, Knobs};

/// A user who approves at once: fetches the authorization URL and returns
/// its redirect without following it.
pub(crate) struct Headless;

impl Authorizer for Headless {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".to_owned()
    }

    fn authorize(&self, url: url::Url) -> BoxFuture<'_, Result<url::Url, BoxError>> {
        Box::pin(async move {
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()?;
            let response = http.get(url.clone()).send().await?;
            let location = response
                .headers()
                .get("location")
                .ok_or("no redirect")?
                .to_str()?;
            Ok(url.join(location)?)
        })
    }
}

pub(crate) fn oauth() -> OAuth {
    OAuth::builder().authorizer(Headless).build()
}

pub(crate) async fn connect(server: &AuthServer, oauth: OAuth) -> Client {
    Client::builder()
        .protocol_version("2026-07-28")
        .request_timeout(Duration::from_secs(10))
        .connect(Http::new(server.endpoint()).auth(oauth))
        .await
        .expect("connects")
}

/// A server with `knobs`, and a client connected to it through [`oauth`].
pub(crate) async fn start(knobs: Knobs) -> (AuthServer, Client) {
    let server = AuthServer::start(knobs).await;
    let client = connect(&server, oauth()).await;
    (server, client)
}

/// Checks that `err`'s text holds every one of `parts`.
pub(crate) fn assert_mentions(err: &mcp_tasks::Error, parts: &[&str]) {
    let text = err.to_string();
    assert!(parts.iter().all(|part| text.contains(part)), "{text}");
}
