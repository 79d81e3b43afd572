//! The one way a 2026-07-28 request's params get their `_meta`: the
//! protocol version, the client's capabilities (with the Tasks extension
//! where the method needs it), the client's info, and a progress token
//! when the caller asked for progress, and the choice of another 2026-07-28
//! version after a `-32022` (the versions are listed in
//! `protocol/versions.rs`). (The initialize era sends no such `_meta`: see
//! `wire/legacy/`.)

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::protocol::method::Method;
use crate::protocol::versions::{self, Era};
use crate::protocol::{ClientCapabilities, Implementation, PROTOCOL_VERSION, RequestId};

/// What every request's `_meta` says, and the version it says it in.
pub(crate) struct Envelope {
    info: Implementation,
    capabilities: ClientCapabilities,
    /// `capabilities` with the Tasks extension declared, for the methods
    /// that need it.
    capabilities_with_tasks: ClientCapabilities,
    protocol_version: Mutex<Arc<str>>,
}

/// The `_meta` of one request, borrowed from the envelope.
#[derive(Serialize)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: &'a ClientCapabilities,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    client_info: &'a Implementation,
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    progress_token: Option<&'a RequestId>,
}

/// A request's params with the envelope's `_meta` beside them.
#[derive(Serialize)]
pub(crate) struct WithMeta<'a, P: Serialize> {
    #[serde(flatten)]
    params: &'a P,
    #[serde(rename = "_meta")]
    meta: Meta<'a>,
}

impl<'a, P: Serialize> WithMeta<'a, P> {
    /// Asks the server for progress reports under `token`.
    pub(crate) fn with_progress(mut self, token: Option<&'a RequestId>) -> Self {
        self.meta.progress_token = token;
        self
    }
}

impl Envelope {
    pub(crate) fn new(
        info: Implementation,
        capabilities: ClientCapabilities,
        protocol_version: Option<String>,
    ) -> Self {
        let protocol_version =
            protocol_version.map_or_else(|| Arc::from(PROTOCOL_VERSION), Arc::from);
        Envelope {
            capabilities_with_tasks: capabilities.clone().with_tasks(),
            capabilities,
            info,
            protocol_version: Mutex::new(protocol_version),
        }
    }

    pub(crate) fn info(&self) -> &Implementation {
        &self.info
    }

    /// The capabilities the installed handlers give, without the Tasks
    /// extension (what an initialize-era handshake declares).
    pub(crate) fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// The protocol version requests are sent with.
    pub(crate) fn protocol_version(&self) -> Arc<str> {
        self.protocol_version.lock().unwrap().clone()
    }

    /// The `_meta` of a request of `method` in `version`: the Tasks
    /// extension declared where the method needs it.
    fn meta<'a>(&'a self, method: &str, version: &'a str) -> Meta<'a> {
        let client_capabilities = if Method::of(method).declares_tasks() {
            &self.capabilities_with_tasks
        } else {
            &self.capabilities
        };
        Meta {
            protocol_version: version,
            client_capabilities,
            client_info: &self.info,
            progress_token: None,
        }
    }

    /// `params` with the `_meta` for `method`, in `version`.
    pub(crate) fn wrap<'a, P: Serialize>(
        &'a self,
        method: &str,
        params: &'a P,
        version: &'a str,
    ) -> WithMeta<'a, P> {
        WithMeta {
            params,
            meta: self.meta(method, version),
        }
    }

    /// The `_meta` for `method` as a JSON object, under keys a caller may
    /// replace (the raw request path).
    pub(crate) fn meta_object(&self, method: &str) -> Map<String, Value> {
        let version = self.protocol_version();
        match serde_json::to_value(self.meta(method, &version)) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// Records the version a handshake settled on.
    pub(crate) fn set_protocol_version(&self, version: &str) {
        *self.protocol_version.lock().unwrap() = Arc::from(version);
    }

    /// After a `-32022` for `tried`: switches to a version from the error's
    /// `data.supported` that this client speaks, and returns it; `None`
    /// when there is none.
    pub(crate) fn renegotiate(&self, data: Option<&Value>, tried: &str) -> Option<&'static str> {
        let next = pick_version(data, tried)?;
        tracing::debug!(from = %tried, to = next, "renegotiating the protocol version");
        *self.protocol_version.lock().unwrap() = Arc::from(next);
        Some(next)
    }
}

/// Picks a version from `data.supported` of a `-32022` error that this
/// client speaks, preferring one it did not just try. The version just
/// tried comes back only when the server lists it as supported (a server
/// behind a load balancer mid-upgrade, say): the caller retries once.
fn pick_version(data: Option<&Value>, tried: &str) -> Option<&'static str> {
    let supported = data?.get("supported")?.as_array()?;
    let common = |v: &&str| supported.iter().any(|s| s.as_str() == Some(*v));
    let mut candidates = versions::of_era(Era::Modern).filter(common);
    let first = candidates.next()?;
    Some(if first == tried {
        candidates.next().unwrap_or(first)
    } else {
        first
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{
        META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, TASKS_EXTENSION,
    };

    #[test]
    fn meta_uses_the_full_key_names_and_declares_tasks_where_needed() {
        let envelope = Envelope::new(
            Implementation::new("c", "1"),
            ClientCapabilities::default(),
            None,
        );
        let version = envelope.protocol_version();
        let params = serde_json::json!({"taskId": "t"});
        let v = serde_json::to_value(envelope.wrap("tasks/get", &params, &version)).unwrap();
        assert_eq!(v["taskId"], "t");
        assert_eq!(v["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(
            v["_meta"][META_CLIENT_CAPABILITIES]["extensions"][TASKS_EXTENSION],
            serde_json::json!({})
        );
        assert_eq!(v["_meta"][META_CLIENT_INFO]["name"], "c");
        let v = serde_json::to_value(envelope.wrap("tools/list", &params, &version)).unwrap();
        assert!(
            v["_meta"][META_CLIENT_CAPABILITIES]
                .get("extensions")
                .is_none()
        );
        let meta = envelope.meta_object("tools/call");
        assert!(meta[META_CLIENT_CAPABILITIES]["extensions"][TASKS_EXTENSION].is_object());
    }

    /// Another version, or a progress token, is written as asked.
    #[test]
    fn meta_says_the_version_and_progress_token_it_is_given() {
        let envelope = Envelope::new(
            Implementation::new("c \"quoted\"", "1"),
            ClientCapabilities::default(),
            None,
        );
        let params = serde_json::json!({"taskId": "t"});
        let token = RequestId::Number(7);
        for version in [PROTOCOL_VERSION, "2099-01-01"] {
            for progress in [None, Some(&token)] {
                let wrapped = envelope
                    .wrap("tasks/get", &params, version)
                    .with_progress(progress);
                let v = serde_json::to_value(&wrapped).unwrap();
                assert_eq!(v["_meta"][META_PROTOCOL_VERSION], version);
                assert_eq!(v["_meta"]["progressToken"], json_token(progress));
                assert_eq!(v["_meta"][META_CLIENT_INFO]["name"], "c \"quoted\"");
                assert_eq!(v["taskId"], "t");
            }
        }
    }

    fn json_token(token: Option<&RequestId>) -> Value {
        token.map_or(Value::Null, |t| serde_json::to_value(t).unwrap())
    }
}
