//! A server run as a child process, spoken to over its stdin and stdout.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::Stdio as ProcessStdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

use super::line::{LineStream, write_line};
use crate::protocol::Message;
use child::{Close, Ended, Group};

use super::{
    Closed, DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageSink, MessageStream, Outbound, Transport,
};

mod child;

/// Where the child's stderr goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stderr {
    /// Shared with this process's stderr (the default).
    #[default]
    Inherit,
    /// Discarded, but for its last few lines, kept to explain an exit
    /// (see [`Stdio`]'s "When the server fails to start").
    Null,
    /// Read line by line and logged with `tracing` at `debug` level, target
    /// `mcp_tasks::stderr`. Lines are cut at 8 KiB, so a child that writes
    /// without newlines cannot make the client buffer without bound. The
    /// last few lines also explain an exit, as with [`Stderr::Null`].
    Log,
}

/// Spawns an MCP server as a child process.
///
/// The server reads JSON-RPC messages from its stdin and writes them to its
/// stdout, one per line.
///
/// # Closing, and drop behavior
///
/// The child starts in a process group of its own (Unix; see
/// [`Stdio::own_process_group`]), and closing ends the whole group, as
/// the MCP specification asks of a client:
///
/// 1. [`Client::close`](crate::Client::close) closes the child's stdin;
/// 2. the child has [`Stdio::shutdown_timeout`] (500 ms by default) to
///    exit of itself;
/// 3. then the group is sent SIGTERM, if the child, or a process it
///    started, is still running (the server behind an `npx` or shell
///    wrapper, say, which would otherwise live on);
/// 4. and [`Stdio::terminate_timeout`] (2 s by default) later, SIGKILL.
///
/// `close` returns once they are gone: at once for a server that exits
/// when its stdin closes, within 2.5 s by default for one that does not
/// (after 500 ms for one that ends on SIGTERM), and at most 1 s after the
/// SIGKILL whatever happens. A server ended by a signal is still closed:
/// `Ok`, logged at `warn` and counted in
/// [`ClientStats::servers_killed`](crate::ClientStats::servers_killed).
/// (Elsewhere than Unix the child alone is killed after the first bound.)
///
/// When the last [`Client`](crate::Client) clone is dropped instead, the
/// same happens in the background, awaited by nobody. Should the runtime
/// stop before that, the child and its group are killed (SIGKILL) when
/// the task that owns them is dropped: they never outlive the client.
///
/// `Debug` shows the names of the environment variables set for the
/// child, not their values, which are often secrets.
///
/// # When the server fails to start
///
/// A wrong command (a program that is not an MCP server, a server that
/// needs an argument) should fail at once and say why. The rules:
///
/// - Lines on stdout that are not JSON-RPC before its first JSON-RPC
///   message (a banner, a usage text) are skipped, not fatal: a server
///   may print a banner before it speaks. The last 3 of them (each cut
///   at 200 characters) are kept, and when the handshake then fails or
///   gets no answer, its error quotes them. Once a JSON-RPC message has
///   come, lines are no longer checked here (the client skips and counts
///   unreadable ones, see [`ClientStats::discarded_messages`](crate::ClientStats::discarded_messages)).
/// - Without a pinned version, `connect` probes with `server/discover`:
///   when the probe gets no answer in time
///   ([`ClientBuilder::probe_timeout`](crate::ClientBuilder::probe_timeout),
///   10 s by default) and the program printed nothing but such lines,
///   `connect` fails then, quoting them, rather than trying `initialize`
///   too. A server that prints a banner and then takes longer than that
///   to answer needs a longer probe timeout, or a pinned
///   `protocol_version`.
/// - When the child exits (or closes its stdout), during the handshake or
///   later, the connection fails at once with its exit status and, when
///   its stderr is [`Stderr::Null`] or [`Stderr::Log`], the last 5 lines
///   of it (each cut at 200 characters; with [`Stderr::Inherit`] they went
///   to this process's stderr). A child that exits has its status and
///   stderr read within milliseconds; the client waits for them at most
///   100 ms after the stdout closes, so that a child that closes its
///   stdout and lives on is reported as such ("the server closed its
///   stdout") that soon.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> mcp_tasks::Result<()> {
/// use mcp_tasks::{Client, transport::Stdio};
/// let client = Client::builder()
///     .connect(Stdio::command("my-mcp-server").arg("--verbose").env("TOKEN", "…"))
///     .await?;
/// # Ok(()) }
/// ```
pub struct Stdio {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    current_dir: Option<PathBuf>,
    stderr: Stderr,
    max_message_size: usize,
    shutdown_timeout: Duration,
    terminate_timeout: Duration,
    own_process_group: bool,
}

