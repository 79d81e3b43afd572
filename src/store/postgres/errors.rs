//! What a database error means to the store: unavailable (a tracker
//! pauses), refused, or an error.

use super::*;
use crate::error::one_line;

/// The store's error for a server that refused a new connection. A
/// database that is not accepting connections for now (`ALLOW_CONNECTIONS
/// false`, a server starting or stopping) is unavailable, as a lost
/// connection is: a tracker pauses and tries again. Wrong credentials or a
/// database that does not exist stay errors.
pub(super) fn refused(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error()
        && *db.code() == SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE
    {
        let what = format!("{} ({})", db.message(), db.code().code());
        return StoreError::unavailable(what);
    }
    if let Some(what) = tls_failure(&e) {
        return StoreError::other(what).with_source(e);
    }
    classify(e).0
}

/// What went wrong in a TLS handshake with the database, in words: a
/// refused certificate, a server without TLS. Not an outage: trying again
/// would fail the same way.
fn tls_failure(e: &tokio_postgres::Error) -> Option<String> {
    let text = e.to_string();
    if !text.contains("TLS") {
        return None;
    }
    Some(format!("TLS to the database failed: {}", one_line(e)))
}

/// The store's error for a database error, and whether the connection is
/// lost. A server's message is kept, never its detail (which may quote a
/// row, task id included).
pub(super) fn classify(e: tokio_postgres::Error) -> (StoreError, bool) {
    if e.is_closed() {
        return (StoreError::unavailable("the connection was lost"), true);
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let what = format!("{} ({})", db.message(), code.code());
        let lost = code.code().starts_with("08")
            || [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
            ]
            .contains(code);
        let error = if *code == SqlState::DISK_FULL {
            StoreError::full()
        } else if lost
            || [
                SqlState::TOO_MANY_CONNECTIONS,
                SqlState::OUT_OF_MEMORY,
                SqlState::T_R_SERIALIZATION_FAILURE,
                SqlState::T_R_DEADLOCK_DETECTED,
                SqlState::LOCK_NOT_AVAILABLE,
                SqlState::QUERY_CANCELED,
            ]
            .contains(code)
        {
            StoreError::unavailable(what)
        } else {
            StoreError::other(what)
        };
        return (error, lost);
    }
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    let what = one_line(&e);
    if io {
        (
            StoreError::unavailable(format!("cannot reach the database: {what}")).with_source(e),
            true,
        )
    } else {
        (
            StoreError::other(format!("a database error: {what}")).with_source(e),
            false,
        )
    }
}
