//! The one way a request's params get their `_meta`: the protocol version,
//! the client's capabilities (with the Tasks extension where the method
//! needs it) and the client's info, as 2026-07-28 requires on every
//! request. Also which protocol versions the client speaks.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::value::{RawValue, to_raw_value};
use serde_json::{Map, Value};

use crate::protocol::method::Method;
use crate::protocol::{ClientCapabilities, Implementation, PROTOCOL_VERSION, RequestId};

/// Protocol versions this client can speak, preferred first.
const KNOWN_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// What every request's `_meta` says, and the version it says it in.
pub(crate) struct Envelope {
    info: Implementation,
    capabilities: ClientCapabilities,
    /// The `capabilities.tasks` a 2025-11-25 `initialize` declares for
    /// hosted tasks; never in a 2026-07-28 `_meta`.
    hosted_tasks: Option<Map<String, Value>>,
    protocol_version: Mutex<Arc<str>>,
    /// `capabilities` (with and without the Tasks extension) and `info` as JSON, written
    /// once: they go into every request's `_meta` unchanged, and escaping
    /// them again for each request was the largest cost the client added
    /// to a lifecycle (`benches/lifecycle.rs --profile`).
    written: Written,
}

/// The parts of `_meta` that never change, already serialized, for the
/// methods that declare the Tasks extension and for the others; and the
/// whole `_meta` (its keys too) in the version the client starts with,
/// which is the one nearly every request is sent in.
struct Written {
    plain: Forms,
    with_tasks: Forms,
    info: Box<RawValue>,
    version: Box<str>,
}

/// One set of capabilities, alone and in the whole starting `_meta`.
struct Forms {
    capabilities: Box<RawValue>,
    meta: Box<RawValue>,
}

impl Written {
    fn new(
        capabilities: &ClientCapabilities,
        with_tasks: &ClientCapabilities,
        info: &Implementation,
        version: &str,
    ) -> Written {
        let info = written(info);
        let forms = |capabilities: &ClientCapabilities| {
            let capabilities = written(capabilities);
            let meta = written(&MetaRef {
                protocol_version: version,
                client_capabilities: &capabilities,
                client_info: &info,
                progress_token: None,
            });
            Forms { capabilities, meta }
        };
        Written {
            plain: forms(capabilities),
            with_tasks: forms(with_tasks),
            version: version.into(),
            info,
        }
    }
}

/// `value` as JSON text. The client's capabilities and info are plain
/// structs and JSON objects with string keys, which always serialize.
fn written(value: &impl Serialize) -> Box<RawValue> {
    to_raw_value(value).expect("the client's capabilities and info serialize to JSON")
}

/// The `_meta` of one request, borrowed from the envelope.
#[derive(Serialize)]
struct MetaRef<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: &'a RawValue,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    client_info: &'a RawValue,
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    progress_token: Option<&'a RequestId>,
}

/// A request's `_meta`: written whole when the client wrote it beforehand
/// (the version it started with, no progress token), else from its parts.
struct Meta<'a> {
    parts: MetaRef<'a>,
    whole: Option<&'a RawValue>,
}

impl Serialize for Meta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.whole {
            Some(whole) if self.parts.progress_token.is_none() => whole.serialize(s),
            _ => self.parts.serialize(s),
        }
    }
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
        self.meta.parts.progress_token = token;
        self
    }
}

/// An initialize-era request's params, with `_meta.progressToken` when the
/// caller asked for progress (that era sends no other `_meta`).
#[derive(Serialize)]
pub(crate) struct WithProgress<'a, P: Serialize> {
    #[serde(flatten)]
    params: &'a P,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ProgressMeta<'a>>,
}

#[derive(Serialize)]
struct ProgressMeta<'a> {
    #[serde(rename = "progressToken")]
    progress_token: &'a RequestId,
}

impl<'a, P: Serialize> WithProgress<'a, P> {
    pub(crate) fn new(params: &'a P, token: Option<&'a RequestId>) -> Self {
        WithProgress {
            params,
            meta: token.map(|progress_token| ProgressMeta { progress_token }),
        }
    }
}

