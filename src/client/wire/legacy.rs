//! The initialize-era wire (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05):
//! an `initialize` handshake, then plain JSON-RPC requests without the
//! per-request `_meta`; input comes as requests from the server, which
//! `client/inbound.rs` answers.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::start::{Call, Started};
use crate::client::envelope::{Envelope, WithProgress};
use crate::client::rpc::Connection;
use crate::error::{Error, Result};
use crate::protocol::method;
use crate::protocol::{
    CallToolParams, CallToolResponse, ClientCapabilities, DetailedTask, DiscoverResult,
    Implementation, InputResponses, META_SERVER_INFO, ServerCapabilities, TaskId,
};

/// The initialize-era versions this client speaks, newest first.
pub(crate) const LEGACY_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// An initialized session.
pub(crate) struct Legacy {
    conn: Connection,
    envelope: Arc<Envelope>,
    request_timeout: Duration,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams<'a> {
    protocol_version: &'a str,
    capabilities: &'a ClientCapabilities,
    client_info: &'a Implementation,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult {
    protocol_version: String,
    #[serde(default)]
    capabilities: ServerCapabilities,
    #[serde(default)]
    server_info: Option<Value>,
    #[serde(default)]
    instructions: Option<String>,
}

impl Legacy {
    /// Runs the handshake: `initialize` offering `offer`, the server's
    /// choice checked against the versions this client speaks, then
    /// `notifications/initialized`. Returns the session and what the
    /// server said of itself, in the shape `server/discover` gives.
    pub(crate) async fn initialize(
        conn: Connection,
        envelope: Arc<Envelope>,
        offer: &str,
        request_timeout: Duration,
    ) -> Result<(Legacy, DiscoverResult)> {
        let params = InitializeParams {
            protocol_version: offer,
            capabilities: envelope.capabilities(),
            client_info: envelope.info(),
        };
        let raw = conn
            .request(method::INITIALIZE, None, &params, request_timeout)
            .await
            .map_err(|e| e.with_method(method::INITIALIZE))?;
        let result: InitializeResult = serde_json::from_str(raw.get()).map_err(|e| {
            Error::protocol(format!("malformed initialize result: {e}"))
                .with_method(method::INITIALIZE)
        })?;
        let Some(version) = LEGACY_VERSIONS
            .iter()
            .copied()
            .find(|v| *v == result.protocol_version)
        else {
            return Err(Error::protocol(format!(
                "the server chose protocol version {:?}, which this client does not speak \
                 (it offered {offer:?}; it speaks {})",
                result.protocol_version,
                LEGACY_VERSIONS.join(", ")
            ))
            .with_method(method::INITIALIZE));
        };
        conn.notify(method::NOTIFICATIONS_INITIALIZED, &Map::new())
            .await?;
        envelope.set_protocol_version(version);
        let mut meta = Map::new();
        if let Some(info) = result.server_info {
            meta.insert(META_SERVER_INFO.to_owned(), info);
        }
        let discovered = DiscoverResult {
            supported_versions: vec![version.to_owned()],
            capabilities: result.capabilities,
            instructions: result.instructions,
            ttl_ms: None,
            cache_scope: None,
            meta: (!meta.is_empty()).then_some(meta),
        };
        let session = Legacy {
            conn,
            envelope,
            request_timeout,
            version,
        };
        Ok((session, discovered))
    }

    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// Sends one request as this era does: the params alone, no `_meta`.
    pub(crate) async fn send<P: Serialize>(
        &self,
        method: &'static str,
        name: Option<&str>,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        let timeout = timeout.unwrap_or(self.request_timeout);
        self.conn
            .request(method, name.map(str::to_owned), params, timeout)
            .await
            .map_err(|e| e.with_method(method))
    }

    /// Calls a tool. Input the tool needs comes as requests from the
    /// server, answered while the call runs; the answer is the result.
    pub(crate) async fn start(&self, call: Call<'_>) -> Result<Started> {
        let tracking = call.progress;
        let token = tracking.as_deref().map(|t| t.token().clone());
        let params = CallToolParams {
            name: call.name.to_owned(),
            arguments: call.arguments,
            input_responses: None,
            request_state: None,
            // Tasks on this era are not read yet: never ask for one.
            task: None,
        };
        let raw = self
            .conn
            .request_tracked(
                method::TOOLS_CALL,
                Some(call.name.to_owned()),
                &WithProgress::new(&params, token.as_ref()),
                call.timeout,
                tracking,
            )
            .await
            .map_err(|e| e.with_method(method::TOOLS_CALL))?;
        match CallToolResponse::decode(raw.get(), false) {
            Ok(CallToolResponse::Complete(r)) => Ok(Started::Complete(r)),
            Ok(_) => Err(Error::protocol(
                "an initialize-era tools/call answered with a 2026-07-28 result kind",
            )
            .with_method(method::TOOLS_CALL)),
            Err(e) => Err(Error::protocol(e.to_string()).with_method(method::TOOLS_CALL)),
        }
    }

    /// Tasks of this era are read with `tasks/get` and `tasks/result`;
    /// this client does not read them yet.
    fn no_tasks(&self, method: &'static str, id: &TaskId) -> Error {
        Error::protocol(format!(
            "the server speaks {}, whose tasks this client does not read yet",
            self.version
        ))
        .with_method(method)
        .with_task(id)
    }

    pub(crate) async fn read(&self, id: &TaskId) -> Result<DetailedTask> {
        Err(self.no_tasks(method::TASKS_GET, id))
    }

    pub(crate) async fn answer(&self, id: &TaskId, _responses: &InputResponses) -> Result<()> {
        Err(self.no_tasks(method::TASKS_UPDATE, id))
    }

    pub(crate) async fn cancel(&self, id: &TaskId) -> Result<()> {
        Err(self.no_tasks(method::TASKS_CANCEL, id))
    }
}
