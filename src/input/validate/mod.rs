//! Checks that an answer fits the request it answers: the kinds of answer
//! here, a form's content against its schema in `form.rs`, the string
//! formats a form may name in `formats.rs`.

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
/// - form: content only with `accept`, checked against the requested
///   schema (a flat object schema whose properties are primitives):
///   - the schema is a JSON object (its `type`, if given, `object`) and its
///     `properties`, if given, an object; otherwise the answer is refused;
///   - at most 1,000 fields, and no string longer than 1 MiB;
///   - when the schema has `properties`, every field is one of them;
///     without, values are strings, numbers, booleans or lists of strings;
///   - every `required` field is present;
///   - `type: "string"`: a string, `minLength`/`maxLength` in characters,
///     `format` `email`, `uri`, `date` (`YYYY-MM-DD`, a day that exists) or
///     `date-time` (RFC 3339); other formats are not checked;
///   - `type: "number"`: a number; `type: "integer"`: a number without a
///     fractional part (`3.0` is one); `minimum`/`maximum` inclusive;
///   - `type: "boolean"`: a boolean;
///   - `enum`, or the `const`s of `oneOf`/`anyOf` (choices with titles):
///     the value is one of them;
///   - `type: "array"` (multiple choice): a list of strings, each one of
///     `items.enum` or the `const`s of `items.oneOf`/`items.anyOf` when
///     given, none twice, `minItems`/`maxItems`;
///   - a property without a known `type`: the keywords that fit the value
///     apply; its value is still a primitive or a list of strings;
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
            (ElicitAction::Accept, content) => check_form(requested_schema, content.as_ref()),
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

mod form;
mod formats;

use form::check_form;

#[cfg(test)]
mod tests;
