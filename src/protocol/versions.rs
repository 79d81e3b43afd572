//! The protocol revisions this client speaks: the one list, newest first,
//! and what each revision has. Every other place that needs a version
//! string, or a fact that depends on one (does it have an HTTP session,
//! may a reply be a batch, does it run 2025-11-25's experimental tasks),
//! reads it here.

/// The family a revision belongs to: how a session starts and how a task
/// is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2026-07-28 and later: no handshake, `_meta` on every request.
    Modern,
    /// 2025-11-25 and earlier: the `initialize` handshake.
    Initialize,
}

impl Era {
    /// The era's name in traces (the `era` field of a task span).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Initialize => "initialize",
        }
    }
}

/// One revision this client speaks, and what it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Revision {
    /// The version string, as `_meta`, `initialize` and the
    /// `MCP-Protocol-Version` header carry it.
    pub(crate) version: &'static str,
    /// The family it belongs to.
    pub(crate) era: Era,
    /// Streamable HTTP keeps a session: `Mcp-Session-Id` and the server's
    /// own `GET` stream.
    pub(crate) http_session: bool,
    /// A reply may be a JSON-RPC batch (an array of messages).
    pub(crate) batches: bool,
    /// 2025-11-25's experimental tasks: task-augmented `tools/call`, and
    /// tasks the client hosts for the server.
    pub(crate) experimental_tasks: bool,
}

const fn revision(
    version: &'static str,
    era: Era,
    http_session: bool,
    batches: bool,
    experimental_tasks: bool,
) -> Revision {
    Revision {
        version,
        era,
        http_session,
        batches,
        experimental_tasks,
    }
}

/// Every revision this client speaks, newest first.
pub(crate) const SUPPORTED: &[Revision] = &[
    revision("2026-07-28", Era::Modern, false, false, false),
    revision("2025-11-25", Era::Initialize, true, true, true),
    revision("2025-06-18", Era::Initialize, true, true, false),
    revision("2025-03-26", Era::Initialize, true, true, false),
    revision("2024-11-05", Era::Initialize, false, true, false),
];

/// The newest revision: what a client offers first.
pub(crate) const NEWEST: &str = SUPPORTED[0].version;

/// The revision called `version`, when this client speaks it.
pub(crate) fn find(version: &str) -> Option<&'static Revision> {
    SUPPORTED.iter().find(|r| r.version == version)
}

/// The versions of one era, newest first.
pub(crate) fn of_era(era: Era) -> impl Iterator<Item = &'static str> {
    SUPPORTED
        .iter()
        .filter(move |r| r.era == era)
        .map(|r| r.version)
}

/// The newest version of one era.
pub(crate) fn newest_of(era: Era) -> &'static str {
    of_era(era).next().unwrap_or(NEWEST)
}

/// Whether `version` has a fact: `false` for a version this client does
/// not speak.
pub(crate) fn has(version: &str, fact: impl Fn(&Revision) -> bool) -> bool {
    find(version).is_some_and(fact)
}

/// Whether a task of `version` keeps its questions between reads: a
/// 2026-07-28 task lists each one in `tasks/get` until it is answered; a
/// 2025-11-25 task asks each as a request that lives only while the client
/// holds `tasks/result` open. A version this client does not speak is
/// taken for the newest era.
pub(crate) fn keeps_questions(version: &str) -> bool {
    find(version).is_none_or(|r| r.era == Era::Modern)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_newest_first_and_each_version_is_listed_once() {
        for pair in SUPPORTED.windows(2) {
            assert!(pair[0].version > pair[1].version, "{pair:?}");
        }
        assert_eq!(NEWEST, "2026-07-28");
        assert_eq!(newest_of(Era::Initialize), "2025-11-25");
        assert_eq!(
            of_era(Era::Initialize).collect::<Vec<_>>(),
            ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
        );
    }

    #[test]
    fn facts_of_a_version_it_does_not_speak_are_false() {
        assert!(has("2025-03-26", |r| r.http_session));
        assert!(!has("2024-11-05", |r| r.http_session));
        assert!(has("2024-11-05", |r| r.batches));
        assert!(!has("2099-01-01", |r| r.batches));
        assert!(find("2099-01-01").is_none());
    }
}