impl fmt::Debug for Stdio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stdio")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("current_dir", &self.current_dir)
            .field("stderr", &self.stderr)
            .field("max_message_size", &self.max_message_size)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("terminate_timeout", &self.terminate_timeout)
            .field("own_process_group", &self.own_process_group)
            .finish()
    }
}

impl Stdio {
    /// The program to run (looked up on `PATH` like [`std::process::Command`]).
    pub fn command(program: impl Into<OsString>) -> Self {
        Stdio {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
            stderr: Stderr::Inherit,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            terminate_timeout: DEFAULT_TERMINATE_TIMEOUT,
            own_process_group: true,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = A>, A: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The child's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Where the child's stderr goes (default: inherited).
    pub fn stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// The longest message accepted from the child (default 16 MiB). A
    /// longer one closes the connection with a clear error.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How long the child has to exit of itself once its stdin is closed,
    /// before it (with its process group) is sent SIGTERM (default
    /// 500 ms; see [`Stdio`], "Closing, and drop behavior"). A server
    /// that needs longer to wind down, and does not wind down on SIGTERM,
    /// needs a longer one.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// How long the child (with its process group) has to end after
    /// SIGTERM, before it is sent SIGKILL (default 2 s; Unix: elsewhere
    /// the child is killed at once after
    /// [`shutdown_timeout`](Stdio::shutdown_timeout)).
    pub fn terminate_timeout(mut self, timeout: Duration) -> Self {
        self.terminate_timeout = timeout;
        self
    }

    /// Starts the child in a process group of its own (Unix; elsewhere
    /// this does nothing). Default `true`.
    ///
    /// In a group of its own, closing ends the whole group: the child and
    /// every process it started that stayed in it (the server behind an
    /// `npx` or shell wrapper, say, which holds the wrapper's stdout and
    /// would otherwise outlive the client). And the child hears only what
    /// this process tells it: a terminal sends Ctrl-C (`SIGINT`) to its
    /// foreground process group, which no longer holds the child, so
    /// this process can still send a last request (such as
    /// `tasks/cancel`) and close it gracefully. Should this process die
    /// without closing the client, the child reads the end of its stdin
    /// and is left to end of itself.
    ///
    /// With `false` the child shares this process's group: it dies with
    /// a Ctrl-C along with this process, but closing signals the child
    /// alone, and processes it started may outlive it.
    pub fn own_process_group(mut self, yes: bool) -> Self {
        self.own_process_group = yes;
        self
    }
}

/// How long a child has to exit once its stdin is closed, by default.
const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a child has to end after SIGTERM, by default.
const DEFAULT_TERMINATE_TIMEOUT: Duration = Duration::from_secs(2);

/// The writing half of a [`Stdio`] transport; ends the child.
#[derive(Debug)]
pub struct StdioSink {
    stdin: Option<ChildStdin>,
    /// Tells the task that owns the child to end it (dropping it has the
    /// child and its group killed at once).
    close: Option<oneshot::Sender<Close>>,
    exit: Exit,
    shutdown_timeout: Duration,
    terminate_timeout: Duration,
}

/// The reading half of a [`Stdio`] transport.
#[derive(Debug)]
pub struct StdioStream {
    lines: LineStream<ChildStdout>,
    exit: Exit,
    /// Whether a JSON-RPC message has come: until then, lines that are not
    /// JSON-RPC are checked for and reported.
    heard: bool,
}

/// How long the story of an exit waits for the exit status and the end of
/// the stderr, once the stdout closed. A child that exits is reaped, and
/// its stderr read to the end, within milliseconds; a child that only
/// closed its stdout may never exit, and the connection is to be failed
/// at once all the same.
const EXIT_WAIT: Duration = Duration::from_millis(100);
/// How many of the last stderr lines an exit quotes.
const STDERR_TAIL_LINES: usize = 5;
/// Most characters of one line quoted in an error.
const QUOTE_CHARS: usize = 200;

/// What is known of the child's end, shared by the two halves.
#[derive(Debug, Clone)]
struct Exit {
    /// The exit status, as text, once the child has exited.
    status: watch::Receiver<Option<String>>,
    /// The last lines of the stderr, when it is read.
    stderr: Option<Arc<Mutex<VecDeque<String>>>>,
    /// Whether the stderr reached its end (or is not read).
    stderr_done: watch::Receiver<bool>,
}

impl Exit {
    /// What became of the child, for an error: its exit status (waiting
    /// up to [`EXIT_WAIT`] for it) and the last lines of its stderr.
    async fn story(&self) -> String {
        let mut status = self.status.clone();
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(EXIT_WAIT, async {
            let _ = status.wait_for(Option::is_some).await;
            let _ = done.wait_for(|d| *d).await;
        })
        .await;
        let mut story = match &*status.borrow() {
            Some(status) => format!("the server exited ({status})"),
            None => "the server closed its stdout".to_owned(),
        };
        let tail = self
            .stderr
            .as_ref()
            .map(|t| {
                t.lock()
                    .unwrap()
                    .iter()
                    .map(|l| quote(l))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        if !tail.is_empty() {
            story.push_str("; its stderr ended with: ");
            story.push_str(&tail.join(", "));
        }
        story
    }
}

/// A line as an error quotes it: in quotes, escaped, cut at [`QUOTE_CHARS`].
fn quote(line: &str) -> String {
    match line.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{:?}…", &line[..cut]),
        None => format!("{line:?}"),
    }
}

impl Transport for Stdio {
    type Sink = StdioSink;
    type Stream = StdioStream;

    async fn connect(self) -> io::Result<(StdioSink, StdioStream)> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(ProcessStdio::piped())
            .stdout(ProcessStdio::piped())
            .stderr(match self.stderr {
                Stderr::Inherit => ProcessStdio::inherit(),
                Stderr::Null | Stderr::Log => ProcessStdio::piped(),
            })
            .kill_on_drop(true);
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        #[cfg(unix)]
        if self.own_process_group {
            cmd.process_group(0);
        }
        let mut child = cmd.spawn().map_err(|e| {
            io::Error::new(e.kind(), format!("could not start {:?}: {e}", self.program))
        })?;
        #[cfg(unix)]
        let group = child
            .id()
            .filter(|_| self.own_process_group)
            .and_then(Group::led_by);
        #[cfg(not(unix))]
        let group: Option<Group> = None;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (done_tx, stderr_done) = watch::channel(true);
        let stderr = child.stderr.take().map(|stderr| {
            let tail = Arc::new(Mutex::new(VecDeque::new()));
            let _ = done_tx.send(false);
            tokio::spawn(read_stderr(stderr, self.stderr, tail.clone(), done_tx));
            tail
        });
        // The child lives in a task of its own, which reaps it, tells both
        // halves how it ended, and ends it with its group when the sink
        // asks (dropping the sink has them killed). Should the runtime
        // stop first, they are killed with the task (`kill_on_drop`, and
        // `Group`'s drop).
        let (status_tx, status) = watch::channel(None);
        let (close, close_rx) = oneshot::channel();
        tokio::spawn(child::own(child, group, status_tx, close_rx));
        let exit = Exit {
            status,
            stderr,
            stderr_done,
        };
        Ok((
            StdioSink {
                stdin: Some(stdin),
                close: Some(close),
                exit: exit.clone(),
                shutdown_timeout: self.shutdown_timeout,
                terminate_timeout: self.terminate_timeout,
            },
            StdioStream {
                lines: LineStream::new(stdout, self.max_message_size),
                exit,
                heard: false,
            },
        ))
    }
}

/// Reads the child's stderr to its end: logs each line (with
/// [`Stderr::Log`]) and keeps the last [`STDERR_TAIL_LINES`] in `tail`.
async fn read_stderr(
    stderr: ChildStderr,
    mode: Stderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    done: watch::Sender<bool>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    while let Ok(Some(cut)) = read_capped_line(&mut reader, &mut line, MAX_STDERR_LINE).await {
        let text = String::from_utf8_lossy(trim_newline(&line));
        if mode == Stderr::Log {
            let more = if cut { " […]" } else { "" };
            tracing::debug!(target: "mcp_tasks::stderr", "{text}{more}");
        }
        if !text.trim().is_empty() {
            let kept: String = text.chars().take(QUOTE_CHARS + 1).collect();
            let mut tail = tail.lock().unwrap();
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(kept);
        }
        line.clear();
    }
    let _ = done.send(true);
}

/// The longest stderr line logged; the rest of a longer line is dropped.
const MAX_STDERR_LINE: usize = 8 * 1024;

/// Reads the next line into `buf`, keeping at most `cap` bytes of it and
/// dropping the rest. `Ok(Some(cut))` says whether the line was cut;
/// `Ok(None)` is the end of the stream.
async fn read_capped_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<bool>> {
    let mut cut = false;
    let mut any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        cut |= chunk.len() > room;
        let used = chunk.len();
        reader.consume(used);
        if done {
            return Ok(Some(cut));
        }
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl MessageSink for StdioSink {
    async fn send(&mut self, message: Outbound) -> io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin is closed"))?;
        match write_line(stdin, message.json).await {
            Ok(()) => Ok(()),
            // Most often the child is gone: say how it ended.
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("{e}; {}", self.exit.story().await),
            )),
        }
    }

