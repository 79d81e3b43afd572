//! Checks that an answer fits the request it answers.

use std::fmt;

use serde_json::Value;

use crate::protocol::{ElicitAction, ElicitRequest, InputRequest, InputResponse};

/// Why an answer does not fit the request it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidAnswer {
    reason: String,
}

impl InvalidAnswer {
    fn new(reason: impl Into<String>) -> Self {
        InvalidAnswer {
            reason: reason.into(),
        }
    }

    /// What is wrong, for people.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for InvalidAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for InvalidAnswer {}

/// Checks `response` against `request`; [`InvalidAnswer`] says what is wrong.
///
/// - an elicitation answers an elicitation, a sampling result a sampling
///   request, roots a roots request;
/// - form: content only with `accept`; every `required` field of the
///   requested schema present; values are strings, numbers, booleans or
///   arrays of strings;
/// - URL: no content;
/// - sampling: `role` is `user` or `assistant`, `model` is not empty,
///   `content` is an object with a `type`;
/// - roots: every URI starts with `file://`.
///
/// # Errors
///
/// [`InvalidAnswer`] when the answer does not fit, saying why.
pub fn validate(request: &InputRequest, response: &InputResponse) -> Result<(), InvalidAnswer> {
    check(request, response).map_err(InvalidAnswer::new)
}

fn check(request: &InputRequest, response: &InputResponse) -> Result<(), String> {
    match (request, response) {
        (
            InputRequest::Elicitation(ElicitRequest::Form {
                requested_schema, ..
            }),
            InputResponse::Elicit(r),
        ) => match (r.action, &r.content) {
            (ElicitAction::Accept, content) => {
                let empty = serde_json::Map::new();
                let content = content.as_ref().unwrap_or(&empty);
                for (k, v) in content {
                    let ok = match v {
                        Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
                        Value::Array(items) => items.iter().all(Value::is_string),
                        _ => false,
                    };
                    if !ok {
                        return Err(format!(
                            "field {k:?} is not a string, number, boolean or list of strings"
                        ));
                    }
                }
                if let Some(required) = requested_schema.get("required").and_then(Value::as_array) {
                    for name in required.iter().filter_map(Value::as_str) {
                        if !content.contains_key(name) {
                            return Err(format!("required field {name:?} is missing"));
                        }
                    }
                }
                Ok(())
            }
            (_, Some(_)) => Err("content is only sent with action accept".into()),
            (_, None) => Ok(()),
        },
        (InputRequest::Elicitation(ElicitRequest::Url { .. }), InputResponse::Elicit(r)) => {
            if r.content.is_some() {
                Err("a URL elicitation is answered without content".into())
            } else {
                Ok(())
            }
        }
        (InputRequest::Sampling(_), InputResponse::Sampling(r)) => {
            if r.role != "assistant" && r.role != "user" {
                return Err(format!("role {:?} is neither user nor assistant", r.role));
            }
            if r.model.is_empty() {
                return Err("model is empty".into());
            }
            let typed = |v: &Value| v.get("type").is_some_and(Value::is_string);
            let ok = match &r.content {
                Value::Object(_) => typed(&r.content),
                Value::Array(items) => !items.is_empty() && items.iter().all(typed),
                _ => false,
            };
            if ok {
                Ok(())
            } else {
                Err("content is not a content block".into())
            }
        }
        (InputRequest::Roots(_), InputResponse::Roots(r)) => {
            match r.roots.iter().find(|root| !root.uri.starts_with("file://")) {
                Some(root) => Err(format!("root {:?} is not a file:// URI", root.uri)),
                None => Ok(()),
            }
        }
        (InputRequest::Other { method, .. }, _) => {
            Err(format!("{method} is not a request this client can answer"))
        }
        (request, _) => Err(format!(
            "the answer is of the wrong kind for {}",
            request.method()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{CreateMessageResult, ElicitResult, ListRootsResult, Root};
    use serde_json::json;

    fn form() -> InputRequest {
        InputRequest::form(
            "Confirm?",
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
        )
    }

    #[test]
    fn form_answers() {
        assert!(validate(&form(), &ElicitResult::accept(json!({"ok": true})).into()).is_ok());
        assert!(validate(&form(), &ElicitResult::decline().into()).is_ok());
        assert!(validate(&form(), &ElicitResult::cancel().into()).is_ok());
        let missing = validate(&form(), &ElicitResult::accept(json!({})).into());
        assert!(missing.unwrap_err().reason().contains("\"ok\""));
        let nested = validate(
            &form(),
            &ElicitResult::accept(json!({"ok": {"x": 1}})).into(),
        );
        assert!(nested.is_err());
        let mut decline = ElicitResult::decline();
        decline.content = Some(serde_json::Map::new());
        assert!(validate(&form(), &decline.into()).is_err());
    }

    #[test]
    fn url_answers_carry_no_content() {
        let url = InputRequest::url("Sign in", "https://example.com/auth");
        assert!(validate(&url, &ElicitResult::accept_empty().into()).is_ok());
        assert!(validate(&url, &ElicitResult::accept(json!({"a": "b"})).into()).is_err());
    }

    #[test]
    fn kinds_must_match() {
        let roots = ListRootsResult { roots: vec![] };
        assert!(validate(&form(), &roots.clone().into()).is_err());
        let req = InputRequest::Roots(Default::default());
        assert!(validate(&req, &roots.into()).is_ok());
        let bad = ListRootsResult {
            roots: vec![Root {
                uri: "/tmp".into(),
                name: None,
            }],
        };
        assert!(validate(&req, &bad.into()).is_err());
    }

    #[test]
    fn sampling_answers() {
        let req: InputRequest = serde_json::from_value(json!({
            "method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 10}
        }))
        .unwrap();
        let good = CreateMessageResult {
            role: "assistant".into(),
            content: json!({"type": "text", "text": "hi"}),
            model: "m".into(),
            stop_reason: None,
        };
        assert!(validate(&req, &good.clone().into()).is_ok());
        let no_model = CreateMessageResult {
            model: String::new(),
            ..good.clone()
        };
        assert!(validate(&req, &no_model.into()).is_err());
        let bad_role = CreateMessageResult {
            role: "system".into(),
            ..good
        };
        assert!(validate(&req, &bad_role.into()).is_err());
    }
}
