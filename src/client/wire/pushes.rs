//! Listening for task pushes: one client-wide watcher, one stream.
//!
//! A listen request's filter is fixed for its lifetime, so watching a new
//! task means opening a new `subscriptions/listen` with the union of all
//! watched ids. The watcher does that in one background task per client:
//!
//! - registrations that arrive within 10 ms of each other are coalesced into
//!   one new stream (waits keep polling meanwhile, so nothing is delayed);
//! - the old stream stays open until the new one is acknowledged, so no push
//!   falls into the gap, and is then closed (stdio: `notifications/cancelled`);
//! - pushes are demultiplexed by `taskId` to the handles waiting on them,
//!   whatever stream they came on: pushes sent on the request's own stream
//!   without a subscription id (as some servers send them), or on a stream
//!   already replaced, are applied too, also for handles whose task the
//!   stream did not accept (they poll, and a push saves them a read);
//! - a finished or dropped handle unregisters; with nothing left to watch,
//!   the stream is closed.
//!
//! Cost model: at most two listen streams are open at once (the current one
//! and its successor while it is being acknowledged), whatever the number of
//! listening tasks; each batch of new tasks (those registered within 10 ms,
//! or while the previous stream was being acknowledged) costs one
//! `subscriptions/listen` request; each push is parsed once and cloned per handle watching that
//! task. A handle whose queue of pushes is full is told it lagged: the
//! pushes still queued are dropped (they are older than what comes next)
//! and the task is read once, instead of the queue growing. The end of a
//! stream is never lost that way: it is kept in a flag beside the queue.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use crate::client::connection::{Pushes, SubEvent, Subscription, WeakConnection};
use crate::client::wire::Envelope;
use crate::protocol::method;
use crate::protocol::{
    DetailedTask, ListenParams, SubscriptionAcknowledged, SubscriptionFilter, TaskId,
};

/// Pushes that may wait for one handle before it is told it lagged.
const PER_TASK_QUEUE: usize = 16;
/// How long registrations are gathered before a new stream is opened.
const COALESCE: Duration = Duration::from_millis(10);

/// What a watching handle hears.
#[derive(Debug)]
pub(crate) enum Push {
    /// The stream accepted the task: read it once, then rely on pushes.
    Accepted,
    /// The server would not push for this task (or refused to listen): poll.
    Refused,
    /// A full snapshot of the task.
    Snapshot(Box<DetailedTask>),
    /// Pushes were dropped: read the task once.
    Lagged,
    /// The stream ended: poll.
    Ended,
}

/// What a full queue cannot carry, kept beside it.
#[derive(Debug, Default)]
struct Flags {
    /// Pushes were dropped: read the task once.
    lagged: AtomicBool,
    /// The stream ended or refused the task: poll.
    stopped: AtomicBool,
}

enum Cmd {
    Register {
        key: u64,
        id: TaskId,
        tx: mpsc::Sender<Push>,
        flags: Arc<Flags>,
    },
    Unregister {
        key: u64,
    },
}

/// The client-wide watcher: a handle on its background task.
pub(crate) struct Watcher {
    cmds: mpsc::UnboundedSender<Cmd>,
    next_key: AtomicU64,
}

/// One handle's registration. Dropping it unregisters.
pub(crate) struct Watch {
    key: u64,
    rx: mpsc::Receiver<Push>,
    flags: Arc<Flags>,
    cmds: mpsc::UnboundedSender<Cmd>,
    /// The stream accepted the task.
    confirmed: bool,
}

/// What the watcher needs of the client: the connection (held weakly, so
/// the watcher never keeps it open) and the envelope of its requests.
struct Link {
    conn: WeakConnection,
    envelope: Arc<Envelope>,
}

