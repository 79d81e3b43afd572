//! Why a message or result could not be decoded.

use std::fmt;

/// Why a message or result could not be decoded.
#[derive(Debug)]
pub(crate) struct DecodeError {
    inner: DecodeInner,
}

#[derive(Debug)]
enum DecodeInner {
    Json(serde_json::Error),
    Invalid(String),
}

impl DecodeError {
    pub(crate) fn json(e: serde_json::Error) -> Self {
        DecodeError {
            inner: DecodeInner::Json(e),
        }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        DecodeError {
            inner: DecodeInner::Invalid(msg.into()),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            // serde_json's text names what was wrong: the field, what was
            // expected and what came.
            DecodeInner::Json(e) if e.is_syntax() || e.is_eof() => write!(f, "invalid JSON: {e}"),
            DecodeInner::Json(e) => write!(f, "unexpected content: {e}"),
            DecodeInner::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.inner {
            DecodeInner::Json(e) => Some(e),
            DecodeInner::Invalid(_) => None,
        }
    }
}
