//! `Observed`: what a handle knows after a read, before it is typed.

use super::Outcome;
use crate::protocol::InputRequests;

/// What a handle knows after a read, before it is typed.
///
/// Nominally `pub` because the sealed supertrait of the states converts
/// into it; the module is private, so nothing outside the crate names it.
#[derive(Debug)]
#[allow(unreachable_pub)]
pub enum Observed {
    Pending,
    InputRequired(InputRequests),
    Finished(Box<Outcome>),
}
