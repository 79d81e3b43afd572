//! The task that owns a stdio server's process: it reaps the child, tells
//! both halves of the transport how it ended, and ends it, with the
//! process group it leads, when the connection closes (or, as far as it
//! can, when it is dropped).
//!
//! Closing goes as the MCP specification asks: the stdin is closed (by the
//! sink); the child has [`Close::grace`] to exit; then SIGTERM, and
//! [`Close::terminate`] to end; then SIGKILL. In a group of its own the
//! signals go to the whole group, so that a process the server started
//! (the server behind an `npx` or shell wrapper, holding the wrapper's
//! stdout) does not outlive it; the group is ended even when the child
//! itself exited in time.

use std::io;
use std::time::Duration;

use tokio::process::Child;
use tokio::sync::{oneshot, watch};

/// How long the processes may take to be gone after SIGKILL before
/// closing gives up on them.
const KILL_WAIT: Duration = Duration::from_secs(1);
/// How often a group is looked at while it is being ended.
#[cfg(unix)]
const GROUP_POLL: Duration = Duration::from_millis(20);
/// How often a group whose leader has exited is looked at while the
/// connection lives: once none of its processes is left, its id may be
/// taken by another group, and it is never signalled again.
#[cfg(unix)]
const GROUP_WATCH: Duration = Duration::from_secs(1);

/// What the sink's `close` asks of the task that owns the child (its
/// stdin is closed already).
#[derive(Debug)]
pub(super) struct Close {
    /// How long the child has to exit of itself.
    pub(super) grace: Duration,
    /// How long it (and its group) has to end after SIGTERM.
    pub(super) terminate: Duration,
    /// Told what closing had to do.
    pub(super) done: oneshot::Sender<io::Result<Ended>>,
}

/// What closing had to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// The child, and every process of its group, exited of themselves.
    Exited,
    /// SIGTERM ended what was left.
    Terminated,
    /// SIGKILL ended what SIGTERM did not (or, where there is no SIGTERM,
    /// what was left after the grace).
    Killed,
}

/// The process group a child leads (on Unix, when it was started in a
/// group of its own). Dropping it kills the group, unless it is known to
/// be gone.
#[derive(Debug)]
pub(super) struct Group {
    #[cfg(unix)]
    id: nix::unistd::Pid,
    /// Set once no process of the group is left: its id may be reused.
    #[cfg(unix)]
    gone: bool,
}

impl Group {
    /// The group led by the process `pid`.
    #[cfg(unix)]
    pub(super) fn led_by(pid: u32) -> Option<Group> {
        let id = i32::try_from(pid).ok()?;
        Some(Group {
            id: nix::unistd::Pid::from_raw(id),
            gone: false,
        })
    }

    /// Sends `signal` to every process of the group.
    #[cfg(unix)]
    fn signal(&mut self, signal: nix::sys::signal::Signal) {
        if !self.gone && nix::sys::signal::killpg(self.id, signal) == Err(nix::errno::Errno::ESRCH)
        {
            self.gone = true;
        }
    }

    /// Whether a process of the group is left (a zombie included: it
    /// holds the group's id until it is reaped).
    #[cfg(unix)]
    fn exists(&mut self) -> bool {
        if !self.gone && nix::sys::signal::killpg(self.id, None) == Err(nix::errno::Errno::ESRCH) {
            self.gone = true;
        }
        !self.gone
    }

    /// Whether a process of the group still runs. On Linux a zombie does
    /// not count: it has ended and only waits to be reaped, by a parent
    /// that may never do it (a container's first process often reaps
    /// nothing).
    #[cfg(unix)]
    async fn runs(&mut self) -> bool {
        if !self.exists() {
            return false;
        }
        #[cfg(target_os = "linux")]
        {
            let id = self.id.as_raw();
            tokio::task::spawn_blocking(move || linux::runs_in_group(id))
                .await
                .unwrap_or(true)
        }
        #[cfg(not(target_os = "linux"))]
        true
    }
}

#[cfg(unix)]
impl Drop for Group {
    fn drop(&mut self) {
        self.signal(nix::sys::signal::Signal::SIGKILL);
    }
}

#[cfg(target_os = "linux")]
mod linux {
    /// Whether a process of group `id` is running (not a zombie), read
    /// from `/proc`; `true` when `/proc` cannot be read.
    pub(super) fn runs_in_group(id: i32) -> bool {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return true;
        };
        let id = id.to_string();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str() else { continue };
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue; // gone meanwhile
            };
            // `pid (comm) state ppid pgrp …`; the name may hold anything.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let mut fields = rest.split_ascii_whitespace();
            let (state, pgrp) = (fields.next(), fields.nth(1));
            if pgrp == Some(id.as_str()) && state != Some("Z") && state != Some("X") {
                return true;
            }
        }
        false
    }
}

