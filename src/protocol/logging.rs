//! Server logging: `notifications/message` and `logging/setLevel`.
//!
//! A server sends log messages to the client as `notifications/message`
//! (`{level, logger?, data}`). In the initialize era the client picks the
//! least severe level it wants with `logging/setLevel`; in 2026-07-28
//! logging is deprecated, and a server emits messages only for a request
//! that asked for them (this client never asks).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The severity of a server log message: the eight syslog levels
/// (RFC 5424), least severe first, so `LogLevel::Warning > LogLevel::Info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LogLevel {
    /// Detailed information for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level's name on the wire (`"debug"`, `"warning"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One log message from the server (the params of `notifications/message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LogMessage {
    /// Its severity.
    pub level: LogLevel,
    /// The name of the server-side logger that emitted it, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value (often a string or an object), as sent.
    /// `null` when the server sent none.
    #[serde(default)]
    pub data: Value,
}

impl LogMessage {
    /// A message at `level` with `data` and no logger name.
    pub fn new(level: LogLevel, data: Value) -> Self {
        LogMessage {
            level,
            logger: None,
            data,
        }
    }

    /// The same message, naming its logger.
    pub fn with_logger(mut self, logger: impl Into<String>) -> Self {
        self.logger = Some(logger.into());
        self
    }
}

/// The params of `logging/setLevel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub(crate) struct SetLevelParams {
    /// The least severe level the server should send.
    pub(crate) level: LogLevel,
}

impl SetLevelParams {
    /// Asks for messages at `level` and above.
    pub(crate) fn new(level: LogLevel) -> Self {
        SetLevelParams { level }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn levels_are_ordered_and_named_as_on_the_wire() {
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Alert < LogLevel::Emergency);
        for level in [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ] {
            assert_eq!(serde_json::to_value(level).unwrap(), json!(level.as_str()));
        }
    }

    #[test]
    fn a_message_decodes_with_or_without_its_optional_fields() {
        let m: LogMessage =
            serde_json::from_value(json!({"level": "notice", "logger": "db", "data": {"rows": 3}}))
                .unwrap();
        assert_eq!(
            m,
            LogMessage::new(LogLevel::Notice, json!({"rows": 3})).with_logger("db")
        );
        let m: LogMessage = serde_json::from_value(json!({"level": "error"})).unwrap();
        assert_eq!((m.logger, m.data), (None, Value::Null));
        assert!(serde_json::from_value::<LogMessage>(json!({"level": "loud"})).is_err());
        assert!(serde_json::from_value::<LogMessage>(json!({"data": "x"})).is_err());
    }
}
