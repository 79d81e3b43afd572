//! How every command names its server: `--url URL` (with `--header` and
//! `--bearer`), a command to run after `--`, or a server of a config file
//! (`--server NAME` or `@NAME`); for a task named by its short local name,
//! the server recorded with it when the command line names none.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use clap::builder::FalseyValueParser;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::ListRootsResult;
use mcp_tasks::protocol::{PROTOCOL_VERSION, supported_versions};
use mcp_tasks::transport::{Http, Stderr, Stdio};
use mcp_tasks::{Client, Error};

use crate::Failure;
use crate::config::{ConfiguredServers, ResolvedKind};
use crate::records::Endpoint;
use crate::report::{Report, Style};

/// The server to talk to.
#[derive(Debug, Default, Args)]
#[command(next_help_heading = "Server")]
pub struct ServerArgs {
    /// A remote server's Streamable HTTP endpoint.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    url: Option<String>,

    /// An HTTP header sent with every request to --url or to a task's
    /// recorded URL (repeatable; never recorded).
    #[arg(long = "header", value_name = "NAME:VALUE")]
    headers: Vec<String>,

    /// A bearer token for --url or a task's recorded URL (sent as
    /// `Authorization: Bearer TOKEN`; never recorded; unused by a server
    /// run after `--`).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "MCP_BEARER_TOKEN",
        hide_env_values = true
    )]
    bearer: Option<String>,

    /// A folder to show the server as a root, where it may work
    /// (repeatable; default: the current folder).
    #[arg(long = "root", value_name = "PATH")]
    roots: Vec<PathBuf>,

    /// Speak this protocol revision, without asking the server which it
    /// speaks: 2026-07-28, or an initialize-era one (2025-11-25,
    /// 2025-06-18, 2025-03-26, 2024-11-05). Default: ask.
    #[arg(long, value_name = "VERSION")]
    protocol_version: Option<String>,

    /// A server to run as a child process, spoken to over its stdin and
    /// stdout: everything after `--` (its stderr shows through).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,

    /// A server defined in a config file (`tools @NAME` and
    /// `call @NAME TOOL` say the same).
    #[arg(long = "server", value_name = "NAME", conflicts_with_all = ["url", "command"])]
    server: Option<String>,

    #[command(flatten)]
    config: ConfigArgs,

    /// A variable of a child server's environment (repeatable; over those
    /// of its config entry).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,

    /// Fail with exit status 5 instead of starting a sign-in when no
    /// stored token works (for scripts).
    #[arg(long, env = "MCP_TASKS_NO_LOGIN", value_parser = FalseyValueParser::new())]
    no_login: bool,

    /// The configured server's name, once resolved.
    #[arg(skip)]
    name: Option<String>,

    /// The configured server's environment (expanded).
    #[arg(skip)]
    child_env: Vec<(String, String)>,

    /// The configured server's bound on each request.
    #[arg(skip)]
    timeout: Option<Duration>,
}

/// Where servers are defined.
#[derive(Debug, Default, Args)]
pub struct ConfigArgs {
    /// The config file to read servers from, in the `mcpServers` form
    /// (Claude Desktop, Cursor) or VS Code's `servers` form (default: the
    /// first of ./.vscode/mcp.json, ./.cursor/mcp.json, ./.mcp.json,
    /// ~/.config/mcp-tasks/servers.json, Claude Desktop's, ~/.cursor/mcp.json
    /// to define each name).
    #[arg(long, value_name = "FILE", env = "MCP_TASKS_CONFIG")]
    pub config: Option<PathBuf>,
}

impl ServerArgs {
    /// Fills in the server named `at` (from `@NAME`) or by `--server`
    /// from the config files; nothing when neither names one.
    ///
    /// # Errors
    ///
    /// A server named twice, an unknown name (the message names the files
    /// read), a variable of its entry that is not set.
    pub fn resolve(&mut self, at: Option<&str>) -> anyhow::Result<()> {
        let name = match (at, self.server.take()) {
            (Some(_), Some(_)) => bail!(Failure::usage(
                "name the server once: @NAME or --server NAME"
            )),
            (Some(at), None) => at.to_owned(),
            (None, Some(name)) => name,
            (None, None) => return Ok(()),
        };
        if self.url.is_some() || !self.command.is_empty() {
            bail!(Failure::usage(format!(
                "@{name} names the server already: leave out --url and `--`"
            )));
        }
        let configured = ConfiguredServers::load(self.config.config.as_deref())?;
        let resolved = configured.find(&name)?.resolve()?;
        match resolved.kind {
            ResolvedKind::Stdio { command, args, env } => {
                self.command = std::iter::once(command).chain(args).collect();
                self.child_env = env;
            }
            ResolvedKind::Http { url, headers } => {
                self.url = Some(url);
                // Before any --header of the command line, which wins.
                let mut all: Vec<String> =
                    headers.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                all.append(&mut self.headers);
                self.headers = all;
            }
        }
        self.timeout = resolved.timeout;
        self.name = Some(name);
        Ok(())
    }

