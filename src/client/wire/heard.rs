//! Which resources' updates are delivered: the URIs subscribed to, in
//! either era.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The URIs the client subscribed to, in either era: kept by the
/// subscribing calls, read by the dispatcher, which delivers the updates
/// of these resources alone.
#[derive(Clone, Default)]
pub(crate) struct Heard(Arc<Mutex<BTreeSet<String>>>);

impl Heard {
    /// Adds `uri`; `true` when it was not there.
    pub(crate) fn add(&self, uri: &str) -> bool {
        self.0.lock().unwrap().insert(uri.to_owned())
    }

    /// Removes `uri`.
    pub(crate) fn remove(&self, uri: &str) {
        self.0.lock().unwrap().remove(uri);
    }

    /// Whether an update of `uri` was asked for: `uri` is subscribed to,
    /// or lies under a subscribed URI (the subscribed URI followed by `/`,
    /// `?` or `#`, or one that ends with `/`). `file:///dir` covers
    /// `file:///dir/a.txt`, not `file:///directory`. One look-up per such
    /// boundary in `uri`.
    pub(crate) fn covers(&self, uri: &str) -> bool {
        let set = self.0.lock().unwrap();
        if set.is_empty() {
            return false;
        }
        if set.contains(uri) {
            return true;
        }
        uri.char_indices()
            .filter(|(_, c)| matches!(c, '/' | '?' | '#'))
            .any(|(i, _)| set.contains(&uri[..i]) || set.contains(&uri[..=i]))
    }
}
