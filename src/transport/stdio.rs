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

use super::{DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageSink, MessageStream, Outbound, Transport};

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
/// [`Client::close`](crate::Client::close) closes the child's stdin, waits
/// up to [`Stdio::shutdown_timeout`] for it to exit, then kills it, and
/// returns once the child is gone. A kill is no error (the connection is
/// closed): it is logged at `warn` and counted in
/// [`ClientStats::servers_killed`](crate::ClientStats::servers_killed).
/// When the last [`Client`](crate::Client) clone is dropped instead, the
/// same happens in the background, awaited by nobody. Should the runtime
/// stop before that, the child is killed when its handle is dropped: it
/// never outlives the client.
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
///   to this process's stderr). The client waits up to 2 s for the exit
///   status after the stdout closes.
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
            shutdown_timeout: Duration::from_secs(5),
            own_process_group: false,
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

    /// How long to wait for the child to exit after its stdin is closed
    /// before killing it (default 5 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Starts the child in a process group of its own (Unix; elsewhere
    /// this does nothing). Default `false`: the child shares this
    /// process's group.
    ///
    /// A terminal sends Ctrl-C (`SIGINT`) to its whole foreground process
    /// group, so a child in the same group dies with the keypress, before
    /// this process can send a last request (such as `tasks/cancel`) or
    /// close it gracefully. In a group of its own the child hears only
    /// what this process tells it; it still ends when its stdin closes,
    /// and is killed when the client is dropped, as without this setting.
    pub fn own_process_group(mut self, yes: bool) -> Self {
        self.own_process_group = yes;
        self
    }
}

/// The writing half of a [`Stdio`] transport; ends the child.
#[derive(Debug)]
pub struct StdioSink {
    stdin: Option<ChildStdin>,
    /// Tells the task that owns the child to kill it (so does dropping it).
    kill: Option<oneshot::Sender<()>>,
    exit: Exit,
    shutdown_timeout: Duration,
    /// Whether `close` had to kill the child.
    killed: bool,
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
/// the stderr, once the stdout closed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
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
    /// up to [`EXIT_GRACE`] for it) and the last lines of its stderr.
    async fn story(&self) -> String {
        let mut status = self.status.clone();
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(EXIT_GRACE, async {
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
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (done_tx, stderr_done) = watch::channel(true);
        let stderr = child.stderr.take().map(|stderr| {
            let tail = Arc::new(Mutex::new(VecDeque::new()));
            let _ = done_tx.send(false);
            tokio::spawn(read_stderr(stderr, self.stderr, tail.clone(), done_tx));
            tail
        });
        // The child lives in a task of its own, which reaps it and tells
        // both halves how it ended; the sink asks it to kill the child
        // (and so does dropping the sink). Should the runtime stop first,
        // the child is killed with the task (`kill_on_drop`).
        let (status_tx, status) = watch::channel(None);
        let (kill, kill_rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let ended = tokio::select! {
                ended = child.wait() => ended,
                _ = kill_rx => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let text = match ended {
                Ok(status) => status.to_string(),
                Err(e) => format!("exit status unknown: {e}"),
            };
            let _ = status_tx.send(Some(text));
        });
        let exit = Exit {
            status,
            stderr,
            stderr_done,
        };
        Ok((
            StdioSink {
                stdin: Some(stdin),
                kill: Some(kill),
                exit: exit.clone(),
                shutdown_timeout: self.shutdown_timeout,
                killed: false,
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

    async fn close(&mut self) -> io::Result<()> {
        drop(self.stdin.take());
        let mut status = self.exit.status.clone();
        let exited = tokio::time::timeout(self.shutdown_timeout, status.wait_for(Option::is_some));
        if exited.await.is_ok() {
            return Ok(());
        }
        tracing::warn!(
            "the server did not exit within {:?} of its stdin closing; killing it",
            self.shutdown_timeout
        );
        self.killed = true;
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        let _ = status.wait_for(Option::is_some).await;
        Ok(())
    }

    fn killed_on_close(&self) -> bool {
        self.killed
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
