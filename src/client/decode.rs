//! Decoding the result of a method that has one kind of result.

use std::fmt;

use serde_json::value::RawValue;

use crate::error::{Error, Kind, Result};
use crate::protocol::{ResultType, method};

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
    match ResultType::of(raw.get()) {
        Ok(ResultType::Complete) => {}
        Ok(ResultType::InputRequired)
            if method == method::PROMPTS_GET || method == method::RESOURCES_READ =>
        {
            return Err(Error::new(Kind::InputRequired(format!(
                "{method} asked for input in a result, which only a 2026-07-28 session answers"
            )))
            .with_method(method));
        }
        Ok(other) => {
            return Err(Error::protocol(format!(
                "{method} answered with resultType {other:?}, which it cannot have"
            ))
            .with_method(method));
        }
        Err(e) => return Err(malformed(&e).with_method(method)),
    }
    serde_json::from_str(raw.get()).map_err(|e| malformed(&e).with_method(method))
}
