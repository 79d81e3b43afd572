//! The command's output on stdout. A reader that goes away
//! (`mcp-tasks tools | head -1`) ends the command at once and quietly,
//! as a closed pipe ends any Unix tool: no message, no panic, exit status
//! [`exit::CLOSED_PIPE`].

use std::fmt::Display;
use std::io::{ErrorKind, Write};

use crate::exit;

/// Writes `text` and a newline to stdout and flushes it, so that a
/// program reading the pipe gets each line as it is made.
///
/// When stdout is a closed pipe the process exits at once with
/// [`exit::CLOSED_PIPE`], printing nothing: a task the command followed
/// runs on (a child server sees its stdin close and ends). Any other
/// write error is said on stderr, and ends the process with
/// [`exit::USAGE`].
pub fn line(text: impl Display) {
    let mut out = std::io::stdout().lock();
    let written = writeln!(out, "{text}").and_then(|()| out.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(exit::CLOSED_PIPE.into()),
        Err(e) => {
            eprintln!("mcp-tasks: cannot write the output: {e}");
            std::process::exit(exit::USAGE.into());
        }
    }
}

/// Writes `bytes` (a generated script or page) to stdout, as [`line`](fn@line)
/// does, without adding a newline.
pub fn bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(exit::CLOSED_PIPE.into()),
        Err(e) => {
            eprintln!("mcp-tasks: cannot write the output: {e}");
            std::process::exit(exit::USAGE.into());
        }
    }
}
