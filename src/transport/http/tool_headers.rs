//! Tool arguments mirrored into `Mcp-Param-{Name}` headers.
//!
//! A tool's `inputSchema` may annotate properties with `x-mcp-header`; a
//! call then carries each annotated argument in a header too, so that
//! proxies can route on it without reading the body. The transport learns
//! the annotations from the `tools/list` replies that pass through it,
//! validates them, and drops from the reply every tool whose annotations
//! are invalid (the client never sees it), as the specification requires.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use reqwest::header::HeaderName;
use serde_json::{Map, Value};

/// The prefix of the headers mirrored from annotated tool arguments.
pub(super) const PARAM_PREFIX: &str = "mcp-param-";

/// The annotation keyword.
const KEYWORD: &str = "x-mcp-header";

/// Keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "items",
    "additionalItems",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value is an array of schemas.
const SCHEMA_LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to schemas (`properties` aside).
const SCHEMA_MAP: &[&str] = &[
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// One annotated property: the header it goes in and where it sits in the
/// arguments (a chain of property names from the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HeaderParam {
    pub(super) header: HeaderName,
    pub(super) path: Vec<String>,
}

/// Reads and validates the `x-mcp-header` annotations of one input schema.
///
/// Valid annotations sit on a property reached from the root through
/// `properties` alone, whose `type` is `string`, `integer` or `boolean`
/// (optionally with `null`), and name an RFC 9110 token that no other
/// annotation of the schema names (ignoring case). Any other annotation
/// makes the whole tool invalid; the error says why.
pub(super) fn annotations(schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    walk(schema, Some(Vec::new()), &mut found)?;
    let mut seen: Vec<String> = Vec::new();
    for p in &found {
        let lower = p.header.as_str().to_owned();
        if seen.contains(&lower) {
            return Err(format!(
                "two properties share the x-mcp-header {:?}",
                &lower[PARAM_PREFIX.len()..]
            ));
        }
        seen.push(lower);
    }
    Ok(found)
}

/// Walks one schema. `path` is `Some` while the schema is reached from the
/// root through `properties` only.
fn walk(
    schema: &Value,
    path: Option<Vec<String>>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Ok(()); // `true`/`false` schemas carry no annotation
    };
    if let Some(name) = schema.get(KEYWORD) {
        found.push(check(schema, name, path.as_deref())?);
    }
    for (keyword, value) in schema {
        match keyword.as_str() {
            "properties" => {
                for (prop, sub) in value.as_object().into_iter().flatten() {
                    let sub_path = path.as_ref().map(|p| {
                        let mut p = p.clone();
                        p.push(prop.clone());
                        p
                    });
                    walk(sub, sub_path, found)?;
                }
            }
            k if ONE_SCHEMA.contains(&k) => walk(value, None, found)?,
            k if SCHEMA_LIST.contains(&k) => {
                for sub in value.as_array().into_iter().flatten() {
                    walk(sub, None, found)?;
                }
            }
            k if SCHEMA_MAP.contains(&k) => {
                for sub in value.as_object().into_iter().flatten().map(|(_, s)| s) {
                    walk(sub, None, found)?;
                }
            }
            // Other keywords (`const`, `default`, `enum`, `examples`, …) hold
            // data, not schemas: a key named x-mcp-header there means nothing.
            _ => {}
        }
    }
    Ok(())
}

fn check(
    schema: &Map<String, Value>,
    name: &Value,
    path: Option<&[String]>,
) -> Result<HeaderParam, String> {
    let Some(name) = name.as_str() else {
        return Err("an x-mcp-header value is not a string".into());
    };
    if name.is_empty() {
        return Err("an x-mcp-header is empty".into());
    }
    if !name.bytes().all(is_tchar) {
        return Err(format!(
            "the x-mcp-header {name:?} is not an HTTP token (no spaces, separators or non-ASCII)"
        ));
    }
    let path = match path {
        Some([]) => return Err(format!("the x-mcp-header {name:?} is on the root schema")),
        Some(path) => path.to_vec(),
        None => {
            return Err(format!(
                "the x-mcp-header {name:?} is not reached through `properties` alone"
            ));
        }
    };
    if !primitive_type(schema.get("type")) {
        return Err(format!(
            "the x-mcp-header {name:?} is on a property whose type is not string, integer or boolean"
        ));
    }
    let header = HeaderName::from_bytes(format!("{PARAM_PREFIX}{name}").as_bytes())
        .map_err(|_| format!("the x-mcp-header {name:?} makes no valid header name"))?;
    Ok(HeaderParam { header, path })
}

