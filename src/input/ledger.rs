//! The answered-keys ledger: each input key is answered at most once per task.

use std::collections::BTreeSet;

use crate::protocol::{InputRequests, InputResponses};

/// The keys of a task's input requests that have been answered.
///
/// Servers re-send an outstanding request in every snapshot until they have
/// applied the answer (`tasks/update` is eventually consistent), so the
/// client remembers what it answered and never answers a key twice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    answered: BTreeSet<String>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// The requests of a snapshot that have not been answered yet.
    pub fn unanswered(&self, requests: &InputRequests) -> InputRequests {
        requests
            .iter()
            .filter(|(k, _)| !self.answered.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Whether `key` was answered.
    pub fn is_answered(&self, key: &str) -> bool {
        self.answered.contains(key)
    }

    /// The keys of `responses` that were already answered, if any.
    pub fn already_answered<'a>(&self, responses: &'a InputResponses) -> Vec<&'a str> {
        responses
            .keys()
            .filter(|k| self.answered.contains(*k))
            .map(String::as_str)
            .collect()
    }

    /// Records the keys of `responses` as answered.
    pub fn record(&mut self, responses: &InputResponses) {
        self.answered.extend(responses.keys().cloned());
    }

    /// How many keys were answered.
    pub fn len(&self) -> usize {
        self.answered.len()
    }

    /// Whether nothing was answered yet.
    pub fn is_empty(&self) -> bool {
        self.answered.is_empty()
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
        assert_eq!(ledger.already_answered(&answers), ["a"]);
    }
}
