//! `notifications/progress`: how far a request has come, as the server
//! reports it for a request that carried a `progressToken`.

use std::fmt;

use serde::Deserialize;

use super::RequestId;

/// One progress report for a request: how far it is, out of how much (when
/// the server knows), and what it is doing.
///
/// Read from a `notifications/progress` the server sends about a request
/// the client asked progress for (see
/// [`TaskBuilder::on_progress`](crate::TaskBuilder::on_progress)). Servers
/// report in their own units: `progress` only ever grows, and `total`,
/// when given, is where it ends.
///
/// ```
/// use mcp_tasks::protocol::Progress;
///
/// let p = Progress::new(2.0, Some(5.0), Some("step 2 of 5".into()));
/// assert_eq!(p.fraction(), Some(0.4));
/// assert_eq!(p.to_string(), "2/5: step 2 of 5");
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Progress {
    /// How far the request has come.
    pub progress: f64,
    /// Where it ends, when the server knows.
    #[serde(default)]
    pub total: Option<f64>,
    /// What it is doing now (2025-03-26 and later).
    #[serde(default)]
    pub message: Option<String>,
}

impl Progress {
    /// A report, as a server would send it (for tests and examples).
    pub fn new(progress: f64, total: Option<f64>, message: Option<String>) -> Self {
        Progress {
            progress,
            total,
            message,
        }
    }

    /// `progress / total`, clamped to `0.0..=1.0`; `None` without a
    /// positive total.
    pub fn fraction(&self) -> Option<f64> {
        let total = self.total.filter(|t| *t > 0.0 && t.is_finite())?;
        Some((self.progress / total).clamp(0.0, 1.0))
    }
}

impl fmt::Display for Progress {
    /// `progress[/total][: message]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.progress)?;
        if let Some(total) = self.total {
            write!(f, "/{total}")?;
        }
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        Ok(())
    }
}

/// The params of a `notifications/progress`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProgressParams {
    #[allow(dead_code)] // routing reads the token before this is decoded
    pub(crate) progress_token: RequestId,
    #[serde(flatten)]
    pub(crate) progress: Progress,
}

impl ProgressParams {
    /// The report in `params`; `None` when it is malformed (no number).
    pub(crate) fn decode(params: &str) -> Option<Progress> {
        let p: ProgressParams = serde_json::from_str(params).ok()?;
        p.progress.progress.is_finite().then_some(p.progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_revision_s_shape_and_skips_malformed_ones() {
        let p = ProgressParams::decode(r#"{"progressToken": 7, "progress": 1, "total": 3}"#);
        assert_eq!(p, Some(Progress::new(1.0, Some(3.0), None)));
        let p = ProgressParams::decode(
            r#"{"progressToken": "t", "progress": 0.5, "message": "half", "_meta": {}}"#,
        );
        assert_eq!(p, Some(Progress::new(0.5, None, Some("half".into()))));
        assert_eq!(ProgressParams::decode(r#"{"progressToken": 7}"#), None);
        assert_eq!(
            ProgressParams::decode(r#"{"progressToken": 7, "progress": "1"}"#),
            None
        );
    }

    #[test]
    fn fraction_needs_a_positive_total() {
        assert_eq!(Progress::new(1.0, None, None).fraction(), None);
        assert_eq!(Progress::new(1.0, Some(0.0), None).fraction(), None);
        assert_eq!(Progress::new(9.0, Some(3.0), None).fraction(), Some(1.0));
        assert_eq!(Progress::new(1.0, None, None).to_string(), "1");
    }
}
