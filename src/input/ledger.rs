//! The answered-keys ledger: each input key is answered at most once per task.

use std::collections::BTreeSet;

use crate::protocol::{InputRequests, InputResponses};

/// The keys of a task's input requests that have been answered.
///
/// Servers re-send an outstanding request in every snapshot until they have
/// applied the answer (`tasks/update` is eventually consistent), so the
/// client remembers what it answered and never answers a key twice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    answered: BTreeSet<String>,
}

impl Ledger {
    /// An empty ledger.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The requests of a snapshot that have not been answered yet.
    pub(crate) fn unanswered(&self, requests: &InputRequests) -> InputRequests {
        requests
            .iter()
            .filter(|(k, _)| !self.answered.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Records the keys of `responses` as answered.
    pub(crate) fn record(&mut self, responses: &InputResponses) {
        self.answered.extend(responses.keys().cloned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ElicitResult, InputRequest};

    #[test]
    fn answered_keys_drop_out() {
        let requests: InputRequests = [
            ("a".to_owned(), InputRequest::url("m", "u")),
            ("b".to_owned(), InputRequest::url("m", "u")),
        ]
        .into();
        let mut ledger = Ledger::new();
        assert_eq!(ledger.unanswered(&requests).len(), 2);
        let answers: InputResponses = [("a".to_owned(), ElicitResult::decline().into())].into();
        ledger.record(&answers);
        assert_eq!(
            ledger.unanswered(&requests).keys().collect::<Vec<_>>(),
            ["b"]
        );
    }
}
