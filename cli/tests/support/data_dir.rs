//! The CLI run against a data folder of a test's own, without a terminal:
//! shared by the tests of the local task list.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

#[path = "wait.rs"]
mod wait;
pub use wait::wait_within;

/// The CLI under test.
pub const CLI: &str = env!("CARGO_BIN_EXE_mcp-tasks");

/// The bound on each command.
pub const LIMIT: Duration = Duration::from_secs(60);

/// A folder of this test's own, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh folder named after the test binary, `name` and the process.
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "mcp-tasks-cli-{}-{name}-{}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// The data folder the CLI is given: created by the CLI itself.
    pub fn data(&self) -> PathBuf {
        self.0.join("data")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `mcp-tasks ARGS` with `data` as its data folder and no terminal,
/// killed if it runs past `LIMIT`.
pub fn run(data: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(CLI)
        .args(args)
        .env("MCP_TASKS_DATA_DIR", data)
        .env_remove("MCP_BEARER_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcp-tasks");
    // Read both pipes on threads, so that a full pipe never stalls it.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let stderr = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let status = wait_within(&mut child, LIMIT)
        .unwrap_or_else(|| panic!("mcp-tasks {args:?} did not end within {LIMIT:?}"));
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}