    /// How `mcp-tasks login` names this server: its configured name, else
    /// its URL.
    fn login_name(&self) -> String {
        match (&self.name, &self.url) {
            (Some(name), _) => name.clone(),
            (None, Some(url)) => url.clone(),
            (None, None) => "SERVER".to_owned(),
        }
    }

    /// How to reach the server again, for the task list: a configured
    /// server's name, else the URL (without any `user:password@`) or the
    /// command line; never a header or a token. `None` when the command
    /// line names no server.
    pub fn endpoint(&self) -> Option<Endpoint> {
        if let Some(name) = &self.name {
            return Some(Endpoint::Configured {
                name: name.clone(),
                config: self.config.config.clone(),
            });
        }
        match (&self.url, self.command.is_empty()) {
            (Some(url), _) => Some(Endpoint::url(url)),
            (None, false) => Some(Endpoint::Command(self.command.clone())),
            (None, true) => None,
        }
    }

    /// The server at `recorded`, with the bearer token of
    /// `MCP_BEARER_TOKEN` for a URL: for a command that names no server.
    ///
    /// # Errors
    ///
    /// A configured server that can no longer be resolved.
    pub fn recorded(recorded: &Endpoint) -> anyhow::Result<ServerArgs> {
        let bearer = match recorded {
            Endpoint::Url(_) => std::env::var("MCP_BEARER_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
            Endpoint::Command(_) | Endpoint::Configured { .. } => None,
        };
        ServerArgs {
            bearer,
            ..ServerArgs::default()
        }
        .or_recorded(Some(recorded))
    }

    /// This server or, when the command line names none, the one at
    /// `recorded` (a configured one read from its config file again).
    ///
    /// # Errors
    ///
    /// A configured server that can no longer be resolved.
    pub fn or_recorded(mut self, recorded: Option<&Endpoint>) -> anyhow::Result<ServerArgs> {
        if self.endpoint().is_none() {
            match recorded {
                Some(Endpoint::Url(url)) => self.url = Some(url.clone()),
                Some(Endpoint::Command(words)) => self.command = words.clone(),
                Some(Endpoint::Configured { name, config }) => {
                    if self.config.config.is_none() {
                        self.config.config = config.clone();
                    }
                    self.resolve(Some(name))?;
                }
                None => {}
            }
        }
        Ok(self)
    }

    /// Why no later command could follow a task this command leaves
    /// running, if so: a server run as a command (after `--`, or a
    /// configured stdio server) ends with the command, and
    /// an HTTP server of the initialize era (`era`, once connected) may
    /// keep its tasks in the connection's session, which the command
    /// ends. `None` when a later command can follow it, or before the
    /// era of an HTTP server is known.
    pub fn unfollowable(&self, era: Option<&str>) -> Option<String> {
        if self.url.is_none() && !self.command.is_empty() {
            // Named as the command line named it.
            return Some(match &self.name {
                Some(name) => format!(
                    "@{name} is a command this one runs (a stdio server): it ends with this \
                     command, and its tasks with it"
                ),
                None => {
                    "the server run after `--` ends with this command, and its tasks with it".into()
                }
            });
        }
        match era {
            Some(version) if self.url.is_some() && version != PROTOCOL_VERSION => Some(format!(
                "this server speaks {version}, whose tasks may belong to the HTTP session \
                 (Mcp-Session-Id), which ends with this command"
            )),
            _ => None,
        }
    }

    /// A short name of the server for messages and hints.
    pub fn describe(&self) -> String {
        if let Some(name) = &self.name {
            return format!("@{name}");
        }
        match &self.url {
            Some(url) => format!("--url {url}"),
            None => format!("-- {}", self.command.join(" ")),
        }
    }

    /// Connects, negotiating the protocol revision, with `handlers`
    /// answering the server's questions and the roots (`--root`, or the
    /// current folder) answering `roots/list`.
    ///
    /// A child server's stderr shows through, or with `report` showing a
    /// live status line, is printed above it line by line.
    pub async fn connect(
        &self,
        handlers: InputHandlers,
        report: &Report,
    ) -> anyhow::Result<Client> {
        let roots =
            crate::roots::roots(&self.roots).map_err(|e| Failure::usage(format!("{e:#}")))?;
        let handlers = handlers.roots(move |_| {
            let roots = roots.clone();
            async move { Ok(ListRootsResult { roots }) }
        });
        let pinned = match &self.protocol_version {
            Some(version) => Some(known_version(version)?),
            None => None,
        };
        let builder = Client::builder()
            .client_info("mcp-tasks-cli", env!("CARGO_PKG_VERSION"))
            .input_handlers(handlers)
            .request_timeout(self.timeout.unwrap_or(Duration::from_secs(60)))
            .maybe_protocol_version(pinned);
        let mut environment = self.child_env.clone();
        for pair in &self.env {
            let Some((key, value)) = pair.split_once('=') else {
                bail!(Failure::usage(format!("-e {pair:?} is not KEY=VALUE")));
            };
            environment.push((key.to_owned(), value.to_owned()));
        }
        let connected = match (&self.url, self.command.split_first()) {
            (Some(_), _) if !environment.is_empty() => bail!(Failure::usage(
                "-e is for a server run as a command, not one at a URL"
            )),
            (Some(url), _) => {
                let mut http = Http::new(url);
                for header in &self.headers {
                    let Some((name, value)) = header.split_once(':') else {
                        // The value is not repeated: it may be a token
                        // typed without its colon.
                        bail!(Failure::usage(
                            "a --header is not NAME:VALUE (no colon)".to_owned()
                        ));
                    };
                    http = http.header(name.trim(), value.trim());
                }
                let mut may_ask = false;
                if let Some(token) = &self.bearer {
                    http = http.bearer_token(token);
                } else if !self.headers.iter().any(|h| is_authorization(h))
                    && let Some(sign_in) =
                        crate::sign_in::for_command(url, &self.login_name(), self.no_login, report)
                            .await?
                {
                    may_ask = sign_in.may_ask;
                    http = http.auth(sign_in.oauth);
                }
                // A sign-in holds the first request until the browser is back.
                builder
                    .maybe_probe_timeout(may_ask.then_some(crate::sign_in::SIGN_IN_WAIT))
                    .connect(http)
                    .await
            }
            (None, Some(_)) if !self.headers.is_empty() => bail!(Failure::usage(
                "--header is for a server at --url, not one run after `--`"
            )),
            (None, Some((program, args))) => {
                if self.bearer.is_some() {
                    // It may come from MCP_BEARER_TOKEN, set for other servers.
                    tracing::debug!("a bearer token is not sent to a server run after `--`");
                }
                let stderr = if report.style() == Style::Live {
                    crate::report::show_server_stderr(report);
                    Stderr::Log
                } else {
                    Stderr::Inherit
                };
                let mut stdio = Stdio::command(program).args(args);
                for (key, value) in environment {
                    stdio = stdio.env(key, value);
                }
                let stdio = stdio
                    .stderr(stderr)
                    // Ctrl-C is for this process, which cancels the task
                    // before it closes the server. Closing then takes the
                    // crate's bounds: 500 ms for the server to exit, then
                    // SIGTERM to its group, and SIGKILL 2 s later.
                    .own_process_group(true);
                builder.connect(stdio).await
            }
            (None, None) => bail!(Failure::usage(
                "name a server: --url URL, @NAME of a config file (see `mcp-tasks servers`), \
                 or a command after `--` (for example `-- mcp-tasks-demo`)"
            )),
        };
        let server = match &self.protocol_version {
            Some(version) => format!("{} (--protocol-version {version})", self.describe()),
            None => self.describe(),
        };
        match connected {
            Ok(client) => Ok(client),
            Err(e) if matches!(e.http_status(), Some(401 | 403)) => {
                let hint =
                    if self.bearer.is_some() || self.headers.iter().any(|h| is_authorization(h)) {
                        String::new()
                    } else {
                        format!(" (sign in with `mcp-tasks login {}`)", self.login_name())
                    };
                Err(Failure::auth(format!(
                    "cannot connect to {server}: {}{hint}",
                    crate::one_line(&e)
                ))
                .into())
            }
            Err(e) => Err(connect_error(&e, &server)),
        }
    }
}

/// Whether a `NAME:VALUE` header is `Authorization`.
fn is_authorization(header: &str) -> bool {
    header
        .split_once(':')
        .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"))
}

/// `version` when this client speaks it, else a usage error naming those
/// it does.
fn known_version(version: &str) -> Result<&'static str, Failure> {
    supported_versions()
        .find(|v| *v == version.trim())
        .ok_or_else(|| {
            Failure::usage(format!(
                "--protocol-version {version:?} is not a revision this client speaks \
                 (it speaks {})",
                supported_versions().collect::<Vec<_>>().join(", ")
            ))
        })
}

/// A failed connection, with the exit status its cause calls for: refused
/// credentials, else a server that could not be reached (a builder
/// mistake stays a usage error).
fn connect_error(e: &Error, server: &str) -> anyhow::Error {
    let code = match crate::exit::of(e) {
        code @ (crate::exit::AUTH | crate::exit::USAGE) => code,
        _ => crate::exit::UNREACHABLE,
    };
    let message = format!("cannot connect to {server}: {}", crate::one_line(e));
    Failure { code, message }.into()
}
