//! What the test server answers for resources, resource templates, prompts
//! and completion, and the capabilities it advertises for them.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::TestServer;
use super::wire::{input_required, input_responses, invalid, sort_answers};
use crate::protocol::{CompletionRef, RpcError};

pub(super) const RESOURCES_LIST: &str = "resources/list";
pub(super) const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
pub(super) const RESOURCES_READ: &str = "resources/read";
pub(super) const PROMPTS_LIST: &str = "prompts/list";
pub(super) const PROMPTS_GET: &str = "prompts/get";
pub(super) const COMPLETE: &str = "completion/complete";

/// One page of `items` under `key`, from `params.cursor` (the index of the
/// first item, as a string).
pub(super) fn page_of<T: Serialize>(
    items: &[T],
    key: &str,
    params: &Value,
    page_size: usize,
) -> Result<Value, RpcError> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => cursor
            .parse::<usize>()
            .ok()
            .filter(|i| *i <= items.len())
            .ok_or_else(|| invalid("invalid cursor"))?,
        Some(_) => return Err(invalid("invalid cursor")),
    };
    let end = start.saturating_add(page_size).min(items.len());
    let mut body = json!({ key: &items[start..end] });
    if end < items.len() {
        body["nextCursor"] = json!(end.to_string());
    }
    Ok(body)
}

/// Whether a `prompts/get` or `resources/read` may be answered.
pub(super) enum Asked {
    /// Not yet: this `input_required` result is the answer.
    Round(Value),
    /// Yes, with the answers to the input it asked for first, if any.
    Answered(Option<Map<String, Value>>),
}

impl TestServer {
    /// Whether `method` is one of these families and the server offers it.
    pub(super) fn offers(&self, method: &str) -> bool {
        match method {
            RESOURCES_LIST | RESOURCES_TEMPLATES_LIST | RESOURCES_READ => self.has_resources(),
            PROMPTS_LIST | PROMPTS_GET => !self.config.prompts.is_empty(),
            COMPLETE => !self.config.completions.is_empty(),
            _ => false,
        }
    }

    fn has_resources(&self) -> bool {
        !self.config.resources.is_empty() || !self.config.resource_templates.is_empty()
    }

    /// Whether listen streams accept `resourceSubscriptions`.
    pub(super) fn accepts_resource_subscriptions(&self) -> bool {
        self.has_resources() && self.config.resource_subscribe
    }

    /// The capabilities advertised for these families, added to `caps`.
    pub(super) fn add_capabilities(&self, caps: &mut Map<String, Value>) {
        if self.has_resources() {
            caps.insert(
                "resources".into(),
                json!({ "subscribe": self.config.resource_subscribe, "listChanged": true }),
            );
        }
        if !self.config.prompts.is_empty() {
            caps.insert("prompts".into(), json!({ "listChanged": true }));
        }
        if !self.config.completions.is_empty() {
            caps.insert("completions".into(), json!({}));
        }
    }

    /// The result of one request of these families (before `resultType`).
    pub(super) fn answer(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let size = self.config.page_size;
        match method {
            RESOURCES_LIST => {
                let listed: Vec<_> = self.config.resources.iter().map(|(r, _)| r).collect();
                page_of(&listed, "resources", params, size)
            }
            RESOURCES_TEMPLATES_LIST => page_of(
                &self.config.resource_templates,
                "resourceTemplates",
                params,
                size,
            ),
            RESOURCES_READ => {
                let uri = string(params, "uri")?;
                let (_, contents) = self
                    .config
                    .resources
                    .iter()
                    .find(|(r, _)| r.uri == uri)
                    .ok_or_else(|| invalid(format!("resource not found: {uri}")))?;
                Ok(json!({ "contents": [contents] }))
            }
            PROMPTS_LIST => {
                let listed: Vec<_> = self.config.prompts.iter().map(|(p, _)| p).collect();
                page_of(&listed, "prompts", params, size)
            }
            PROMPTS_GET => self.get_prompt(params),
            COMPLETE => self.complete(params),
            _ => Err(invalid(format!(
                "not a resource or prompt method: {method}"
            ))),
        }
    }