    async fn close(&mut self) -> io::Result<Closed> {
        drop(self.stdin.take());
        let Some(close) = self.close.take() else {
            return Ok(Closed::gracefully());
        };
        let (done, ended) = oneshot::channel();
        let order = Close {
            grace: self.shutdown_timeout,
            terminate: self.terminate_timeout,
            done,
        };
        if close.send(order).is_err() {
            return Ok(Closed::gracefully()); // the task is gone: the runtime is stopping
        }
        let ended = match ended.await {
            Ok(ended) => ended,
            Err(_) => return Ok(Closed::gracefully()),
        };
        let grace = self.shutdown_timeout;
        match ended {
            Ok(Ended::Exited) => {}
            Ok(Ended::Terminated) => tracing::warn!(
                "the server, or a process it started, was still running {grace:?} after its \
                 stdin closed; ended it with SIGTERM"
            ),
            Ok(Ended::Killed) => tracing::warn!(
                "the server, or a process it started, was still running {grace:?} after its \
                 stdin closed and {:?} after SIGTERM; killed it",
                self.terminate_timeout
            ),
            Err(_) => tracing::warn!("the server did not end, even when killed"),
        }
        ended.map(|ended| match ended {
            Ended::Exited => Closed::gracefully(),
            Ended::Terminated | Ended::Killed => Closed::by_force(),
        })
    }
}

