//! Decoding the result of a method that has one kind of result.

use std::fmt;

use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::protocol::tagged::decode_tagged;
use crate::protocol::{DecodeError, ResultType};

/// Decodes the result of a method that has only one kind of result
/// (`server/discover`, `tools/list`): `resultType` must be `complete` or
/// absent. Only `tools/call` may become a task, and only `tools/call`,
/// `prompts/get` and `resources/read` may ask for input.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    raw: &RawValue,
    method: &'static str,
) -> Result<T> {
    let malformed =
        |e: &dyn fmt::Display| Error::protocol(format!("malformed {method} result: {e}"));
    let mut misplaced = None;
    decode_tagged(raw.get(), |kind| match kind {
        ResultType::Complete => Ok(()),
        other => {
            misplaced = Some(other);
            Err(DecodeError::invalid("misplaced resultType"))
        }
    })
    .map_err(|e| match misplaced {
        Some(other) => Error::protocol(format!(
            "{method} answered with resultType {other:?}, which it cannot have"
        ))
        .with_method(method),
        None => malformed(&e).with_method(method),
    })
}
