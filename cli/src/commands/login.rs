//! `mcp-tasks login SERVER` and `mcp-tasks logout SERVER`: a sign-in
//! ahead of time, its tokens kept for later commands, and their removal.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use mcp_tasks::Client;
use mcp_tasks::transport::Http;
use mcp_tasks::transport::auth::{FileTokenStore, LoopbackRedirect, OAuth, TokenStore};

use crate::config::{ConfiguredServers, ResolvedKind, redact_url};
use crate::sign_in::{
    CLIENT_NAME, SIGN_IN_WAIT, invitation, make_tokens_dir, store_key, token_file,
};
use crate::{Failure, exit};

/// A server to sign in to or out of: a configured name (`NAME` or
/// `@NAME`) or a URL.
struct Target {
    /// How messages name it.
    label: String,
    url: String,
    headers: Vec<(String, String)>,
}

fn target(server: &str, config: Option<&Path>) -> anyhow::Result<Target> {
    if server.contains("://") {
        return Ok(Target {
            label: server.to_owned(),
            url: server.to_owned(),
            headers: Vec::new(),
        });
    }
    let name = server.strip_prefix('@').unwrap_or(server);
    let configured = ConfiguredServers::load(config)?;
    let configured = configured.find(name)?;
    match configured.resolve()?.kind {
        ResolvedKind::Http { url, headers } => Ok(Target {
            label: name.to_owned(),
            url,
            headers,
        }),
        ResolvedKind::Stdio { .. } => bail!(Failure::usage(format!(
            "{name} ({}) runs as a command: only a server at a URL signs in",
            configured.source.display()
        ))),
    }
}

/// `mcp-tasks login SERVER`: forgets what is stored for the server, signs
/// in afresh through the browser and keeps the new tokens.
pub async fn login(server: &str, config: Option<&Path>, open: bool) -> anyhow::Result<u8> {
    let target = target(server, config)?;
    if target
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    {
        bail!(Failure::usage(format!(
            "{} sends an Authorization header of its own: there is nothing to sign in to",
            target.label
        )));
    }
    make_tokens_dir()?;
    let file = token_file(&target.url)?;
    let store = FileTokenStore::new(&file);
    let key = store_key(&target.url);
    store
        .remove(&key)
        .with_context(|| format!("cannot update {}", file.display()))?;
    let label = target.label.clone();
    let redirect = LoopbackRedirect::bind(0)
        .await
        .context("cannot listen on 127.0.0.1 for the browser")?
        .timeout(SIGN_IN_WAIT)
        .on_url(move |url| {
            eprintln!("{}", invitation(&label, url.as_str()));
            if open {
                open_browser(url.as_str());
            }
        });
    eprintln!(
        "Signing in to {} ({})",
        target.label,
        redact_url(&target.url)
    );
    let oauth = OAuth::builder()
        .authorizer(redirect)
        .client_name(CLIENT_NAME)
        .store(FileTokenStore::new(&file))
        .build();
    let mut http = Http::new(&target.url).auth(oauth);
    for (name, value) in &target.headers {
        http = http.header(name, value);
    }
    let connected = Client::builder()
        .client_info("mcp-tasks-cli", env!("CARGO_PKG_VERSION"))
        .probe_timeout(SIGN_IN_WAIT + Duration::from_secs(30))
        .request_timeout(SIGN_IN_WAIT + Duration::from_secs(60))
        .connect(http)
        .await;
    let client = match connected {
        Ok(client) => client,
        Err(e) if matches!(e.http_status(), Some(401 | 403)) => bail!(Failure::auth(format!(
            "signing in to {} failed: {}",
            target.label,
            crate::one_line(&e)
        ))),
        Err(e) => bail!(Failure::usage(format!(
            "cannot reach {}: {}",
            target.label,
            crate::one_line(&e)
        ))),
    };
    if let Err(e) = client.close().await {
        tracing::debug!("the connection did not close gracefully: {e}");
    }
    if store.load(&key).ok().flatten().is_some() {
        eprintln!(
            "Signed in to {}. The tokens are kept in {} (readable by you alone); \
             later commands use and refresh them.",
            target.label,
            file.display()
        );
    } else {
        eprintln!(
            "{} answered without asking to sign in: nothing is stored.",
            target.label
        );
    }
    Ok(exit::OK)
}

/// `mcp-tasks logout SERVER`: forgets the server's tokens.
pub fn logout(server: &str, config: Option<&Path>) -> anyhow::Result<u8> {
    let target = target(server, config)?;
    let file = token_file(&target.url)?;
    match std::fs::remove_file(&file) {
        Ok(()) => eprintln!("Signed out of {}: its tokens are forgotten.", target.label),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("No tokens were kept for {}.", target.label);
        }
        Err(e) => bail!("cannot remove {}: {e}", file.display()),
    }
    Ok(exit::OK)
}

/// Opens `url` in the person's browser, when asked with `--open`; a
/// failure is a note (the URL is on screen anyway).
fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let started = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = started {
        eprintln!("(could not start {program}: {e}; open the URL yourself)");
    }
}