/// Publishes how the child ended, the first time it is known.
fn report(status: &watch::Sender<Option<String>>, ended: io::Result<std::process::ExitStatus>) {
    let text = match ended {
        Ok(status) => status.to_string(),
        Err(e) => format!("exit status unknown: {e}"),
    };
    status.send_if_modified(|known| {
        let first = known.is_none();
        if first {
            *known = Some(text);
        }
        first
    });
}

/// Owns the child until the connection is closed: reaps it when it exits,
/// publishes its status, and ends it and its group on `close`. A sink
/// dropped without closing (the runtime stopping, say) gets them killed
/// at once, and so does dropping this task (with `kill_on_drop` and
/// [`Group`]'s drop).
pub(super) async fn own(
    mut child: Child,
    mut group: Option<Group>,
    status: watch::Sender<Option<String>>,
    mut close: oneshot::Receiver<Close>,
) {
    let order = tokio::select! {
        ended = child.wait() => {
            report(&status, ended);
            closed(&mut group, &mut close).await
        }
        order = &mut close => order.ok(),
    };
    let Some(order) = order else {
        let _ = child.start_kill();
        drop(group); // killed
        report(&status, child.wait().await);
        return;
    };
    let ended = end(&mut child, &mut group, &order, &status).await;
    let _ = order.done.send(ended);
}

/// Waits for the order to close (or the sink's drop) once the child has
/// exited, watching its group meanwhile so as never to signal an id that
/// is no longer its.
async fn closed(group: &mut Option<Group>, close: &mut oneshot::Receiver<Close>) -> Option<Close> {
    #[cfg(unix)]
    while group.as_mut().is_some_and(Group::exists) {
        tokio::select! {
            order = &mut *close => return order.ok(),
            () = tokio::time::sleep(GROUP_WATCH) => {}
        }
    }
    #[cfg(not(unix))]
    let _ = group;
    close.await.ok()
}

/// Ends the child and its group once its stdin is closed: the grace, then
/// SIGTERM, then SIGKILL (see the module's documentation).
async fn end(
    child: &mut Child,
    group: &mut Option<Group>,
    order: &Close,
    status: &watch::Sender<Option<String>>,
) -> io::Result<Ended> {
    let exited = tokio::time::timeout(order.grace, child.wait()).await;
    let exited_in_time = exited.is_ok();
    if let Ok(ended) = exited {
        report(status, ended);
        if !group_runs(group).await {
            return Ok(Ended::Exited);
        }
    }
    #[cfg(unix)]
    {
        signal(child, group, nix::sys::signal::Signal::SIGTERM);
        let ended = tokio::time::timeout(order.terminate, gone(child, group, status));
        if ended.await.is_ok() {
            return Ok(Ended::Terminated);
        }
        signal(child, group, nix::sys::signal::Signal::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = order.terminate;
    let _ = child.start_kill();
    match tokio::time::timeout(KILL_WAIT, gone(child, group, status)).await {
        Ok(()) => Ok(Ended::Killed),
        // What is left of the group cannot be helped (a process stuck in
        // the kernel, say); the server itself is gone.
        Err(_) if exited_in_time || status.borrow().is_some() => Ok(Ended::Killed),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the server was killed but had not ended {KILL_WAIT:?} later"),
        )),
    }
}

/// Sends `signal` to the group, and to the child itself (which may have
/// left the group), while it has not been reaped.
#[cfg(unix)]
fn signal(child: &Child, group: &mut Option<Group>, sig: nix::sys::signal::Signal) {
    if let Some(group) = group {
        group.signal(sig);
    }
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
    }
}

/// Whether a process of the group still runs.
async fn group_runs(group: &mut Option<Group>) -> bool {
    #[cfg(unix)]
    if let Some(group) = group {
        return group.runs().await;
    }
    #[cfg(not(unix))]
    let _ = group;
    false
}

/// Resolves once the child has exited and no process of its group runs.
async fn gone(
    child: &mut Child,
    group: &mut Option<Group>,
    status: &watch::Sender<Option<String>>,
) {
    report(status, child.wait().await);
    while group_runs(group).await {
        #[cfg(unix)]
        tokio::time::sleep(GROUP_POLL).await;
    }
}
