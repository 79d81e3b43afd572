//! `mcp-tasks man`: the manual page (roff), from the same command line as
//! the help.

use anyhow::Context;

use crate::{exit, stdout};

/// Prints the manual page of `command` on stdout.
pub fn run(command: clap::Command) -> anyhow::Result<u8> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut page)
        .context("cannot render the manual page")?;
    stdout::bytes(&page);
    Ok(exit::OK)
}
