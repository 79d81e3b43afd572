//! `mcp-tasks serve`: the task inbox (the library's `inbox::router`) on
//! its own, over the local task list or a store named on the command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use mcp_tasks::inbox::{Options, router};
use mcp_tasks::store::{PostgresStore, SqliteStore, TaskStore};

use crate::Failure;
use crate::failure::exit;
use crate::records::Records;

/// The variable that gives the access token.
pub const TOKEN_VAR: &str = "MCP_TASKS_INBOX_TOKEN";

/// The arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The task store: `sqlite:PATH` (a SQLite file), or a
    /// `postgres://…` URL. Default: the task list of `call --detach`.
    #[arg(long, value_name = "STORE")]
    store: Option<String>,
    /// The address to listen on. Any address other than loopback needs
    /// an access token: $MCP_TASKS_INBOX_TOKEN, else one is made and
    /// printed once.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
}

/// Which store to serve.
enum Store {
    Sqlite(PathBuf),
    Postgres(String),
    TaskList,
}

fn parse_store(text: Option<&str>) -> anyhow::Result<Store> {
    match text {
        None => Ok(Store::TaskList),
        Some(t) if t.starts_with("postgres://") || t.starts_with("postgresql://") => {
            Ok(Store::Postgres(t.to_owned()))
        }
        Some(t) => match t.strip_prefix("sqlite:") {
            Some(path) if !path.is_empty() => Ok(Store::Sqlite(PathBuf::from(path))),
            _ => Err(Failure::usage(format!(
                "--store takes sqlite:PATH or a postgres:// URL, not {t:?}"
            ))
            .into()),
        },
    }
}

/// A fresh access token: 32 random bytes, in hex.
fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random bytes for a token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Serves the inbox until Ctrl-C.
pub async fn run(args: ServeArgs) -> anyhow::Result<u8> {
    let store = parse_store(args.store.as_deref())?;
    let given = std::env::var(TOKEN_VAR).ok().filter(|t| !t.is_empty());
    let loopback = args.listen.ip().is_loopback();
    let (token, made) = match given {
        Some(t) => (Some(t), false),
        None if loopback => (None, false),
        None => (Some(new_token()?), true),
    };
    let mut options = Options::new();
    if let Some(t) = &token {
        options = options.access_token(t.clone());
    }
    match store {
        Store::TaskList => {
            let records = Records::open().await?;
            serve_store(records.store(), options, args.listen, token, made).await
        }
        Store::Sqlite(path) => {
            let store = SqliteStore::open(&path)
                .await
                .map_err(|e| anyhow::anyhow!(crate::one_line(&e)))
                .with_context(|| format!("cannot open the task store {}", path.display()))?;
            serve_store(store, options, args.listen, token, made).await
        }
        Store::Postgres(url) => {
            let store = PostgresStore::connect(&url)
                .await
                .map_err(|e| anyhow::anyhow!(crate::one_line(&e)))
                .context("cannot reach the Postgres task store")?;
            serve_store(store, options, args.listen, token, made).await
        }
    }
}

/// Serves the inbox over `store` on `listen` until Ctrl-C, after saying
/// where (with the access token when this run `made` it).
async fn serve_store<S: TaskStore>(
    store: S,
    options: Options,
    listen: SocketAddr,
    token: Option<String>,
    made: bool,
) -> anyhow::Result<u8> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| Failure::usage(format!("cannot listen on {listen}: {e}")))?;
    let local = listener.local_addr().context("no local address")?;
    let address = match local {
        SocketAddr::V6(a) => format!("http://[{}]:{}", a.ip(), a.port()),
        SocketAddr::V4(a) => format!("http://{a}"),
    };
    match (&token, made) {
        (Some(t), true) => {
            out!(
                "inbox on {address}/ — open {address}/tasks?token={t} once (an access token made for this run; set {TOKEN_VAR} to choose one)"
            );
        }
        (Some(_), false) => out!("inbox on {address}/ (open it once with ?token=${TOKEN_VAR})"),
        (None, _) => out!("inbox on {address}/"),
    }
    let app = router(store, options);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("the inbox stopped")?;
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn stores_are_named_by_scheme() {
        assert!(matches!(parse_store(None), Ok(Store::TaskList)));
        assert!(
            matches!(parse_store(Some("sqlite:/tmp/x.db")), Ok(Store::Sqlite(p)) if p == Path::new("/tmp/x.db"))
        );
        assert!(matches!(
            parse_store(Some("postgres://u@h/db")),
            Ok(Store::Postgres(_))
        ));
        assert!(parse_store(Some("sqlite:")).is_err());
        assert!(parse_store(Some("/tmp/x.db")).is_err());
        let a = new_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, new_token().unwrap());
    }
}
