//! The headers of one POST: the standard MCP headers (read from the body
//! when the client does not state them), the value encoding they share,
//! and the checks on the user's own headers.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::tool_headers::{HeaderParam, PARAM_PREFIX};

/// Both reply shapes a client must accept.
pub(super) const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// `MCP-Protocol-Version`: equal to `_meta.protocolVersion` of the body.
pub(super) const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// `Mcp-Method`: the JSON-RPC method.
pub(super) const METHOD_HEADER: &str = "mcp-method";
/// `Mcp-Name`: the routing name of the methods that have one.
pub(super) const NAME_HEADER: &str = "mcp-name";

/// The standard headers' names, parsed once: naming a header by a `&str`
/// parses the name again on every insertion.
static PROTOCOL_VERSION_NAME: HeaderName = HeaderName::from_static(PROTOCOL_VERSION_HEADER);
static METHOD_NAME: HeaderName = HeaderName::from_static(METHOD_HEADER);
static NAME_NAME: HeaderName = HeaderName::from_static(NAME_HEADER);

/// Headers the transport sets itself; a user header may not replace them.
const RESERVED: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
    PROTOCOL_VERSION_HEADER,
    METHOD_HEADER,
    NAME_HEADER,
];

/// The parts of an outgoing message the headers mirror, read once.
#[derive(Deserialize, Default)]
pub(super) struct Facts<'a> {
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "taskId")]
    task_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(borrow, default, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<Cow<'a, str>>,
}

impl<'a> Facts<'a> {
    /// Reads the facts of `json`. A message that does not parse has none:
    /// the server will reject its body anyway.
    pub(super) fn read(json: &'a str) -> Facts<'a> {
        serde_json::from_str(json).unwrap_or_default()
    }

    /// `_meta.protocolVersion`, when the message has one.
    pub(super) fn protocol_version(&self) -> Option<&str> {
        self.params
            .as_ref()?
            .meta
            .as_ref()?
            .protocol_version
            .as_deref()
    }

    /// The text `Mcp-Name` mirrors for `method`: `Ok(None)` when the method
    /// has none (or the message lacks it), an error when it is neither a
    /// string nor a number.
    pub(super) fn routing_text(&self, method: &str) -> Result<Option<String>, String> {
        match self.routing_name(method) {
            None => Ok(None),
            Some(raw) => routing_text(raw)
                .map(Some)
                .ok_or_else(|| format!("{method}: the routing name is not a string or number")),
        }
    }

    /// The value `Mcp-Name` mirrors for `method`, if the method has one.
    fn routing_name(&self, method: &str) -> Option<&'a RawValue> {
        let params = self.params.as_ref()?;
        match routing_param(method)? {
            RoutingParam::Name => params.name,
            RoutingParam::Uri => params.uri,
            RoutingParam::TaskId => params.task_id,
        }
    }

    /// The tool name of a `tools/call`.
    pub(super) fn tool_name(&self) -> Option<String> {
        let raw = self.params.as_ref()?.name?;
        serde_json::from_str::<String>(raw.get()).ok()
    }

    /// The arguments of a `tools/call`, parsed.
    pub(super) fn arguments(&self) -> Option<Value> {
        let raw = self.params.as_ref()?.arguments?;
        serde_json::from_str(raw.get()).ok()
    }
}

/// The param `Mcp-Name` mirrors.
enum RoutingParam {
    Name,
    Uri,
    TaskId,
}

/// The param a method is routed by, if any: the one table of routed
/// methods.
fn routing_param(method: &str) -> Option<RoutingParam> {
    match method {
        "tools/call" | "prompts/get" => Some(RoutingParam::Name),
        "resources/read" => Some(RoutingParam::Uri),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some(RoutingParam::TaskId),
        _ => None,
    }
}

/// Whether `method` is routed by a name its params carry (`Mcp-Name`).
pub(super) fn is_routed(method: &str) -> bool {
    routing_param(method).is_some()
}

