//! The states a task handle can be in.
//
// Design notes: what the types do not guard.
// - A `Task<Pending>` may already be finished on the server; the type says
//   what the client last observed, not what is true now.
// - Cancellation is cooperative and eventually consistent: after `cancel()`
//   the task may still complete or fail.
// - `tasks/update` is eventually consistent too: right after an answer the
//   server may still report the same `input_required` snapshot. The ledger
//   hides answered keys, so such a task reads as `Pending`.

use super::observed::Observed;
use crate::protocol::InputRequests;
use crate::task::Outcome;

mod sealed {
    /// What each state carries into a wait.
    pub trait Sealed {
        fn into_observed(self) -> super::Observed;
    }
}

/// A state of a [`Task`](crate::Task) handle. Sealed: the three states
/// below are all there is.
pub trait State: sealed::Sealed + Send + Sync + 'static {}

/// The task is working (or waiting for the server to apply answers).
#[derive(Debug)]
#[non_exhaustive]
pub struct Pending {}

/// The task waits for answers to these input requests (the unanswered ones).
#[derive(Debug)]
pub struct InputRequired {
    pub(crate) requests: InputRequests,
}

/// The task has ended; the outcome says how.
#[derive(Debug)]
pub struct Finished {
    pub(crate) outcome: Outcome,
}

/// The states in which a task can still be acted on (`Pending`,
/// `InputRequired`): they have an id, a reference, and `cancel`. A
/// `Task<Finished>` has none of these, so the compiler explains a misuse as
/// "the trait bound `Finished: Cancellable` is not satisfied".
pub trait Cancellable: State {}

impl Cancellable for Pending {}
impl Cancellable for InputRequired {}

impl sealed::Sealed for Pending {
    fn into_observed(self) -> Observed {
        Observed::Pending
    }
}

impl sealed::Sealed for InputRequired {
    fn into_observed(self) -> Observed {
        Observed::InputRequired(self.requests)
    }
}
impl sealed::Sealed for Finished {
    fn into_observed(self) -> Observed {
        Observed::Finished(Box::new(self.outcome))
    }
}
impl State for Pending {}
impl State for InputRequired {}
impl State for Finished {}
