//! The reference `--detach` prints and `status`, `wait` and `cancel`
//! take: the library's `TaskRef` as compact JSON, base64url-encoded
//! behind a `mtr_` prefix, so that it is one shell word.

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_tasks::TaskRef;

const PREFIX: &str = "mtr_";

/// The reference as one word. It holds the task id, which is a secret.
pub fn encode(reference: &TaskRef) -> String {
    let json = serde_json::to_vec(reference).expect("a TaskRef serializes");
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
}

/// Reads a reference: the word [`encode`] makes, or the `TaskRef` JSON.
pub fn decode(text: &str) -> anyhow::Result<TaskRef> {
    let text = text.trim();
    let json = if text.starts_with('{') {
        text.as_bytes().to_vec()
    } else if let Some(body) = text.strip_prefix(PREFIX) {
        URL_SAFE_NO_PAD
            .decode(body)
            .context("the task reference is damaged (not base64url)")?
    } else {
        bail!("{text:?} is not a task reference (one starts with {PREFIX})");
    };
    serde_json::from_slice(&json).map_err(|e| anyhow::anyhow!("the task reference is damaged: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks::protocol::TaskId;

    #[test]
    fn a_reference_comes_back_as_it_went() {
        let r = TaskRef::new(TaskId::new("t-1/x"), Some("demo".into()))
            .with_protocol_version("2026-07-28");
        let word = encode(&r);
        assert!(word.starts_with(PREFIX) && !word.contains(['/', '+', '=', ' ']));
        assert_eq!(decode(&word).unwrap(), r);
        assert_eq!(decode(&serde_json::to_string(&r).unwrap()).unwrap(), r);
        assert!(decode("t-1").is_err());
        assert!(decode("mtr_!!").is_err());
    }
}
