//! Signing in to servers that ask for it (OAuth, with the redirect received
//! on a loopback port), and the stored tokens every later command against
//! the server reuses; `mcp-tasks login` and `logout` (in `commands/`)
//! sign in and out ahead of time.
//!
//! Tokens are kept per server in `$XDG_CONFIG_HOME/mcp-tasks/tokens/`
//! (else `~/.config/mcp-tasks/tokens/`), a folder of mode `0700` holding
//! one file of mode `0600` per server URL.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use mcp_tasks::BoxError;
use mcp_tasks::transport::auth::{
    Authorizer, BoxFuture, Credentials, FileTokenStore, LoopbackRedirect, OAuth, TokenStore,
};

use crate::report::Report;

/// How long a sign-in waits for the browser to come back.
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// The name `client_name` registers this program under.
pub const CLIENT_NAME: &str = "mcp-tasks";

/// The key the library's token store files a server's credentials under:
/// its URL, normalized.
pub fn store_key(url: &str) -> String {
    url::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.to_string())
}

/// The folder of the token files (not created).
fn tokens_dir() -> anyhow::Result<PathBuf> {
    crate::config::own_dir()
        .map(|dir| dir.join("tokens"))
        .context("neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep tokens")
}

/// The token file of the server at `url`: its host and port, and a digest
/// of the whole URL (so two endpoints of one host keep apart).
pub fn token_file(url: &str) -> anyhow::Result<PathBuf> {
    let key = store_key(url);
    let host: String = url::Url::parse(&key)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_owned();
            Some(match u.port() {
                Some(port) => format!("{host}_{port}"),
                None => host,
            })
        })
        .unwrap_or_else(|| "server".to_owned())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(tokens_dir()?.join(format!("{host}-{:016x}.json", fnv1a(key.as_bytes()))))
}

/// FNV-1a, 64 bits: a digest that stays the same from one build to the next.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Creates the token folder, readable by its owner alone.
pub fn make_tokens_dir() -> anyhow::Result<PathBuf> {
    let dir = tokens_dir()?;
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the token folder {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private", dir.display()))?;
    }
    Ok(dir)
}

/// The sign-in of a command against the server at `url`, `label` naming it
/// for the person.
pub struct SignIn {
    /// The OAuth configuration for the transport.
    pub oauth: OAuth,
    /// Whether the person may be asked to sign in during the command
    /// (nothing is stored yet and `--no-login` was not given): the first
    /// request must then wait for the browser.
    pub may_ask: bool,
}

/// The sign-in for a command against `url`: the stored tokens, refreshed
/// when they expire, and a sign-in through the browser when none works
/// (the URL shown through `report`), or a refusal with `no_login`. `None`
/// with `no_login` when nothing is stored: a server that asks answers
/// `401` as it is.
///
/// # Errors
///
/// When the token folder cannot be created or the loopback port bound.
pub async fn for_command(
    url: &str,
    label: &str,
    no_login: bool,
    report: &Report,
) -> anyhow::Result<Option<SignIn>> {
    let file = match token_file(url) {
        Ok(file) => file,
        Err(e) => {
            // No home to keep tokens in: the server's `401`, if any, shows.
            tracing::debug!("no sign-in: {e:#}");
            return Ok(None);
        }
    };
    let store = PrivateStore(FileTokenStore::new(&file));
    let stored = store.load(&store_key(url)).ok().flatten().is_some();
    if no_login {
        if !stored {
            return Ok(None);
        }
        let oauth = OAuth::builder()
            .authorizer(Refuse {
                label: label.to_owned(),
            })
            .client_name(CLIENT_NAME)
            .store(store)
            .build();
        return Ok(Some(SignIn {
            oauth,
            may_ask: false,
        }));
    }
    let report = report.clone();
    let shown = label.to_owned();
    let redirect = LoopbackRedirect::bind(0)
        .await
        .context("cannot listen on 127.0.0.1 for a sign-in")?
        .timeout(SIGN_IN_WAIT)
        .on_url(move |url| report.note(&invitation(&shown, url.as_str())));
    let oauth = OAuth::builder()
        .authorizer(redirect)
        .client_name(CLIENT_NAME)
        .store(store)
        .build();
    Ok(Some(SignIn {
        oauth,
        may_ask: !stored,
    }))
}

/// What the person reads when a sign-in starts.
pub fn invitation(label: &str, url: &str) -> String {
    format!(
        "{label} asks you to sign in. Open this URL in a browser:\n\n  {url}\n\n\
         Waiting for the browser (up to {} minutes; Ctrl-C to give up)…",
        SIGN_IN_WAIT.as_secs() / 60
    )
}

/// The library's file store, whose folder is created (private) on the
/// first save: a command against a server that never asks to sign in
/// leaves nothing behind.
struct PrivateStore(FileTokenStore);

impl TokenStore for PrivateStore {
    fn load(&self, server: &str) -> std::io::Result<Option<Credentials>> {
        self.0.load(server)
    }

    fn save(&self, server: &str, credentials: &Credentials) -> std::io::Result<()> {
        make_tokens_dir().map_err(|e| std::io::Error::other(format!("{e:#}")))?;
        self.0.save(server, credentials)
    }

    fn remove(&self, server: &str) -> std::io::Result<()> {
        self.0.remove(server)
    }
}

/// The authorizer of `--no-login`: never sends anyone to a browser.
struct Refuse {
    label: String,
}

impl Authorizer for Refuse {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1/callback".to_owned()
    }

    fn authorize(&self, _url: url::Url) -> BoxFuture<'_, Result<url::Url, BoxError>> {
        let message = format!(
            "no stored token works and --no-login forbids a sign-in: run `mcp-tasks login {}`",
            self.label
        );
        Box::pin(async move { Err(message.into()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_url_has_its_own_token_file_named_by_its_host() {
        let a = token_file("https://mcp.example.com/mcp").unwrap();
        let b = token_file("https://mcp.example.com/other").unwrap();
        let c = token_file("http://127.0.0.1:8080/mcp").unwrap();
        assert_ne!(a, b);
        let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name(&a).starts_with("mcp.example.com-"), "{a:?}");
        assert!(name(&c).starts_with("127.0.0.1_8080-"), "{c:?}");
        assert_eq!(a, token_file("https://mcp.example.com/mcp").unwrap());
    }
}
