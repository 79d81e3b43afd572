//! Ways the test server can misbehave: [`Faults`].

use std::time::Duration;

/// How long a reordered push waits for the next one before it goes out anyway.
pub(super) const REORDER_HOLD: Duration = Duration::from_millis(50);

/// The subscription id that stray pushes carry: no stream ever has it.
pub(super) const STRAY_SUBSCRIPTION: &str = "no-such-subscription";

/// The task id that stray pushes are about: no task ever has it.
pub(super) const STRAY_TASK: &str = "task-0-no-such-task";

/// Ways a [`TestServer`](super::TestServer) breaks the protocol, to test how
/// a client copes with what real servers and networks do.
///
/// Every fault is off by default. Turn some on and hand the set to
/// [`TestServer::faults`](super::TestServer::faults); the server then
/// counts each misdeed in [`TestServer::faults_fired`](super::TestServer::faults_fired),
/// so a test can check that the fault it is about really happened.
///
/// ```
/// use mcp_tasks::testing::{Faults, TestServer};
///
/// let server = TestServer::new().faults(
///     Faults::new()
///         .duplicate_pushes()
///         .never_answer("tools/list"),
/// );
/// assert_eq!(server.faults_fired(), 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use = "a Faults set does nothing until it is handed to TestServer::faults"]
pub struct Faults {
    pub(super) duplicate_pushes: bool,
    pub(super) reorder_pushes: bool,
    pub(super) stray_pushes: bool,
    pub(super) regress_after_terminal: bool,
    pub(super) never_answer: Vec<String>,
    pub(super) task_result_for: Vec<String>,
}

impl Faults {
    /// No faults: the server behaves.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends every `notifications/tasks` twice in a row.
    pub fn duplicate_pushes(mut self) -> Self {
        self.duplicate_pushes = true;
        self
    }

    /// Delivers pushes out of order: each `notifications/tasks` is held
    /// back until the next one on the same stream has gone out (then it
    /// follows it), or for at most 50 ms. A task's final push is never
    /// held, so it overtakes the push before it.
    pub fn reorder_pushes(mut self) -> Self {
        self.reorder_pushes = true;
        self
    }

    /// With every `notifications/tasks`, also sends two false ones saying
    /// a task failed, both about a task that does not exist: one tagged
    /// with a subscription id no stream has, and one on the real stream. A
    /// client that correlates pushes by task id (whatever stream they come
    /// on) ignores both.
    pub fn stray_pushes(mut self) -> Self {
        self.stray_pushes = true;
        self
    }

    /// Lets a task's snapshots go back after it ended: the first read
    /// (`tasks/get`) of an ended task is honest, every later one says the
    /// task is `working` again, and the final push is followed by one more
    /// push saying the same.
    pub fn regress_after_terminal(mut self) -> Self {
        self.regress_after_terminal = true;
        self
    }

    /// Records requests of `method` but never answers them, as a hung
    /// server does: the client's request timeout has to end them. The work
    /// itself is done (a `tools/call` still creates its task). For
    /// `subscriptions/listen` the stream is never acknowledged nor opened.
    pub fn never_answer(mut self, method: impl Into<String>) -> Self {
        self.never_answer.push(method.into());
        self
    }

    /// Answers every request of `method` with a task creation result
    /// (`resultType: "task"`, a task id that does not exist) instead of
    /// its real result. For a method that cannot become a task
    /// (`tools/list`, `server/discover`, `tasks/cancel`, …) a client must
    /// reject the answer.
    pub fn task_result_for(mut self, method: impl Into<String>) -> Self {
        self.task_result_for.push(method.into());
        self
    }

    pub(super) fn never_answers(&self, method: &str) -> bool {
        self.never_answer.iter().any(|m| m == method)
    }

    pub(super) fn gives_task_for(&self, method: &str) -> bool {
        self.task_result_for.iter().any(|m| m == method)
    }
}
