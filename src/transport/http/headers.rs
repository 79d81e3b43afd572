//! The headers of one POST: the standard MCP headers (from what the client
//! states, never read back from the body), the value encoding they share,
//! and the checks on the user's own headers.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::tool_headers::{HeaderParam, PARAM_PREFIX};

/// Both reply shapes a client must accept.
pub(super) const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// `MCP-Protocol-Version`: the version the client negotiated.
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

/// The arguments of a `tools/call`, the one part of a message the
/// transport reads (only for a tool whose arguments are mirrored in
/// `Mcp-Param-*` headers): everything else the headers carry, the client
/// states on the [`Outbound`](crate::transport::Outbound) or told the sink.
#[derive(Deserialize, Default)]
struct Call<'a> {
    #[serde(borrow, default)]
    params: Option<CallParams<'a>>,
}

#[derive(Deserialize, Default)]
struct CallParams<'a> {
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// The arguments of the `tools/call` message `json`, parsed; `None` when
/// it has none (or does not parse: the server will reject it anyway).
pub(super) fn call_arguments(json: &str) -> Option<Value> {
    let call: Call<'_> = serde_json::from_str(json).ok()?;
    serde_json::from_str(call.params?.arguments?.get()).ok()
}

/// Builds the headers of one POST.
///
/// Starts from `base` (the user's headers and `Authorization`) and
/// *replaces* every standard header, so no header is ever sent twice.
/// `version` is the one the client negotiated (which the 2026-07-28 body's
/// `_meta.protocolVersion` carries too).
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
    fn standard_headers_carry_what_they_are_given() {
        let h = for_message(
            &HeaderMap::new(),
            "tasks/get",
            "2026-07-28",
            Some("t-1"),
            &[],
        )
        .unwrap();
        assert_eq!(h[ACCEPT], ACCEPT_BOTH);
        assert_eq!(h[CONTENT_TYPE], "application/json");
        assert_eq!(h[PROTOCOL_VERSION_HEADER], "2026-07-28");
        assert_eq!(h[METHOD_HEADER], "tasks/get");
        assert_eq!(h[NAME_HEADER], "t-1");
        assert_eq!(h.len(), 5, "{h:?}");
        let h = for_message(&HeaderMap::new(), "tools/list", "v", None, &[]).unwrap();
        assert!(h.get(NAME_HEADER).is_none());
    }

    #[test]
    fn the_arguments_of_a_call_are_read_from_its_params() {
        let json = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu"}}}"#;
        assert_eq!(call_arguments(json), Some(json!({"region": "eu"})));
        assert_eq!(call_arguments(r#"{"params":{"name":"t"}}"#), None);
        assert_eq!(call_arguments("not json"), None);
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
