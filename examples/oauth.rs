//! Connect to an MCP server that needs OAuth, and list its tools.
//!
//! ```text
//! cargo run --example oauth --features oauth -- URL [PORT]
//! ```
//!
//! The first run prints an authorization URL: open it in a browser and sign
//! in. The authorization server redirects to `http://127.0.0.1:PORT/callback`
//! (default port 8765; the example listens there, on loopback only), and the
//! client goes on: it registers itself with the server's authorization
//! server when it has to (dynamic client registration), exchanges the code
//! with PKCE, and lists the tools. The tokens are kept, mode 0600, in
//! `mcp-tasks-oauth-tokens.json` under `$XDG_CONFIG_HOME` (or `~/.config`),
//! so the next run reuses them and refreshes them when they expire.
//!
//! With a client registered beforehand, set `MCP_CLIENT_ID` (and
//! `MCP_CLIENT_SECRET` if it has a secret); its redirect URI must be the one
//! above.

use std::path::PathBuf;
use std::time::Duration;

use mcp_tasks::transport::Http;
use mcp_tasks::transport::auth::{FileTokenStore, LoopbackRedirect, OAuth};
use mcp_tasks::{BoxError, Client};

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: cargo run --example oauth --features oauth -- URL [PORT]")?;
    let port: u16 = args.next().map(|p| p.parse()).transpose()?.unwrap_or(8765);

    let redirect = LoopbackRedirect::bind(port)
        .await?
        .on_url(|url| eprintln!("Open this URL to authorize the client:\n\n  {url}\n"));
    let store = FileTokenStore::new(store_path()?);
    eprintln!("tokens are kept in {}", store.path().display());
    let oauth = OAuth::builder()
        .authorizer(redirect)
        .client_name("mcp-tasks oauth example")
        .maybe_client_id(std::env::var("MCP_CLIENT_ID").ok())
        .maybe_client_secret(std::env::var("MCP_CLIENT_SECRET").ok())
        .store(store)
        .build();

    let client = Client::builder()
        .client_info("mcp-tasks-oauth-example", env!("CARGO_PKG_VERSION"))
        // Signing in takes a while: the first request waits for it.
        .request_timeout(Duration::from_secs(300))
        .probe_timeout(Duration::from_secs(300))
        .connect(Http::new(url).auth(oauth))
        .await?;
    for tool in client.list_tools().await? {
        println!(
            "{}: {}",
            tool.name,
            tool.description.as_deref().unwrap_or("")
        );
    }
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}

/// `$XDG_CONFIG_HOME/mcp-tasks-oauth-tokens.json`, else under `~/.config`.
fn store_path() -> Result<PathBuf, BoxError> {
    let dir = match std::env::var_os("XDG_CONFIG_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(
            std::env::var_os("HOME").ok_or("neither XDG_CONFIG_HOME nor HOME is set")?,
        )
        .join(".config"),
    };
    std::fs::create_dir_all(&dir)?;
    Ok(dir.join("mcp-tasks-oauth-tokens.json"))
}
