//! JSON-RPC batches (a JSON array of messages), which 2025-03-26 allowed
//! and later versions dropped: every transport that may receive one splits
//! it here, so stdio and HTTP read a batch the same way.

use serde_json::value::RawValue;

/// The elements of a batch, when `text` is one (a non-empty JSON array),
/// each as its own JSON text, in order; `None` for anything else (a single
/// message, an empty array, text that is not JSON).
#[cfg_attr(not(any(feature = "stdio", feature = "http")), allow(dead_code))]
pub(crate) fn batch_items(text: &str) -> Option<Vec<String>> {
    if text.trim_start().starts_with('[')
        && let Ok(items) = serde_json::from_str::<Vec<Box<RawValue>>>(text)
        && !items.is_empty()
    {
        return Some(items.into_iter().map(|m| m.get().to_owned()).collect());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_non_empty_array_is_a_batch() {
        assert_eq!(
            batch_items(r#" [{"a":1}, {"b":[2]}]"#),
            Some(vec![r#"{"a":1}"#.to_owned(), r#"{"b":[2]}"#.to_owned()])
        );
        assert_eq!(batch_items("[]"), None);
        assert_eq!(batch_items(r#"{"a":1}"#), None);
        assert_eq!(batch_items("[not json"), None);
    }
}
