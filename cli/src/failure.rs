//! How a command fails: the exit statuses `mcp-tasks --help` documents,
//! a failure that carries one, and errors written on one line.

/// A failure with its exit status: the message is printed as one line.
#[derive(Debug)]
pub struct Failure {
    /// The exit status ([`exit`]).
    pub(crate) code: u8,
    /// The message, printed as one line.
    pub(crate) message: String,
}

impl Failure {
    /// Exit status [`exit::USAGE`]: the command line is wrong.
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: exit::USAGE,
            message: message.into(),
        }
    }

    /// Exit status [`exit::FAILED`]: the call or the task failed.
    pub fn failed(message: impl Into<String>) -> Self {
        Failure {
            code: exit::FAILED,
            message: message.into(),
        }
    }

    /// Exit status [`exit::AUTH`]: the server refused the credentials.
    pub fn auth(message: impl Into<String>) -> Self {
        Failure {
            code: exit::AUTH,
            message: message.into(),
        }
    }

    /// Exit status [`exit::UNREACHABLE`]: the server could not be reached,
    /// or the connection failed.
    pub fn unreachable(message: impl Into<String>) -> Self {
        Failure {
            code: exit::UNREACHABLE,
            message: message.into(),
        }
    }

    /// `message`, with the exit status the library's error `e` calls for
    /// ([`exit::of`]).
    pub fn of(e: &mcp_tasks::Error, message: impl Into<String>) -> Self {
        Failure {
            code: exit::of(e),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Exit statuses, as `mcp-tasks --help` documents them.
pub mod exit {
    /// The task completed (`cancel`: the task is cancelled).
    pub const OK: u8 = 0;
    /// The tool ran and reported an error: its result has `isError`.
    pub const TOOL_ERROR: u8 = 1;
    /// The command line was wrong: an option, a reference, an unknown
    /// tool or short name.
    pub const USAGE: u8 = 2;
    /// The call or the task failed (a JSON-RPC error), the task expired,
    /// or the server no longer knows it.
    pub const FAILED: u8 = 3;
    /// The task was cancelled: by anyone for `status` and `wait` (a
    /// `mcp-tasks cancel` included), by someone else (the server, another
    /// client) for the task `call` follows.
    pub const CANCELLED: u8 = 4;
    /// The server refused the credentials (HTTP 401 or 403).
    pub const AUTH: u8 = 5;
    /// The server could not be reached, or the connection failed: it
    /// closed, or sent what is not MCP.
    pub const UNREACHABLE: u8 = 6;
    /// The task is still running: `working` or `input_required`
    /// (`status`).
    pub const RUNNING: u8 = 7;
    /// The person pressed Ctrl-C.
    pub const INTERRUPTED: u8 = 130;
    /// stdout was closed under the command (128 + SIGPIPE, as a shell
    /// reports a program a closed pipe ended).
    pub const CLOSED_PIPE: u8 = 141;

    /// The exit status a failure of the library calls for: refused
    /// credentials, a JSON-RPC error or an unknown task, a mistake of the
    /// command line (the builder's), else a connection that failed.
    pub fn of(e: &mcp_tasks::Error) -> u8 {
        if matches!(e.http_status(), Some(401 | 403)) {
            AUTH
        } else if e.is_task_not_found() || e.is_rpc() {
            FAILED
        } else if e.is_builder() {
            USAGE
        } else {
            UNREACHABLE
        }
    }
}

/// An error and its causes on one line, each cause once.
pub fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

/// anyhow's context chain on one line, each part once: [`one_line`] of it.
pub fn chain(e: &anyhow::Error) -> String {
    let e: &(dyn std::error::Error + 'static) = e.as_ref();
    one_line(e)
}