/// Builds the headers of one POST.
///
/// Starts from `base` (the user's headers and `Authorization`) and
/// *replaces* every standard header, so no header is ever sent twice.
/// `version` is `_meta.protocolVersion` (or, for a message without `_meta`,
/// the last version the client used).
pub(super) fn for_message(
    base: &HeaderMap,
    method: &str,
    version: &str,
    routing: Option<&str>,
    mirrored: &[(HeaderName, HeaderValue)],
) -> Result<HeaderMap, String> {
    // Sized for all of them at once: growing the map rehashes it.
    let mut headers = HeaderMap::with_capacity(base.len() + 5 + mirrored.len());
    for (name, value) in base {
        headers.append(name.clone(), value.clone());
    }
    headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let version = HeaderValue::from_str(version)
        .map_err(|_| format!("the protocol version {version:?} is not a valid header value"))?;
    headers.insert(PROTOCOL_VERSION_NAME.clone(), version);
    let method_value = HeaderValue::from_str(method)
        .map_err(|_| format!("the method {method:?} is not a valid header value"))?;
    headers.insert(METHOD_NAME.clone(), method_value);
    if let Some(value) = routing {
        headers.insert(NAME_NAME.clone(), encode_value(value));
    }
    for (name, value) in mirrored {
        headers.insert(name.clone(), value.clone());
    }
    Ok(headers)
}

/// The text of a routing name (a task id, a tool name: nearly always a
/// string, read as one without building a `Value`).
fn routing_text(raw: &RawValue) -> Option<String> {
    if raw.get().starts_with('"') {
        return serde_json::from_str(raw.get()).ok();
    }
    serde_json::from_str::<Value>(raw.get())
        .ok()
        .as_ref()
        .and_then(scalar_text)
}

/// The headers mirrored from a `tools/call`'s annotated arguments. An
/// argument that is absent or `null` sends no header.
pub(super) fn mirrored(
    params: &[HeaderParam],
    arguments: &Value,
) -> Vec<(HeaderName, HeaderValue)> {
    params
        .iter()
        .filter_map(|p| {
            let value = p.path.iter().try_fold(arguments, |v, key| v.get(key))?;
            let text = scalar_text(value)?;
            Some((p.header.clone(), encode_value(&text)))
        })
        .collect()
}

/// The text form of a primitive: a string as is, an integer in decimal, a
/// boolean as `true`/`false`. `None` for `null`, arrays and objects.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            // An integral float (`42.0`) is written as the integer it is.
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                format!("{f:.0}")
            }
            _ => n.to_string(),
        }),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// Encodes a header value: as is when it is plain visible ASCII (inner
/// spaces allowed), otherwise as `=?base64?<base64 of the UTF-8 bytes>?=`.
///
/// Values with non-ASCII or control characters (tabs included), leading or
/// trailing spaces, or that already look like the encoded form are encoded.
pub(super) fn encode_value(value: &str) -> HeaderValue {
    if needs_base64(value)
        && let Ok(encoded) = HeaderValue::from_str(&format!("=?base64?{}?=", BASE64.encode(value)))
    {
        return encoded;
    }
    HeaderValue::from_str(value).expect("a plain visible-ASCII value is a valid header value")
}

fn needs_base64(value: &str) -> bool {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    !plain || padded || looks_encoded
}

/// Decodes a value sent in the `=?base64?…?=` form; other values as they are.
#[cfg(test)]
fn decode_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(b64) => String::from_utf8(BASE64.decode(b64).ok()?).ok(),
        None => Some(value.to_owned()),
    }
}