impl Watcher {
    /// Starts the watcher task for a connection (held weakly: the watcher
    /// never keeps it open), taking the pushes no subscription claims.
    pub(crate) fn start(
        conn: WeakConnection,
        envelope: Arc<Envelope>,
        pushes: Pushes,
        ack_timeout: Duration,
    ) -> Watcher {
        let (cmds, rx) = mpsc::unbounded_channel();
        let link = Link { conn, envelope };
        tokio::spawn(run(link, rx, pushes, ack_timeout));
        Watcher {
            cmds,
            next_key: AtomicU64::new(1),
        }
    }

    /// Watches `id`; the answer (`Accepted` or `Refused`) comes on the watch.
    pub(crate) fn register(&self, id: TaskId) -> Watch {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(PER_TASK_QUEUE);
        let flags = Arc::new(Flags::default());
        let _ = self.cmds.send(Cmd::Register {
            key,
            id,
            tx,
            flags: flags.clone(),
        });
        Watch {
            key,
            rx,
            flags,
            cmds: self.cmds.clone(),
            confirmed: false,
        }
    }
}

impl Watch {
    /// A registration fed by someone other than the watcher (a 2025-11-25
    /// session's `notifications/tasks/status`): never confirmed, so the
    /// handle keeps polling and a push only makes it read sooner.
    pub(crate) fn detached(rx: mpsc::Receiver<Push>) -> Watch {
        let (cmds, _) = mpsc::unbounded_channel();
        Watch {
            key: 0,
            rx,
            flags: Arc::new(Flags::default()),
            cmds,
            confirmed: false,
        }
    }

    /// Whether the stream accepted the task, so pushes keep it current.
    pub(crate) fn confirmed(&self) -> bool {
        self.confirmed
    }

    /// The stream accepted the task.
    pub(crate) fn confirm(&mut self) {
        self.confirmed = true;
    }

    /// The stream did not accept the task (pushes may still come).
    pub(crate) fn unconfirm(&mut self) {
        self.confirmed = false;
    }

    /// The next push; `Ended` when the watcher is gone.
    pub(crate) async fn recv(&mut self) -> Push {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next push: the flags are looked at on every poll, so
    /// that a stop or an overflow is seen however the queue stands.
    fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Push> {
        if self.flags.stopped.swap(false, Ordering::AcqRel) {
            self.drain();
            return std::task::Poll::Ready(Push::Ended);
        }
        if self.flags.lagged.swap(false, Ordering::AcqRel) {
            return std::task::Poll::Ready(self.drain().unwrap_or(Push::Lagged));
        }
        self.rx
            .poll_recv(cx)
            .map(|push| push.unwrap_or(Push::Ended))
    }

    /// Drops what is queued: after an overflow the queue holds snapshots
    /// older than the read that follows. Returns the last word on the
    /// stream (`Refused` or `Ended`) if one was queued after the last
    /// `Accepted`; an `Accepted` confirms the watch.
    fn drain(&mut self) -> Option<Push> {
        let mut last = None;
        while let Ok(push) = self.rx.try_recv() {
            match push {
                Push::Snapshot(_) | Push::Lagged => {}
                Push::Accepted => {
                    self.confirmed = true;
                    last = None;
                }
                Push::Refused | Push::Ended => last = Some(push),
            }
        }
        last
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.cmds.send(Cmd::Unregister { key: self.key });
    }
}

struct Entry {
    id: TaskId,
    tx: mpsc::Sender<Push>,
    flags: Arc<Flags>,
    confirmed: bool,
}

impl Entry {
    /// Queues a push; when the queue is full, sets the flag that stands for it.
    fn send(&self, push: Push) {
        if let Err(mpsc::error::TrySendError::Full(push)) = self.tx.try_send(push) {
            let flag = match push {
                Push::Refused | Push::Ended => &self.flags.stopped,
                Push::Accepted | Push::Snapshot(_) | Push::Lagged => &self.flags.lagged,
            };
            flag.store(true, Ordering::Release);
        }
    }
}

struct Stream {
    sub: Subscription,
    accepted: BTreeSet<TaskId>,
}

#[derive(Default)]
struct State {
    entries: HashMap<u64, Entry>,
    current: Option<Stream>,
}

impl State {
    /// Applies a command; `true` when a new stream is needed.
    fn apply(&mut self, cmd: Cmd) -> bool {
        match cmd {
            Cmd::Register { key, id, tx, flags } => {
                let covered = self
                    .current
                    .as_ref()
                    .is_some_and(|s| s.accepted.contains(&id));
                if covered {
                    let _ = tx.try_send(Push::Accepted);
                }
                self.entries.insert(
                    key,
                    Entry {
                        id,
                        tx,
                        flags,
                        confirmed: covered,
                    },
                );
                !covered
            }
            Cmd::Unregister { key } => {
                self.entries.remove(&key);
                false
            }
        }
    }

