//! `Observed`: what a handle knows after a read, before it is typed.

use super::Outcome;
use crate::protocol::InputRequests;

/// What a handle knows after a read, before it is typed.
#[derive(Debug)]
pub(crate) enum Observed {
    Pending,
    InputRequired(InputRequests),
    Finished(Outcome),
}
