//! A string that is a secret: a token, a client secret. It never shows in
//! `Debug` output, has no `Display`, and is written out only by serde (for
//! a token store) and where the protocol sends it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A secret string (an access or refresh token, a client secret).
///
/// `Debug` prints `<redacted>`; there is no `Display`. Serde reads and
/// writes the value itself, so that a [`TokenStore`](super::TokenStore)
/// can keep it: keep what it writes as secret as the tokens.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself: only to send it where it belongs.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(s.expose(), "hunter2");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"hunter2\"");
    }
}