    /// Hands a push to every handle watching its task.
    fn on_push(&self, params: Option<Box<serde_json::value::RawValue>>) {
        let Some(params) = params else { return };
        let task: DetailedTask = match serde_json::from_str(params.get()) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("ignoring a malformed notifications/tasks: {e}");
                return;
            }
        };
        let mut targets = self
            .entries
            .values()
            .filter(|e| e.id == task.task_id)
            .peekable();
        if targets.peek().is_none() {
            tracing::debug!(task = ?task.task_id, "a push for a task nobody watches");
        }
        for entry in targets {
            entry.send(Push::Snapshot(Box::new(task.clone())));
        }
    }

    /// A 2025-11-25 `notifications/tasks/status` (a status without its
    /// payload), which some servers send on either era: every handle
    /// watching the task reads it at once.
    fn on_status(&self, params: Option<Box<serde_json::value::RawValue>>) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Status {
            task_id: TaskId,
        }
        let Some(status) = params.and_then(|p| serde_json::from_str::<Status>(p.get()).ok()) else {
            tracing::debug!("ignoring a malformed notifications/tasks/status");
            return;
        };
        for entry in self.entries.values().filter(|e| e.id == status.task_id) {
            entry.send(Push::Lagged);
        }
    }

    /// A push that no subscription claimed (see [`Connection::task_pushes`](crate::client::connection::Connection::task_pushes)).
    fn on_stray(&mut self, event: Option<SubEvent>) -> bool {
        match event {
            Some(SubEvent::Notification { method, params })
                if method == method::NOTIFICATIONS_TASKS_STATUS =>
            {
                self.on_status(params);
            }
            Some(SubEvent::Notification { params, .. }) => self.on_push(params),
            Some(SubEvent::Lagged) => {
                for entry in self.entries.values() {
                    entry.flags.lagged.store(true, Ordering::Release);
                }
            }
            None => return false,
        }
        true
    }

    fn on_event(&mut self, event: Option<SubEvent>) {
        match event {
            Some(SubEvent::Notification { method, params })
                if method == method::NOTIFICATIONS_TASKS =>
            {
                self.on_push(params);
            }
            Some(SubEvent::Notification { method, params })
                if method == method::NOTIFICATIONS_TASKS_STATUS =>
            {
                self.on_status(params);
            }
            Some(SubEvent::Notification { method, .. }) => {
                tracing::debug!(%method, "ignoring a notification on the listen stream");
            }
            Some(SubEvent::Lagged) => {
                for entry in self.entries.values().filter(|e| e.confirmed) {
                    entry.flags.lagged.store(true, Ordering::Release);
                }
            }
            None => {
                // The server ended the stream: everyone it served polls.
                self.current = None;
                for entry in self.entries.values_mut().filter(|e| e.confirmed) {
                    entry.confirmed = false;
                    entry.send(Push::Ended);
                }
            }
        }
    }

    fn ids(&self) -> Vec<TaskId> {
        let set: BTreeSet<TaskId> = self.entries.values().map(|e| e.id.clone()).collect();
        set.into_iter().collect()
    }
}