    /// Whether a `prompts/get` or `resources/read` must first be answered
    /// with `input_required`: a prompt or resource given input to ask for
    /// is answered once a retry carries a valid response to every key and
    /// echoes the `requestState` (`"{method} {name}"`); until then each
    /// retry is asked again for the keys still missing.
    pub(super) fn ask_first(&self, method: &str, params: &Value) -> Result<Asked, RpcError> {
        let key = match method {
            PROMPTS_GET => "name",
            RESOURCES_READ => "uri",
            _ => return Ok(Asked::Answered(None)),
        };
        let name = string(params, key)?;
        let Some((_, _, requests)) = self
            .config
            .inputs_first
            .iter()
            .find(|(m, n, _)| m == method && n == name)
        else {
            return Ok(Asked::Answered(None));
        };
        let state = format!("{method} {name}");
        let responses = input_responses(params)?;
        if let Some(sent) = params.get("requestState")
            && sent.as_str() != Some(state.as_str())
        {
            return Err(invalid("requestState was altered"));
        }
        let (answers, missing) = sort_answers(requests, responses)?;
        if missing.is_empty() {
            return Ok(Asked::Answered(Some(answers)));
        }
        Ok(Asked::Round(input_required(&missing, Some(&state))))
    }

    fn get_prompt(&self, params: &Value) -> Result<Value, RpcError> {
        let name = string(params, "name")?;
        let (prompt, result) = self
            .config
            .prompts
            .iter()
            .find(|(p, _)| p.name == name)
            .ok_or_else(|| invalid(format!("unknown prompt: {name}")))?;
        let given = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) if map.values().all(Value::is_string) => map.clone(),
            Some(_) => return Err(invalid("prompt arguments must be strings")),
        };
        for argument in prompt.arguments.iter().flatten() {
            if argument.required == Some(true) && !given.contains_key(&argument.name) {
                return Err(invalid(format!("missing argument: {}", argument.name)));
            }
        }
        let mut body = serde_json::to_value(result).unwrap_or_default();
        if let Some(Value::Array(messages)) = body.get_mut("messages") {
            for message in messages {
                if let Some(Value::String(text)) = message.pointer_mut("/content/text") {
                    *text = fill(text, &given);
                }
            }
        }
        body["_meta"] = json!({ "arguments": given });
        Ok(body)
    }

    fn complete(&self, params: &Value) -> Result<Value, RpcError> {
        let reference: CompletionRef = params
            .get("ref")
            .and_then(|r| serde_json::from_value(r.clone()).ok())
            .ok_or_else(|| invalid("completion/complete needs a `ref`"))?;
        let argument = params
            .get("argument")
            .ok_or_else(|| invalid("completion/complete needs an `argument`"))?;
        let name = string(argument, "name")?;
        let typed = string(argument, "value")?;
        let offered = self
            .config
            .completions
            .iter()
            .find(|(r, a, _)| *r == reference && a == name);
        let Some((_, _, completion)) = offered else {
            return Ok(json!({ "completion": { "values": [] } }));
        };
        let mut found = completion.clone();
        found.values.retain(|v| v.starts_with(typed));
        Ok(json!({ "completion": found }))
    }
}

/// A string member of `params`, else `-32602`.
fn string<'p>(params: &'p Value, key: &str) -> Result<&'p str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("a string `{key}` is required")))
}

/// `text` with each `{name}` of an argument given replaced by its value.
fn fill(text: &str, given: &Map<String, Value>) -> String {
    given.iter().fold(text.to_owned(), |text, (name, value)| {
        text.replace(&format!("{{{name}}}"), value.as_str().unwrap_or_default())
    })
}
