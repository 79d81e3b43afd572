//! What can go wrong in a task store.

use std::fmt;

use super::{RecordId, Refusal};
use crate::error::BoxError;

/// An error from a [`TaskStore`](super::TaskStore).
///
/// Ask what happened with the `is_*` methods; `Display` says it in words.
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct StoreError {
    kind: Kind,
    #[source]
    source: Option<BoxError>,
}

#[derive(Debug)]
enum Kind {
    Stale(RecordId),
    NotFound(RecordId),
    Duplicate(RecordId),
    Refused(RecordId, Refusal),
    Corrupt(Option<RecordId>, String),
    SchemaTooNew {
        found: i64,
        known: i64,
    },
    SchemaTooOld {
        found: i64,
        known: i64,
        hint: String,
    },
    Full,
    Unavailable(String),
    Other(String),
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Stale(id) => write!(
                f,
                "record {id} was claimed by another worker since (a stale fencing token)"
            ),
            Kind::NotFound(id) => write!(f, "no task record {id}"),
            Kind::Duplicate(id) => write!(
                f,
                "the key already names task record {id} in its scope (keys are unique unless \
                 the label says otherwise)"
            ),
            Kind::Refused(id, why) => write!(f, "task record {id}: {why}"),
            Kind::Corrupt(Some(id), what) => write!(f, "task record {id} is corrupt: {what}"),
            Kind::Corrupt(None, what) => write!(f, "a task record is corrupt: {what}"),
            Kind::SchemaTooNew { found, known } => write!(
                f,
                "the task store's schema is version {found}, newer than this code knows \
                 ({known}); upgrade the code before using this database"
            ),
            Kind::SchemaTooOld {
                found: 0,
                known,
                hint,
            } => write!(
                f,
                "the task store's tables are not in this database (schema version {known} \
                 expected): {hint}"
            ),
            Kind::SchemaTooOld { found, known, hint } => write!(
                f,
                "the task store's schema is version {found}, older than this code needs \
                 ({known}): {hint}"
            ),
            Kind::Full => write!(f, "the task store's disk is full"),
            Kind::Unavailable(what) => write!(f, "the task store is unavailable: {what}"),
            Kind::Other(what) => write!(f, "task store: {what}"),
        }
    }
}

/// Constructors, for a store's implementation (see
/// [`backend`](super::backend)).
impl StoreError {
    fn new(kind: Kind) -> StoreError {
        StoreError { kind, source: None }
    }