async fn next_event(current: &mut Option<Stream>) -> Option<SubEvent> {
    match current {
        Some(s) => s.sub.next().await,
        None => std::future::pending().await,
    }
}

async fn next_stray(pushes: &mut Option<Pushes>) -> Option<SubEvent> {
    match pushes {
        Some(p) => p.next().await,
        None => std::future::pending().await,
    }
}

async fn run(
    link: Link,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    pushes: Pushes,
    ack_timeout: Duration,
) {
    let mut state = State::default();
    let mut pushes = Some(pushes);
    loop {
        let mut reopen = false;
        tokio::select! {
            cmd = cmds.recv() => match cmd {
                Some(cmd) => reopen = state.apply(cmd),
                None => return,
            },
            event = next_event(&mut state.current) => state.on_event(event),
            event = next_stray(&mut pushes) => if !state.on_stray(event) {
                pushes = None;
            },
        }
        if reopen {
            // Coalesce the registrations of a short window into one stream,
            // serving the current stream meanwhile.
            let until = Instant::now() + COALESCE;
            loop {
                tokio::select! {
                    cmd = cmds.recv() => match cmd {
                        Some(cmd) => {
                            state.apply(cmd);
                        }
                        None => return,
                    },
                    event = next_event(&mut state.current) => state.on_event(event),
                    event = next_stray(&mut pushes) => if !state.on_stray(event) {
                        pushes = None;
                    },
                    () = sleep_until(until) => break,
                }
            }
            if !open(&link, &mut state, &mut pushes, ack_timeout).await {
                return;
            }
        }
        if state.entries.is_empty() {
            state.current = None;
        }
    }
}

/// Opens a stream for every watched id, keeps serving the old one until
/// the new one is acknowledged, then switches. `false` once the connection
/// is gone (every client dropped).
async fn open(
    link: &Link,
    state: &mut State,
    pushes: &mut Option<Pushes>,
    ack_timeout: Duration,
) -> bool {
    let ids = state.ids();
    if ids.is_empty() {
        return true;
    }
    let Some(conn) = link.conn.upgrade() else {
        return false;
    };
    let opening = async {
        let params = ListenParams {
            notifications: SubscriptionFilter {
                task_ids: Some(ids),
                ..SubscriptionFilter::default()
            },
        };
        let version = link.envelope.protocol_version();
        let body = link
            .envelope
            .wrap(method::SUBSCRIPTIONS_LISTEN, &params, &version);
        let mut sub = conn
            .subscribe(method::SUBSCRIPTIONS_LISTEN, &body)
            .await
            .ok()?;
        let ack = tokio::time::timeout(ack_timeout, sub.next()).await.ok()??;
        match ack {
            SubEvent::Notification { method, params }
                if method == method::NOTIFICATIONS_ACKNOWLEDGED =>
            {
                let ack: SubscriptionAcknowledged = params
                    .and_then(|p| serde_json::from_str(p.get()).ok())
                    .unwrap_or_default();
                let accepted = ack
                    .notifications
                    .task_ids
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                Some(Stream { sub, accepted })
            }
            _ => None,
        }
    };
    tokio::pin!(opening);
    let opened = loop {
        tokio::select! {
            opened = &mut opening => break opened,
            event = next_event(&mut state.current) => state.on_event(event),
            event = next_stray(pushes) => if !state.on_stray(event) {
                *pushes = None;
            },
        }
    };
    match opened {
        Some(stream) => {
            for entry in state.entries.values_mut() {
                if stream.accepted.contains(&entry.id) {
                    if !entry.confirmed {
                        entry.confirmed = true;
                        entry.send(Push::Accepted);
                    }
                } else {
                    entry.confirmed = false;
                    entry.send(Push::Refused);
                }
            }
            // Dropping the old stream closes it on the server.
            state.current = Some(stream);
        }
        None => {
            for entry in state.entries.values().filter(|e| !e.confirmed) {
                entry.send(Push::Refused);
            }
        }
    }
    true
}
