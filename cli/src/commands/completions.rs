//! `mcp-tasks completions SHELL`: a shell's completion script, from the
//! same command line as the help.

use crate::{exit, stdout};

/// Prints the completion script of `shell` for `command` on stdout.
pub fn run(shell: clap_complete::Shell, mut command: clap::Command) -> anyhow::Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "mcp-tasks", &mut script);
    stdout::bytes(&script);
    Ok(exit::OK)
}