    /// The underlying error, kept as this error's `source()`.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> StoreError {
        self.source = Some(source.into());
        self
    }

    /// Record `id` was claimed again since the lease whose fence a write
    /// carried: the write was refused ([`is_stale`](Self::is_stale)).
    pub fn stale(id: RecordId) -> StoreError {
        StoreError::new(Kind::Stale(id))
    }

    /// There is no record `id` ([`is_not_found`](Self::is_not_found)).
    pub fn not_found(id: RecordId) -> StoreError {
        StoreError::new(Kind::NotFound(id))
    }

    /// A unique key and scope already name record `existing`
    /// ([`is_duplicate`](Self::is_duplicate)).
    pub fn duplicate(existing: RecordId) -> StoreError {
        StoreError::new(Kind::Duplicate(existing))
    }

    /// An answer to a question of record `id` was refused, for `why`
    /// ([`is_refused`](Self::is_refused), [`refusal`](Self::refusal)).
    pub fn refused(id: RecordId, why: Refusal) -> StoreError {
        StoreError::new(Kind::Refused(id, why))
    }

    /// A record (`id`, when it can still be told) or the store's own data
    /// cannot be read: `what` says why ([`is_corrupt`](Self::is_corrupt)).
    pub fn corrupt(id: Option<RecordId>, what: impl Into<String>) -> StoreError {
        StoreError::new(Kind::Corrupt(id, what.into()))
    }

    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn schema_too_new(found: i64, known: i64) -> StoreError {
        StoreError::new(Kind::SchemaTooNew { found, known })
    }

    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn schema_too_old(found: i64, known: i64, hint: impl Into<String>) -> StoreError {
        StoreError::new(Kind::SchemaTooOld {
            found,
            known,
            hint: hint.into(),
        })
    }

    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) fn full() -> StoreError {
        StoreError::new(Kind::Full)
    }

    /// The storage cannot be reached for now (a lost connection, a busy
    /// database): `what` says why ([`is_unavailable`](Self::is_unavailable)).
    pub fn unavailable(what: impl Into<String>) -> StoreError {
        StoreError::new(Kind::Unavailable(what.into()))
    }

    /// Any other failure of the storage, in words.
    pub fn other(what: impl Into<String>) -> StoreError {
        StoreError::new(Kind::Other(what.into()))
    }

    /// The same failure again, for another call it failed: the kind and
    /// the words, without the source (which cannot be copied).
    #[cfg(any(feature = "postgres", feature = "sqlite", feature = "test-util"))]
    pub(crate) fn again(&self) -> StoreError {
        let kind = match &self.kind {
            Kind::Unavailable(what) => Kind::Unavailable(what.clone()),
            Kind::Full => Kind::Full,
            _ => Kind::Other(self.to_string()),
        };
        StoreError::new(kind)
    }

    /// The record was claimed by another worker since this one's lease
    /// began: the write was refused, and the worker must let the record go.
    pub fn is_stale(&self) -> bool {
        matches!(self.kind, Kind::Stale(_))
    }

    /// There is no such record.
    pub fn is_not_found(&self) -> bool {
        matches!(self.kind, Kind::NotFound(_))
    }

    /// A record with the same unique key already exists in the scope
    /// ([`NewTask::unique_key`](super::NewTask::unique_key)); nothing was
    /// written. [`record`](StoreError::record) names the existing one.
    pub fn is_duplicate(&self) -> bool {
        matches!(self.kind, Kind::Duplicate(_))
    }

    /// An answer was refused, and nothing stored: see
    /// [`refusal`](StoreError::refusal) for why.
    pub fn is_refused(&self) -> bool {
        matches!(self.kind, Kind::Refused(..))
    }

    /// Why an answer was refused: no such question, a closed one, one
    /// answered before (the first answer wins), or an answer that does not
    /// fit it.
    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.kind {
            Kind::Refused(_, why) => Some(why),
            _ => None,
        }
    }

    /// A record could not be read: a value that is not what the code wrote
    /// (bad JSON, an unknown protocol revision or status). The record is
    /// left as it is, for a person to look at.
    pub fn is_corrupt(&self) -> bool {
        matches!(self.kind, Kind::Corrupt(..))
    }

    /// The database was made by a newer version of this crate.
    pub fn is_schema_too_new(&self) -> bool {
        matches!(self.kind, Kind::SchemaTooNew { .. })
    }

    /// The database's schema is older than this code needs, or not there
    /// at all: run the store's migration first (for Postgres,
    /// `PostgresStore::migrate` or `mcp-tasks store migrate URL`, as a role
    /// that may change the schema). Nothing was changed.
    pub fn is_schema_too_old(&self) -> bool {
        matches!(self.kind, Kind::SchemaTooOld { .. })
    }

    /// The disk under the store is full; nothing was written.
    pub fn is_full(&self) -> bool {
        matches!(self.kind, Kind::Full)
    }

    /// The database cannot be reached (the connection was lost, the server
    /// is down). Worth retrying later: a tracker pauses and resumes.
    pub fn is_unavailable(&self) -> bool {
        matches!(self.kind, Kind::Unavailable(_) | Kind::Full)
    }

    /// The record the error is about, when it is about one.
    pub fn record(&self) -> Option<RecordId> {
        match self.kind {
            Kind::Stale(id)
            | Kind::NotFound(id)
            | Kind::Duplicate(id)
            | Kind::Refused(id, _)
            | Kind::Corrupt(Some(id), _) => Some(id),
            _ => None,
        }
    }
}
