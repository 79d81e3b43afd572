//! What the client remembers of the server's tools from the last complete
//! `tools/list`: whether each wants the legacy `task` opt-in. A
//! `notifications/tools/list_changed` forgets it.

use std::collections::HashMap;

/// Whether a listed tool wants the legacy `task` opt-in (`taskSupport`
/// `optional` or `required`).
pub(crate) fn wants_opt_in(tool: &crate::protocol::Tool) -> bool {
    tool.task_support()
        .is_some_and(crate::protocol::TaskSupport::wants_opt_in)
}

/// The last listing, and how many times it was forgotten.
#[derive(Debug, Default)]
pub(crate) struct KnownTools {
    /// Bumped by every [`KnownTools::forget`]: a listing that started
    /// before a change is not kept.
    generation: u64,
    /// Name → whether the listing asked for the legacy `task` opt-in.
    tools: HashMap<String, bool>,
}

impl KnownTools {
    /// The generation a listing starts in.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Keeps a complete listing that started in `generation`; a listing
    /// the server declared stale while it ran is dropped.
    pub(crate) fn replace(&mut self, generation: u64, tools: HashMap<String, bool>) {
        if generation == self.generation {
            self.tools = tools;
        }
    }

    /// Forgets the listing (the server's tools changed).
    pub(crate) fn forget(&mut self) {
        self.generation += 1;
        self.tools.clear();
    }

    /// Whether a listing is remembered (and not forgotten since).
    pub(crate) fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// `None` when the tool was not listed, else whether it wants the
    /// opt-in.
    pub(crate) fn opt_in(&self, name: &str) -> Option<bool> {
        self.tools.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_that_started_before_a_change_is_not_kept() {
        let mut listed = KnownTools::default();
        let started = listed.generation();
        listed.replace(started, HashMap::from([("export".to_owned(), true)]));
        assert_eq!(listed.opt_in("export"), Some(true));
        let started = listed.generation();
        listed.forget();
        assert_eq!(listed.opt_in("export"), None);
        listed.replace(started, HashMap::from([("export".to_owned(), true)]));
        assert_eq!(listed.opt_in("export"), None, "stale");
    }
}