/// `string`, `integer` or `boolean`, alone or with `null`.
fn primitive_type(ty: Option<&Value>) -> bool {
    let ok = |t: &str| matches!(t, "string" | "integer" | "boolean");
    match ty {
        Some(Value::String(t)) => ok(t),
        Some(Value::Array(types)) => {
            let mut non_null = types.iter().filter(|t| t.as_str() != Some("null"));
            matches!((non_null.next(), non_null.next()), (Some(Value::String(t)), None) if ok(t))
        }
        _ => false,
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// What the transport knows of each tool's annotations, from the
/// `tools/list` replies it has seen.
#[derive(Debug, Default)]
pub(super) struct Registry {
    tools: RwLock<HashMap<String, Arc<[HeaderParam]>>>,
}

impl Registry {
    /// The annotations of `tool`; none when it has none or was never listed.
    pub(super) fn params(&self, tool: &str) -> Option<Arc<[HeaderParam]>> {
        self.tools.read().unwrap().get(tool).cloned()
    }

    /// Learns the tools of one `tools/list` response and returns the
    /// response without the invalid ones (`None` when nothing changed).
    pub(super) fn learn(&self, response: &str) -> Option<String> {
        let mut message: Value = serde_json::from_str(response).ok()?;
        let tools = message
            .get_mut("result")?
            .get_mut("tools")?
            .as_array_mut()?;
        let before = tools.len();
        let mut learned = Vec::new();
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match annotations(schema) {
                Ok(params) => {
                    learned.push((name.to_owned(), params));
                    true
                }
                Err(why) => {
                    tracing::warn!(
                        tool = name,
                        "dropping a tool with invalid x-mcp-header annotations: {why}"
                    );
                    false
                }
            }
        });
        let dropped = before != tools.len();
        {
            let mut map = self.tools.write().unwrap();
            for (name, params) in learned {
                if params.is_empty() {
                    map.remove(&name);
                } else {
                    map.insert(name, params.into());
                }
            }
        }
        dropped.then(|| message.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    fn err(s: Value) -> String {
        annotations(&s).unwrap_err()
    }

    #[test]
    fn reads_nested_annotations_with_their_paths() {
        let s = schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {
                "tier": {"type": ["integer", "null"], "x-mcp-header": "Tier"}
            }},
            "plain": {"type": "number"}
        }));
        let mut found = annotations(&s).unwrap();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(found[0].header.as_str(), "mcp-param-tier");
        assert_eq!(found[0].path, ["opts", "tier"]);
        assert_eq!(found[1].header.as_str(), "mcp-param-region");
        assert_eq!(found[1].path, ["region"]);
    }

    #[test]
    fn rejects_what_the_spec_rejects() {
        let one = |prop: Value| err(schema(json!({ "p": prop })));
        assert!(one(json!({"type": "string", "x-mcp-header": ""})).contains("empty"));
        for bad in ["My Region", "Region:Primary", "Région", "Region\t1"] {
            assert!(
                one(json!({"type": "string", "x-mcp-header": bad})).contains("token"),
                "{bad}"
            );
        }
        for ty in ["object", "array", "null", "number"] {
            assert!(
                one(json!({"type": ty, "x-mcp-header": "X"})).contains("type"),
                "{ty}"
            );
        }
        assert!(one(json!({"x-mcp-header": "X"})).contains("type"));
        let dup = err(schema(json!({
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"}
        })));
        assert!(dup.contains("share"), "{dup}");
    }

    #[test]
    fn annotations_off_the_properties_chain_are_invalid() {
        let inner = json!({"type": "string", "x-mcp-header": "X"});
        for s in [
            json!({"type": "object", "x-mcp-header": "Root"}),
            json!({"type": "array", "items": inner}),
            json!({"type": "object", "anyOf": [inner]}),
            json!({"type": "object", "$defs": {"x": inner}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": inner}}}),
            json!({"type": "object", "if": inner, "then": {}}),
        ] {
            assert!(annotations(&s).is_err(), "{s}");
        }
    }

    #[test]
    fn data_keywords_are_not_schemas() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "object", "default": {"x-mcp-header": "Nope"}, "const": {"x-mcp-header": 1}}
        }, "examples": [{"x-mcp-header": ""}]});
        assert_eq!(annotations(&s).unwrap(), vec![]);
    }

    #[test]
    fn registry_drops_invalid_tools_and_keeps_the_rest() {
        let reply = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "ok", "inputSchema": schema(json!({"r": {"type": "string", "x-mcp-header": "Region"}}))},
            {"name": "bad", "inputSchema": schema(json!({"r": {"type": "number", "x-mcp-header": "N"}}))},
            {"name": "plain", "inputSchema": {"type": "object", "$ref": "https://example.com/s.json"}}
        ]}});
        let registry = Registry::default();
        let rewritten: Value =
            serde_json::from_str(&registry.learn(&reply.to_string()).unwrap()).unwrap();
        let names: Vec<_> = rewritten["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ok", "plain"]);
        assert_eq!(
            rewritten["result"]["tools"][1]["inputSchema"]["$ref"],
            "https://example.com/s.json"
        );
        assert_eq!(registry.params("ok").unwrap()[0].path, ["r"]);
        assert!(registry.params("plain").is_none() && registry.params("bad").is_none());
        // Nothing dropped: the reply passes through untouched.
        let clean = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}});
        assert_eq!(registry.learn(&clean.to_string()), None);
    }
}