/// Checks the user's headers and builds the base every POST starts from.
///
/// Names and values must be valid HTTP; the standard MCP headers, `Accept`,
/// `Content-Type` and framing headers are the transport's own. A later
/// header of the same name replaces an earlier one; a bearer token
/// replaces any `Authorization` header.
pub(super) fn base(user: &[(String, String)], bearer: Option<&str>) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for (name, value) in user {
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{name:?} is not a valid header name"))?;
        if RESERVED.contains(&parsed.as_str()) || parsed.as_str().starts_with(PARAM_PREFIX) {
            return Err(format!(
                "the header {name:?} is set by the transport itself"
            ));
        }
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of the header {name:?} is not a valid header value"))?;
        if parsed == reqwest::header::AUTHORIZATION {
            value.set_sensitive(true);
        }
        headers.insert(parsed, value);
    }
    if let Some(token) = bearer {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the bearer token is not a valid header value".to_owned())?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn encoded(v: &str) -> String {
        encode_value(v).to_str().unwrap().to_owned()
    }

    #[test]
    fn plain_values_are_sent_as_is() {
        for v in [
            "us-west1",
            "us west 1",
            "",
            "tools/call",
            "file:///a%20b.txt",
        ] {
            assert_eq!(encoded(v), v);
        }
    }

    #[test]
    fn unsafe_values_use_the_base64_form() {
        for v in [
            "Hello, 世界",
            " padded ",
            " lead",
            "trail ",
            "line1\nline2",
            "a\r\nb",
            "\tindented",
            "=?base64?abc?=",
        ] {
            let e = encoded(v);
            assert!(
                e.starts_with("=?base64?") && e.ends_with("?="),
                "{v:?} -> {e}"
            );
            assert_eq!(decode_value(&e).as_deref(), Some(v));
        }
        assert_eq!(encoded("é"), "=?base64?w6k=?=");
    }

    #[test]
    fn scalars_are_written_as_the_spec_says() {
        assert_eq!(scalar_text(&json!(42)).unwrap(), "42");
        assert_eq!(scalar_text(&json!(-7)).unwrap(), "-7");
        assert_eq!(scalar_text(&json!(42.0)).unwrap(), "42");
        assert_eq!(scalar_text(&json!(true)).unwrap(), "true");
        assert_eq!(scalar_text(&json!(false)).unwrap(), "false");
        assert_eq!(scalar_text(&json!(null)), None);
        assert_eq!(scalar_text(&json!({"a": 1})), None);
    }

    #[test]
    fn standard_headers_mirror_the_body() {
        let json = r#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t-1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let facts = Facts::read(json);
        assert_eq!(facts.protocol_version(), Some("2026-07-28"));
        let name = facts.routing_text("tasks/get").unwrap();
        assert_eq!(name.as_deref(), Some("t-1"));
        let h = for_message(
            &HeaderMap::new(),
            "tasks/get",
            "2026-07-28",
            name.as_deref(),
            &[],
        )
        .unwrap();
        assert_eq!(h[ACCEPT], ACCEPT_BOTH);
        assert_eq!(h[CONTENT_TYPE], "application/json");
        assert_eq!(h[PROTOCOL_VERSION_HEADER], "2026-07-28");
        assert_eq!(h[METHOD_HEADER], "tasks/get");
        assert_eq!(h[NAME_HEADER], "t-1");
        assert_eq!(h.len(), 5, "{h:?}");
    }

    #[test]
    fn methods_without_a_routing_name_send_no_mcp_name() {
        let json = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#;
        assert!(!is_routed("tools/list"));
        assert_eq!(Facts::read(json).routing_text("tools/list"), Ok(None));
        // The routed methods (a name each, read from the body when not
        // stated).
        for method in [
            "tools/call",
            "prompts/get",
            "resources/read",
            "tasks/get",
            "tasks/update",
            "tasks/cancel",
        ] {
            assert!(is_routed(method), "{method}");
        }
        let h = for_message(&HeaderMap::new(), "tools/list", "v", None, &[]).unwrap();
        assert!(h.get(NAME_HEADER).is_none());
    }

    #[test]
    fn a_routing_name_that_is_no_string_or_number_is_refused() {
        let json = r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":{"a":1}}}"#;
        let err = Facts::read(json).routing_text("tasks/get").unwrap_err();
        assert!(err.contains("not a string or number"), "{err}");
        let json = r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":7}}"#;
        assert_eq!(
            Facts::read(json).routing_text("tasks/get"),
            Ok(Some("7".into()))
        );
    }

    #[test]
    fn user_headers_cannot_replace_the_transport_s() {
        for name in [
            "Mcp-Method",
            "mcp-name",
            "Accept",
            "MCP-Protocol-Version",
            "Mcp-Param-X",
        ] {
            let err = base(&[(name.into(), "x".into())], None).unwrap_err();
            assert!(err.contains("set by the transport"), "{err}");
        }
        assert!(base(&[("bad name".into(), "x".into())], None).is_err());
        assert!(base(&[("x-ok".into(), "line\nbreak".into())], None).is_err());
    }

    #[test]
    fn a_bearer_token_replaces_authorization_and_is_sensitive() {
        let h = base(
            &[
                ("Authorization".into(), "Basic abc".into()),
                ("X-Team".into(), "a".into()),
            ],
            Some("s3cret"),
        )
        .unwrap();
        assert_eq!(h.get_all("authorization").iter().count(), 1);
        assert!(h["authorization"].is_sensitive());
        assert_eq!(h["authorization"], "Bearer s3cret");
        assert!(!format!("{:?}", h["authorization"]).contains("s3cret"));
    }
}
