//! A server run as a child process, spoken to over its stdin and stdout.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::Stdio as ProcessStdio;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::line::{LineStream, write_line};
use super::{DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageSink, MessageStream, Outbound, Transport};

/// Where the child's stderr goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stderr {
    /// Shared with this process's stderr (the default).
    #[default]
    Inherit,
    /// Discarded.
    Null,
    /// Read line by line and logged with `tracing` at `debug` level, target
    /// `mcp_tasks::stderr`. Lines are cut at 8 KiB, so a child that writes
    /// without newlines cannot make the client buffer without bound.
    Log,
}

/// Spawns an MCP server as a child process.
///
/// The server reads JSON-RPC messages from its stdin and writes them to its
/// stdout, one per line.
///
/// # Drop behavior
///
/// When the last [`Client`](crate::Client) clone is dropped, the client
/// closes the child's stdin, waits up to [`Stdio::shutdown_timeout`] for it
/// to exit, then kills it. Should the runtime stop before that, the child is
/// killed when its handle is dropped: it never outlives the client.
///
/// `Debug` shows the names of the environment variables set for the
/// child, not their values, which are often secrets.
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

/// The writing half of a [`Stdio`] transport; owns the child.
#[derive(Debug)]
pub struct StdioSink {
    stdin: Option<ChildStdin>,
    child: Child,
    shutdown_timeout: Duration,
}

/// The reading half of a [`Stdio`] transport.
#[derive(Debug)]
pub struct StdioStream(LineStream<ChildStdout>);

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
                Stderr::Null => ProcessStdio::null(),
                Stderr::Log => ProcessStdio::piped(),
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
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr);
                let mut line = Vec::new();
                while let Ok(Some(cut)) =
                    read_capped_line(&mut reader, &mut line, MAX_STDERR_LINE).await
                {
                    let text = String::from_utf8_lossy(trim_newline(&line));
                    let more = if cut { " […]" } else { "" };
                    tracing::debug!(target: "mcp_tasks::stderr", "{text}{more}");
                    line.clear();
                }
            });
        }
        Ok((
            StdioSink {
                stdin: Some(stdin),
                child,
                shutdown_timeout: self.shutdown_timeout,
            },
            StdioStream(LineStream::new(stdout, self.max_message_size)),
        ))
    }
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
        write_line(stdin, message.json).await
    }

    async fn close(&mut self) {
        drop(self.stdin.take());
        match tokio::time::timeout(self.shutdown_timeout, self.child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                tracing::debug!("the server did not exit after stdin closed; killing it");
                let _ = self.child.kill().await;
            }
        }
    }
}

impl MessageStream for StdioStream {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        self.0.recv().await
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
