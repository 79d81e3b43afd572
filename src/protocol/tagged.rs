//! `resultType`, which tags a result `complete`, `input_required` or
//! `task`.
//!
//! A result is read in two steps: [`ResultType::of`] reads the tag
//! (wherever it is in the object), and then the result is decoded as the
//! type the tag names. Absent or `null` is `complete`; an unknown value
//! and a second `resultType` are errors.

use std::borrow::Cow;

use serde::Deserialize;

use super::decode_error::DecodeError;

/// The kind of a result, from its `resultType` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub enum ResultType {
    /// A final result (also when `resultType` is absent, as legacy servers send).
    Complete,
    /// The server needs input first (MRTR).
    InputRequired,
    /// The call became a task (Tasks extension).
    Task,
}

#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
impl ResultType {
    /// Reads the `resultType` of a JSON result object.
    ///
    /// # Errors
    ///
    /// Fails on invalid JSON and on a `resultType` this crate does not know.
    pub(crate) fn of(json: &str) -> Result<ResultType, DecodeError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Probe<'a> {
            #[serde(default, borrow)]
            result_type: Option<Cow<'a, str>>,
        }
        let probe: Probe<'_> = serde_json::from_str(json).map_err(DecodeError::json)?;
        match probe.result_type.as_deref() {
            None | Some("complete") => Ok(ResultType::Complete),
            Some("input_required") => Ok(ResultType::InputRequired),
            Some("task") => Ok(ResultType::Task),
            Some(other) => Err(DecodeError::invalid(format!(
                "unknown resultType {other:?}"
            ))),
        }
    }
}
