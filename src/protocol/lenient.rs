//! Tolerant decoders for fields that real servers fill in inconsistently.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The one rule for millisecond counts, integers or not: a finite
/// non-negative number is rounded up to a whole millisecond (`1.5` → 2,
/// `1e12` → 1000000000000) and saturates at `u64::MAX`; negative numbers,
/// non-numbers and `null` have no value. Bounds (the client's floor and
/// ceiling on intervals) are applied where the value is used.
fn millis(v: Option<Value>) -> Option<u64> {
    let Some(Value::Number(n)) = v else {
        return None;
    };
    if let Some(whole) = n.as_u64() {
        return Some(whole);
    }
    let f = n.as_f64()?;
    if !f.is_finite() || f < 0.0 {
        return None;
    }
    // `as` saturates: anything past u64::MAX becomes u64::MAX.
    Some(f.ceil() as u64)
}

/// A positive millisecond count (see [`millis`] for the rounding). `null`,
/// zero, negative numbers and non-numbers read as `None` (the field is
/// treated as absent).
pub(crate) fn positive_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(millis(Option::<Value>::deserialize(d)?).filter(|v| *v > 0))
}

/// A non-negative millisecond count where `null` means "unlimited" (see
/// [`millis`] for the rounding). Negative numbers and non-numbers read as
/// `None`.
pub(crate) fn ttl_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(millis(Option::<Value>::deserialize(d)?))
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
        assert_eq!(read(r#"{"p":0.0,"t":null}"#), (None, None));
        assert_eq!(read(r#"{"p":"10","t":"x"}"#), (None, None));
        assert_eq!(read(r#"{"p":250,"t":60000}"#), (Some(250), Some(60000)));
        assert_eq!(read(r#"{}"#), (None, None));
    }

    #[test]
    fn fractions_round_up_and_huge_values_saturate() {
        assert_eq!(read(r#"{"p":1.5,"t":0.2}"#), (Some(2), Some(1)));
        assert_eq!(read(r#"{"p":0.001,"t":-0.5}"#), (Some(1), None));
        assert_eq!(
            read(r#"{"p":1e12,"t":1e12}"#),
            (Some(1_000_000_000_000), Some(1_000_000_000_000))
        );
        assert_eq!(
            read(r#"{"p":18446744073709551615,"t":1e300}"#),
            (Some(u64::MAX), Some(u64::MAX))
        );
        // Past u64 as an integer literal: serde_json reads it as a float.
        assert_eq!(read(r#"{"p":99999999999999999999999}"#).0, Some(u64::MAX));
    }
}