impl Envelope {
    pub(crate) fn new(
        info: Implementation,
        capabilities: ClientCapabilities,
        protocol_version: Option<String>,
    ) -> Self {
        let capabilities_with_tasks = capabilities.clone().with_tasks();
        let protocol_version: Arc<str> =
            protocol_version.map_or_else(|| Arc::from(PROTOCOL_VERSION), Arc::from);
        Envelope {
            written: Written::new(
                &capabilities,
                &capabilities_with_tasks,
                &info,
                &protocol_version,
            ),
            capabilities,
            info,
            hosted_tasks: None,
            protocol_version: Mutex::new(protocol_version),
        }
    }

    /// Declares `tasks` as the `capabilities.tasks` of a 2025-11-25
    /// `initialize` (the tasks the client hosts for the server).
    pub(crate) fn with_hosted_tasks(mut self, tasks: Option<Map<String, Value>>) -> Self {
        self.hosted_tasks = tasks;
        self
    }

    /// The `capabilities.tasks` of a 2025-11-25 `initialize`, if any.
    pub(crate) fn hosted_tasks(&self) -> Option<&Map<String, Value>> {
        self.hosted_tasks.as_ref()
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

    /// What `_meta` declares for `method`, written.
    fn forms_for(&self, method: &str) -> &Forms {
        if Method::of(method).declares_tasks() {
            &self.written.with_tasks
        } else {
            &self.written.plain
        }
    }

    /// `params` with the `_meta` for `method`, in `version`.
    pub(crate) fn wrap<'a, P: Serialize>(
        &'a self,
        method: &str,
        params: &'a P,
        version: &'a str,
    ) -> WithMeta<'a, P> {
        let forms = self.forms_for(method);
        WithMeta {
            params,
            meta: Meta {
                parts: MetaRef {
                    protocol_version: version,
                    client_capabilities: &forms.capabilities,
                    client_info: &self.written.info,
                    progress_token: None,
                },
                whole: (version == &*self.written.version).then_some(&*forms.meta),
            },
        }
    }

    /// The `_meta` for `method` as a JSON object, under keys a caller may
    /// replace (the raw request path).
    pub(crate) fn meta_object(&self, method: &str) -> Map<String, Value> {
        let version = self.protocol_version();
        let meta = MetaRef {
            protocol_version: &version,
            client_capabilities: &self.forms_for(method).capabilities,
            client_info: &self.written.info,
            progress_token: None,
        };
        match serde_json::to_value(meta) {
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
    let mut candidates = KNOWN_VERSIONS.iter().copied().filter(common);
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

    /// The `_meta` written once is byte for byte the one written from its
    /// parts, and is used only where it is the same: another version or a
    /// progress token writes it from the parts.
    #[test]
    fn the_meta_written_once_is_the_meta_written_from_its_parts() {
        let envelope = Envelope::new(
            Implementation::new("c \"quoted\"", "1"),
            ClientCapabilities::default(),
            None,
        );
        let params = serde_json::json!({"taskId": "t"});
        let token = RequestId::Number(7);
        for method in ["tasks/get", "tools/call", "tools/list"] {
            for version in [PROTOCOL_VERSION, "2099-01-01"] {
                for progress in [None, Some(&token)] {
                    let wrapped = envelope
                        .wrap(method, &params, version)
                        .with_progress(progress);
                    let whole = serde_json::to_string(&wrapped).unwrap();
                    let mut parts = wrapped;
                    parts.meta.whole = None;
                    let parts = serde_json::to_string(&parts).unwrap();
                    assert_eq!(whole, parts, "{method} {version} {progress:?}");
                    let v: Value = serde_json::from_str(&whole).unwrap();
                    assert_eq!(v["_meta"][META_PROTOCOL_VERSION], version);
                    assert_eq!(v["_meta"]["progressToken"], json_token(progress));
                }
            }
        }
    }

    fn json_token(token: Option<&RequestId>) -> Value {
        token.map_or(Value::Null, |t| serde_json::to_value(t).unwrap())
    }
}
