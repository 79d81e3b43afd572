//! Tolerant decoders for fields that real servers fill in inconsistently.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A positive millisecond count. `null`, zero, negative numbers, fractions
/// and non-numbers all read as `None` (the field is treated as absent).
pub(crate) fn positive_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Number(n)) => n.as_u64().filter(|v| *v > 0),
        _ => None,
    })
}

/// A non-negative millisecond count where `null` means "unlimited".
/// Negative numbers and non-numbers read as `None`.
pub(crate) fn ttl_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T {
        #[serde(default, deserialize_with = "positive_ms")]
        p: Option<u64>,
        #[serde(default, deserialize_with = "ttl_ms")]
        t: Option<u64>,
    }

    fn read(s: &str) -> (Option<u64>, Option<u64>) {
        let t: T = serde_json::from_str(s).unwrap();
        (t.p, t.t)
    }

    #[test]
    fn non_positive_intervals_read_as_absent() {
        assert_eq!(read(r#"{"p":0,"t":0}"#), (None, Some(0)));
        assert_eq!(read(r#"{"p":-5,"t":-1}"#), (None, None));
        assert_eq!(read(r#"{"p":1.5,"t":null}"#), (None, None));
        assert_eq!(read(r#"{"p":"10","t":"x"}"#), (None, None));
        assert_eq!(read(r#"{"p":250,"t":60000}"#), (Some(250), Some(60000)));
        assert_eq!(read(r#"{}"#), (None, None));
    }
}