impl MessageStream for StdioStream {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        match self.lines.recv().await? {
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                self.exit.story().await,
            )),
            Some(Inbound::Message(text)) if !self.heard => {
                if Message::from_json(&text).is_ok() {
                    self.heard = true;
                    Ok(Some(Inbound::Message(text)))
                } else {
                    Ok(Some(Inbound::Invalid(format!(
                        "a line that is not JSON-RPC: {}",
                        quote(&text)
                    ))))
                }
            }
            other => Ok(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_lines_are_cut_not_buffered_without_bound() {
        let mut input = vec![b'x'; 1 << 20];
        input.extend_from_slice(b"\nshort\r\nlast");
        let mut reader = BufReader::new(std::io::Cursor::new(input));
        let mut line = Vec::new();
        let mut lines = Vec::new();
        while let Some(cut) = read_capped_line(&mut reader, &mut line, 16).await.unwrap() {
            assert!(
                line.capacity() <= 1 << 13,
                "buffered {} bytes",
                line.capacity()
            );
            lines.push((
                String::from_utf8_lossy(trim_newline(&line)).into_owned(),
                cut,
            ));
            line.clear();
        }
        assert_eq!(
            lines,
            [
                ("x".repeat(16), true),
                ("short".to_owned(), false),
                ("last".to_owned(), false),
            ]
        );
    }
}
