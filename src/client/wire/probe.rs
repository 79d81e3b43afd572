//! Which era a server speaks (PROTOCOL.md §1.6): probe with
//! `server/discover`; a discover result or a recognised 2026-07-28 error
//! means the modern wire, anything else (an unknown method, "not
//! initialized", an HTTP refusal without a modern error, silence within the
//! probe bound) means the initialize era, which gets its handshake. A probe
//! that could not connect at all guesses nothing: `connect` fails with
//! that connection error.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Map;

use crate::client::connection::Connection;
use crate::client::decode::decode;
use crate::client::wire::Envelope;
use crate::client::wire::{Legacy, Modern, Wire};
use crate::error::{Error, Result};
use crate::input::InputHandlers;
use crate::protocol::DiscoverResult;
use crate::protocol::method;
use crate::protocol::versions::{self, Era};

/// What the builder pins, from its `protocol_version`.
pub(crate) enum Pin {
    /// Probe, then fall back.
    Probe,
    /// A 2026-07-28 version: no probe.
    Modern,
    /// An initialize-era version: `initialize` offering it, no probe.
    Legacy(String),
}

impl Pin {
    pub(crate) fn of(version: Option<&str>) -> Pin {
        match version {
            None => Pin::Probe,
            Some(v) if versions::find(v).is_some_and(|r| r.era == Era::Initialize) => {
                Pin::Legacy(v.to_owned())
            }
            Some(_) => Pin::Modern,
        }
    }
}

/// The outcome of negotiation: the wire, and what the server said of
/// itself when the handshake told it.
pub(crate) struct Session {
    pub(crate) wire: Wire,
    pub(crate) discovered: Option<DiscoverResult>,
}

/// Negotiates the era over an open connection. A failure while the server
/// has sent nothing but unreadable input quotes it (see [`explain`]).
pub(crate) async fn negotiate(
    conn: Connection,
    envelope: Arc<Envelope>,
    handlers: &InputHandlers,
    pin: Pin,
    probe_timeout: Duration,
    request_timeout: Duration,
) -> Result<Session> {
    let held = conn.clone();
    match handshake(
        conn,
        envelope,
        handlers,
        pin,
        probe_timeout,
        request_timeout,
    )
    .await
    {
        Ok(session) => Ok(session),
        // Nothing to talk to: the failure is the connection's, not the
        // handshake request's.
        Err(e) if e.is_connect() => Err(e.without_method()),
        Err(e) => Err(explain(e, &held).await),
    }
}

/// How long a failed handshake waits for the rest of what a closed
/// server printed, to quote it.
const SETTLE: Duration = Duration::from_secs(2);

/// `e`, with what the server printed instead of JSON-RPC, when that is
/// all it sent (a wrong command, say): a transport error then, since the
/// server does not speak the protocol at all. When the connection closed
/// (the program exited), its reason leads.
async fn explain(e: Error, conn: &Connection) -> Error {
    let Some(unread) = conn.settled_preamble(SETTLE).await else {
        return e;
    };
    let what = match conn.closed_reason() {
        Some(reason) => reason,
        None => e.to_string(),
    };
    Error::transport(format!(
        "{what}; before any JSON-RPC the server sent: {unread} (is it an MCP server?)"
    ))
    .with_source(e)
}

async fn handshake(
    conn: Connection,
    envelope: Arc<Envelope>,
    handlers: &InputHandlers,
    pin: Pin,
    probe_timeout: Duration,
    request_timeout: Duration,
) -> Result<Session> {
    let offer = match pin {
        Pin::Modern => {
            conn.negotiated(&envelope.protocol_version());
            let wire = Wire::Modern(Modern::new(conn, envelope, request_timeout));
            return Ok(Session {
                wire,
                discovered: None,
            });
        }
        Pin::Legacy(v) => v,
        Pin::Probe => {
            let modern = Modern::new(conn.clone(), envelope.clone(), request_timeout);
            match modern
                .send(
                    method::SERVER_DISCOVER,
                    None,
                    &Map::new(),
                    Some(probe_timeout),
                )
                .await
            {
                Ok(raw) => {
                    conn.negotiated(&envelope.protocol_version());
                    let discovered = decode::<DiscoverResult>(&raw, method::SERVER_DISCOVER).ok();
                    return Ok(Session {
                        wire: Wire::Modern(modern),
                        discovered,
                    });
                }
                // -32022 with no version both speak (renegotiation was
                // tried): nothing will work, so say so now.
                Err(e) if e.is_unsupported_version() => return Err(e),
                Err(e) if speaks_modern(&e) => {
                    conn.negotiated(&envelope.protocol_version());
                    return Ok(Session {
                        wire: Wire::Modern(modern),
                        discovered: None,
                    });
                }
                Err(e) if conn.closed_reason().is_some() => return Err(e),
                // No connection could be made: no era to guess, and an
                // `initialize` would only fail the same way.
                Err(e) if e.is_connect() => return Err(e),
                // Nothing but unreadable lines (a usage text, a banner of a
                // program that is not an MCP server) and no answer: the
                // `initialize` would go the same way, only later.
                Err(e) if e.is_timeout() && conn.unread_preamble().is_some() => return Err(e),
                Err(e) => {
                    tracing::debug!("server/discover failed ({e}); trying initialize");
                    versions::newest_of(Era::Initialize).to_owned()
                }
            }
        }
    };
    let (legacy, discovered) =
        Legacy::initialize(conn, envelope, handlers, &offer, request_timeout).await?;
    Ok(Session {
        wire: Wire::Legacy(legacy),
        discovered: Some(discovered),
    })
}

/// An error only a 2026-07-28 server gives (`-32022` with the versions it
/// supports, `-32021`, `-32020`): the server speaks the modern era.
fn speaks_modern(e: &Error) -> bool {
    e.is_unsupported_version() || e.is_missing_capability() || e.is_header_mismatch()
}
