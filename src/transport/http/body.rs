//! The one bounded way the HTTP transport reads a whole body: JSON
//! replies, error pages, the reply to the `initialize` that renews a lost
//! session, and the documents of authorization all go through
//! [`read_limited`]. Event streams are read event by event by
//! [`Events`](super::sse::Events), which applies the same bound to each
//! event. No body is ever read with reqwest's unbounded `bytes()` or
//! `text()`.

use std::fmt;

use crate::error::describe_reqwest as describe;
use crate::human;

/// Most of a reply's announced length reserved before it arrives.
const RESERVE: usize = 64 * 1024;

/// Why a body was not read.
#[derive(Debug)]
pub(super) enum BodyError {
    /// The body broke off (the cause, without the URL).
    Broke(String),
    /// The body is larger than the bound (the bound).
    TooLarge(usize),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Broke(why) => write!(f, "the reply broke: {why}"),
            BodyError::TooLarge(max) => write!(
                f,
                "the reply is larger than {}, the most the client reads",
                human::bytes(*max)
            ),
        }
    }
}

/// Reads a whole body, refusing it as soon as it passes `max` bytes: what
/// arrived is dropped and the rest is never read.
pub(super) async fn read_limited(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, BodyError> {
    // Sized from `Content-Length` (within bounds: it is only announced) so
    // that the chunks are copied once, with no regrowing.
    let announced = response.content_length().unwrap_or(0);
    if announced > u64::try_from(max).unwrap_or(u64::MAX) {
        return Err(BodyError::TooLarge(max));
    }
    let mut body = Vec::with_capacity(
        usize::try_from(announced)
            .unwrap_or(0)
            .min(max)
            .min(RESERVE),
    );
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| BodyError::Broke(describe(e)))?
    {
        if body.len().saturating_add(chunk.len()) > max {
            return Err(BodyError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
