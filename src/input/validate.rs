//! Checks that an answer fits the request it answers.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Number, Value};

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

/// The most fields an accepted form answer may have.
const MAX_FIELDS: usize = 1_000;
/// The longest string value an answer may carry, in bytes (1 MiB).
const MAX_TEXT: usize = 1 << 20;
/// How many choices an error message lists before "…".
const LISTED: usize = 10;
/// How many characters of a name or value an error message quotes.
const QUOTED: usize = 64;

type Object = Map<String, Value>;

/// An accepted form answer against the flat object schema it answers.
fn check_form(schema: &Value, content: Option<&Object>) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Err("the requested schema is not an object".into());
    };
    if let Some(ty) = schema.get("type")
        && ty != "object"
    {
        return Err(format!(
            "the requested schema is not an object (its type is {})",
            show(ty)
        ));
    }
    let properties = match schema.get("properties") {
        None => None,
        Some(Value::Object(properties)) => Some(properties),
        Some(_) => return Err("the requested schema's properties are not an object".into()),
    };
    let empty = Object::new();
    let content = content.unwrap_or(&empty);
    if content.len() > MAX_FIELDS {
        return Err(format!(
            "the answer has {} fields, more than the {MAX_FIELDS} accepted",
            content.len()
        ));
    }
    for (name, value) in content {
        match properties {
            Some(properties) => match properties.get(name) {
                Some(field) => check_field(name, value, field)?,
                None => return Err(format!("field {} is not in the form", quote(name))),
            },
            None => check_primitive(name, value)?,
        }
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !content.contains_key(name) {
                return Err(format!("required field {} is missing", quote(name)));
            }
        }
    }
    Ok(())
}

/// A field of a form without `properties`: any primitive value.
fn check_primitive(name: &str, value: &Value) -> Result<(), String> {
    match value {
        Value::String(s) => check_size(name, s),
        Value::Number(_) | Value::Bool(_) => Ok(()),
        Value::Array(items) => check_strings(name, items),
        _ => Err(not_primitive(name)),
    }
}

fn not_primitive(name: &str) -> String {
    format!(
        "field {} is not a string, number, boolean or list of strings",
        quote(name)
    )
}

/// One field against its property schema. Without a known `type`, the
/// keywords that fit the value's kind apply, as in JSON Schema.
fn check_field(name: &str, value: &Value, schema: &Value) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Err(format!(
            "field {}: its schema in the form is not an object",
            quote(name)
        ));
    };
    let ty = match schema.get("type").and_then(Value::as_str) {
        Some(ty @ ("string" | "number" | "integer" | "boolean" | "array")) => Some(ty),
        _ => None,
    };
    match (ty, value) {
        (Some("string") | None, Value::String(s)) => check_string(name, s, schema)?,
        (Some("number") | None, Value::Number(n)) => check_number(name, n, schema)?,
        (Some("integer"), Value::Number(n)) if is_integer(n) => check_number(name, n, schema)?,
        (Some("integer"), Value::Number(n)) => {
            return Err(format!("field {}: {n} is not an integer", quote(name)));
        }
        (Some("boolean") | None, Value::Bool(_)) => {}
        (Some("array") | None, Value::Array(items)) => return check_array(name, items, schema),
        (None, _) => return Err(not_primitive(name)),
        (Some(ty), _) => {
            let expected = match ty {
                "integer" => "an integer",
                "array" => "a list of strings",
                "number" => "a number",
                "boolean" => "a boolean",
                _ => "a string",
            };
            return Err(format!(
                "field {}: expected {expected}, got {}",
                quote(name),
                kind(value)
            ));
        }
    }
    check_choices(name, value, schema)
}

fn check_size(name: &str, s: &str) -> Result<(), String> {
    if s.len() > MAX_TEXT {
        Err(format!(
            "field {}: the text is {} bytes, more than the 1 MiB accepted",
            quote(name),
            s.len()
        ))
    } else {
        Ok(())
    }
}

/// `minLength` and `maxLength` (in characters) and `format`.
fn check_string(name: &str, s: &str, schema: &Object) -> Result<(), String> {
    check_size(name, s)?;
    let min = schema.get("minLength").and_then(Value::as_u64);
    let max = schema.get("maxLength").and_then(Value::as_u64);
    if min.is_some() || max.is_some() {
        let length = s.chars().count() as u64;
        if let Some(min) = min
            && length < min
        {
            return Err(format!(
                "field {}: {} is {} long, shorter than the minimum {min}",
                quote(name),
                quote(s),
                count(length, "character")
            ));
        }
        if let Some(max) = max
            && length > max
        {
            return Err(format!(
                "field {}: {} is {} long, longer than the maximum {max}",
                quote(name),
                quote(s),
                count(length, "character")
            ));
        }
    }
    let (ok, what) = match schema.get("format").and_then(Value::as_str) {
        Some("email") => (is_email(s), "an email address"),
        Some("uri") => (is_uri(s), "a URI"),
        Some("date") => (is_date(s.as_bytes()), "a date (YYYY-MM-DD)"),
        Some("date-time") => (is_date_time(s.as_bytes()), "a date-time (RFC 3339)"),
        _ => (true, ""),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("field {}: {} is not {what}", quote(name), quote(s)))
    }
}

/// `minimum` and `maximum`, both inclusive.
fn check_number(name: &str, n: &Number, schema: &Object) -> Result<(), String> {
    if let Some(Value::Number(min)) = schema.get("minimum")
        && compare(n, min) == Some(Ordering::Less)
    {
        return Err(format!(
            "field {}: {n} is below the minimum {min}",
            quote(name)
        ));
    }
    if let Some(Value::Number(max)) = schema.get("maximum")
        && compare(n, max) == Some(Ordering::Greater)
    {
        return Err(format!(
            "field {}: {n} is above the maximum {max}",
            quote(name)
        ));
    }
    Ok(())
}

fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// Whole numbers exactly, others as `f64`.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    let whole = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (whole(a), whole(b)) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn check_strings(name: &str, items: &[Value]) -> Result<(), String> {
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) => check_size(name, s)?,
            other => {
                return Err(format!(
                    "field {}: expected a list of strings, but item {} is {}",
                    quote(name),
                    i + 1,
                    kind(other)
                ));
            }
        }
    }
    Ok(())
}

/// A multiple choice: strings, `minItems`, `maxItems`, no choice twice,
/// each one of `items.enum` or the consts of `items.oneOf`/`items.anyOf`.
fn check_array(name: &str, items: &[Value], schema: &Object) -> Result<(), String> {
    check_strings(name, items)?;
    let chosen = items.len() as u64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && chosen < min
    {
        return Err(format!(
            "field {}: {} chosen, fewer than the minimum {min}",
            quote(name),
            count(chosen, "item")
        ));
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && chosen > max
    {
        return Err(format!(
            "field {}: {} chosen, more than the maximum {max}",
            quote(name),
            count(chosen, "item")
        ));
    }
    let mut seen = HashSet::with_capacity(items.len());
    for (item, s) in items.iter().filter_map(|v| Some((v, v.as_str()?))) {
        if !seen.insert(s) {
            return Err(format!(
                "field {}: {} is chosen more than once",
                quote(name),
                show(item)
            ));
        }
    }
    if let Some(Value::Object(each)) = schema.get("items") {
        for choices in choice_lists(each) {
            let allowed: HashSet<&str> = choices.iter().filter_map(|c| c.as_str()).collect();
            if let Some(item) = items
                .iter()
                .find(|item| item.as_str().is_none_or(|s| !allowed.contains(s)))
            {
                return Err(not_one_of(name, item, &choices));
            }
        }
    }
    Ok(())
}

/// The lists of choices a schema gives: `enum`, and the consts of `oneOf`
/// and `anyOf` (choices with titles). Empty lists are left out.
fn choice_lists(schema: &Object) -> impl Iterator<Item = Vec<&Value>> {
    let listed = move |key: &str| schema.get(key).and_then(Value::as_array);
    let plain = listed("enum").map(|list| list.iter().collect::<Vec<_>>());
    let titled = ["oneOf", "anyOf"].into_iter().filter_map(move |key| {
        listed(key).map(|list| {
            list.iter()
                .filter_map(|choice| choice.get("const"))
                .collect::<Vec<_>>()
        })
    });
    plain
        .into_iter()
        .chain(titled)
        .filter(|list| !list.is_empty())
}

fn check_choices(name: &str, value: &Value, schema: &Object) -> Result<(), String> {
    for choices in choice_lists(schema) {
        if !choices.contains(&value) {
            return Err(not_one_of(name, value, &choices));
        }
    }
    Ok(())
}

fn not_one_of(name: &str, value: &Value, choices: &[&Value]) -> String {
    let mut listed: Vec<String> = choices.iter().take(LISTED).map(|c| show(c)).collect();
    if choices.len() > LISTED {
        listed.push("…".into());
    }
    format!(
        "field {}: {} is not one of {}",
        quote(name),
        show(value),
        listed.join(", ")
    )
}

/// `s` quoted, cut after [`QUOTED`] characters.
fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTED) {
        Some((end, _)) => format!("{:?}…", &s[..end]),
        None => format!("{s:?}"),
    }
}

/// A value for an error message: strings quoted, anything cut short.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        other => {
            let text = other.to_string();
            match text.char_indices().nth(QUOTED) {
                Some((end, _)) => format!("{}…", &text[..end]),
                None => text,
            }
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// An address `local@domain`: an unquoted local part without spaces,
/// specials or stray dots (or a quoted one), and a domain of letter, digit
/// and hyphen labels (or an address literal in brackets).
fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        !local.chars().any(char::is_control)
    } else {
        !local.is_empty()
            && !local.starts_with('.')
            && !local.ends_with('.')
            && !local.contains("..")
            && local
                .chars()
                .all(|c| !c.is_whitespace() && !c.is_control() && !"()<>[]:;@\\,\"".contains(c))
    };
    let domain_ok = match domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        Some(literal) => {
            !literal.is_empty()
                && literal
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == ':')
        }
        None => {
            !domain.is_empty()
                && domain.len() <= 253
                && domain.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                        && label.chars().all(|c| c.is_alphanumeric() || c == '-')
                })
        }
    };
    local.len() <= 64 && local_ok && domain_ok
}

/// An absolute URI (RFC 3986): a scheme, `:`, then only URI characters,
/// `%` followed by two hex digits.
fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut scheme = scheme.bytes();
    if !scheme.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !scheme.all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c))
    {
        return false;
    }
    let rest = rest.as_bytes();
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'%' => {
                let hex = |at: usize| rest.get(at).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return false;
                }
                i += 3;
            }
            c if c.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&c) => i += 1,
            _ => return false,
        }
    }
    true
}

/// The value of a run of ASCII digits (at most four here).
fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// `YYYY-MM-DD`, a day that exists.
fn is_date(b: &[u8]) -> bool {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `hh:mm`, hours 00–23 and minutes 00–59.
fn is_hours_minutes(b: &[u8]) -> bool {
    b.len() == 5
        && b[2] == b':'
        && digits(&b[..2]).is_some_and(|h| h <= 23)
        && digits(&b[3..]).is_some_and(|m| m <= 59)
}

/// RFC 3339 `date-time`: a date, `T`, `hh:mm:ss` (a leap second 60
/// allowed), an optional fraction, then `Z` or `±hh:mm` (`t` and `z` may
/// be lower case).
fn is_date_time(b: &[u8]) -> bool {
    if b.len() < 20 || !is_date(&b[..10]) || !matches!(b[10], b'T' | b't') {
        return false;
    }
    let (time, mut rest) = b[11..].split_at(8);
    let clock = is_hours_minutes(&time[..5])
        && time[5] == b':'
        && digits(&time[6..]).is_some_and(|s| s <= 60);
    if !clock {
        return false;
    }
    if let [b'.', fraction @ ..] = rest {
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', offset @ ..] => is_hours_minutes(offset),
        _ => false,
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

    /// The reason an accepted `content` is refused for `schema`, if it is.
    fn answer(schema: Value, content: Value) -> Result<(), String> {
        let request = InputRequest::form("?", schema);
        validate(&request, &ElicitResult::accept(content).into()).map_err(|e| e.reason().to_owned())
    }

    /// The answer `{"f": value}` to a form whose one field `f` is `property`.
    fn field(property: Value, value: Value) -> Result<(), String> {
        answer(
            json!({"type": "object", "properties": {"f": property}}),
            json!({ "f": value }),
        )
    }

    #[test]
    fn schema_that_is_not_an_object_is_refused() {
        for schema in [json!("string"), json!(["a"]), json!(null), json!(7)] {
            let request = InputRequest::form("?", schema.clone());
            let why = validate(&request, &ElicitResult::accept_empty().into()).unwrap_err();
            assert_eq!(
                why.reason(),
                "the requested schema is not an object",
                "{schema}"
            );
            let why = answer(schema, json!({"a": "b"})).unwrap_err();
            assert_eq!(why, "the requested schema is not an object");
        }
        let why = answer(json!({"type": "string"}), json!({})).unwrap_err();
        assert!(why.contains("not an object"), "{why}");
        let why = answer(json!({"type": "object", "properties": "a"}), json!({})).unwrap_err();
        assert!(why.contains("properties are not an object"), "{why}");
        let why = answer(json!({"properties": []}), json!({"a": 1})).unwrap_err();
        assert!(why.contains("properties are not an object"), "{why}");
        // Declining never looks at the schema.
        let request = InputRequest::form("?", json!("string"));
        assert!(validate(&request, &ElicitResult::decline().into()).is_ok());
    }

    #[test]
    fn property_schema_that_is_not_an_object_is_refused() {
        let why = field(json!(true), json!("x")).unwrap_err();
        assert!(why.starts_with("field \"f\": "), "{why}");
        assert!(why.contains("not an object"), "{why}");
    }

    #[test]
    fn accept_without_content() {
        let request = |schema| InputRequest::form("?", schema);
        let empty = || ElicitResult::accept_empty().into();
        assert!(validate(&request(json!({"type": "object"})), &empty()).is_ok());
        assert!(validate(&request(json!({})), &empty()).is_ok());
        let optional = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert!(validate(&request(optional), &empty()).is_ok());
        let required = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "required": ["a"]});
        let why = validate(&request(required), &empty()).unwrap_err();
        assert_eq!(why.reason(), "required field \"a\" is missing");
    }

    #[test]
    fn fields_outside_the_form_are_refused() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert!(answer(schema.clone(), json!({"a": "x"})).is_ok());
        assert_eq!(
            answer(schema, json!({"a": "x", "x": 1})).unwrap_err(),
            "field \"x\" is not in the form"
        );
        let none = json!({"type": "object", "properties": {}});
        assert_eq!(
            answer(none, json!({"x": true})).unwrap_err(),
            "field \"x\" is not in the form"
        );
    }

    #[test]
    fn without_properties_any_primitive_is_taken() {
        let schema = json!({"type": "object"});
        let ok = json!({"s": "x", "n": 1.5, "b": false, "l": ["a", "b"]});
        assert!(answer(schema.clone(), ok).is_ok());
        for bad in [
            json!({"o": {"x": 1}}),
            json!({"o": null}),
            json!({"o": [1]}),
        ] {
            let why = answer(schema.clone(), bad).unwrap_err();
            assert!(why.starts_with("field \"o\""), "{why}");
        }
        let required = json!({"required": ["a"]});
        assert!(answer(required.clone(), json!({"a": 1})).is_ok());
        assert!(answer(required, json!({"b": 1})).is_err());
    }

    #[test]
    fn too_many_fields_are_refused() {
        let content =
            |n: usize| Value::Object((0..n).map(|i| (format!("f{i}"), Value::from(i))).collect());
        assert!(answer(json!({"type": "object"}), content(MAX_FIELDS)).is_ok());
        let why = answer(json!({"type": "object"}), content(MAX_FIELDS + 1)).unwrap_err();
        assert_eq!(
            why,
            "the answer has 1001 fields, more than the 1000 accepted"
        );
        let why = answer(json!({"properties": {}}), content(100_000)).unwrap_err();
        assert!(why.contains("more than the 1000 accepted"), "{why}");
    }

    #[test]
    fn huge_strings_are_refused() {
        let most = "a".repeat(MAX_TEXT);
        let over = "a".repeat(MAX_TEXT + 1);
        let text = json!({"type": "string"});
        assert!(field(text.clone(), json!(most)).is_ok());
        let why = field(text, json!(over)).unwrap_err();
        assert!(why.starts_with("field \"f\": the text is"), "{why}");
        assert!(why.contains("1 MiB"), "{why}");
        assert!(why.len() < 200, "the message is short");
        let list = json!({"type": "array", "items": {"type": "string"}});
        assert!(
            field(list, json!(["a", over]))
                .unwrap_err()
                .contains("1 MiB")
        );
        assert!(
            answer(json!({}), json!({ "f": over }))
                .unwrap_err()
                .contains("1 MiB")
        );
        let why = field(json!({"type": "string", "format": "email"}), json!(over)).unwrap_err();
        assert!(why.contains("1 MiB"), "{why}");
    }

    #[test]
    fn messages_quote_long_values_short() {
        let long = "x".repeat(10_000);
        let why = field(json!({"type": "string", "format": "email"}), json!(long)).unwrap_err();
        assert!(why.len() < 200, "{why}");
        let quoted = format!("\"{}\"… is not an email address", "x".repeat(QUOTED));
        assert!(why.ends_with(&quoted), "{why}");
    }

    #[test]
    fn strings_and_their_lengths() {
        let text = json!({"type": "string", "minLength": 2, "maxLength": 3});
        assert!(field(text.clone(), json!("ab")).is_ok());
        assert!(field(text.clone(), json!("abc")).is_ok());
        // Characters, not bytes: "héé" is 3 characters in 5 bytes.
        assert!(field(text.clone(), json!("héé")).is_ok());
        assert_eq!(
            field(text.clone(), json!("a")).unwrap_err(),
            "field \"f\": \"a\" is 1 character long, shorter than the minimum 2"
        );
        assert_eq!(
            field(text.clone(), json!("abcd")).unwrap_err(),
            "field \"f\": \"abcd\" is 4 characters long, longer than the maximum 3"
        );
        assert_eq!(
            field(text.clone(), json!(12)).unwrap_err(),
            "field \"f\": expected a string, got a number"
        );
        assert!(field(text.clone(), json!(["ab"])).is_err());
        assert!(field(text, json!(null)).is_err());
    }

    #[test]
    fn email_format() {
        let email = json!({"type": "string", "format": "email"});
        for ok in [
            "ada@example.com",
            "a.b+tag@sub.example.co.uk",
            "x@localhost",
            "\"a b\"@example.com",
            "josé@exämple.de",
            "a@[192.0.2.1]",
        ] {
            assert!(field(email.clone(), json!(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "x",
            "@example.com",
            "ada@",
            "ada@@example.com",
            "a b@example.com",
            "ada@exa mple.com",
            ".ada@example.com",
            "a..b@example.com",
            "ada@example..com",
            "ada@-example.com",
            "ada@example.com.",
        ] {
            let why = field(email.clone(), json!(bad)).unwrap_err();
            assert_eq!(why, format!("field \"f\": {bad:?} is not an email address"));
        }
    }

    #[test]
    fn uri_format() {
        let uri = json!({"type": "string", "format": "uri"});
        for ok in [
            "https://example.com/a?b=c#d",
            "mailto:ada@example.com",
            "urn:isbn:0451450523",
            "file:///tmp/a%20b",
            "git+ssh://host/repo",
        ] {
            assert!(field(uri.clone(), json!(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "example.com",
            "/relative/path",
            "1http://x",
            "https://exa mple.com",
            "https://x/%zz",
            "https://x/%2",
            "https://x/é",
            ":nothing",
        ] {
            let why = field(uri.clone(), json!(bad)).unwrap_err();
            assert_eq!(why, format!("field \"f\": {bad:?} is not a URI"));
        }
    }

    #[test]
    fn date_format() {
        let date = json!({"type": "string", "format": "date"});
        for ok in [
            "2024-02-29",
            "2000-02-29",
            "2026-01-31",
            "2026-04-30",
            "2026-12-31",
        ] {
            assert!(field(date.clone(), json!(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "2026-02-30",
            "2023-02-29",
            "1900-02-29",
            "2026-04-31",
            "2026-13-01",
            "2026-00-10",
            "2026-01-00",
            "2026-4-01",
            "2026/04/01",
            "26-04-01",
            "2026-04-01T00:00:00Z",
            "２０２６-04-01",
            "",
        ] {
            let why = field(date.clone(), json!(bad)).unwrap_err();
            assert_eq!(
                why,
                format!("field \"f\": {bad:?} is not a date (YYYY-MM-DD)")
            );
        }
    }

    #[test]
    fn date_time_format() {
        let at = json!({"type": "string", "format": "date-time"});
        for ok in [
            "2026-08-01T09:00:00Z",
            "2026-08-01t09:00:00z",
            "2026-08-01T09:00:00+02:00",
            "2026-08-01T09:00:00-05:30",
            "2026-08-01T09:00:00.123Z",
            "2026-08-01T23:59:60.5+00:00",
            "2024-02-29T00:00:00.000000001-12:00",
        ] {
            assert!(field(at.clone(), json!(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "2026-08-01",
            "2026-08-01T09:00:00",
            "2026-08-01 09:00:00Z",
            "2026-08-01T24:00:00Z",
            "2026-08-01T09:60:00Z",
            "2026-08-01T09:00:61Z",
            "2026-08-01T9:00:00Z",
            "2026-08-01T09:00:00.Z",
            "2026-08-01T09:00:00+0200",
            "2026-08-01T09:00:00+24:00",
            "2026-08-01T09:00:00Z ",
            "2026-02-30T09:00:00Z",
            "2026-08-01é09:00:00Z",
            "2026-08-01T09:00:00é",
        ] {
            let why = field(at.clone(), json!(bad)).unwrap_err();
            assert_eq!(
                why,
                format!("field \"f\": {bad:?} is not a date-time (RFC 3339)")
            );
        }
    }

    #[test]
    fn unknown_formats_are_not_checked() {
        let odd = json!({"type": "string", "format": "hostname-ish"});
        assert!(field(odd, json!("anything at all")).is_ok());
    }

    #[test]
    fn single_choice_from_enum() {
        let color = json!({"type": "object", "properties":
            {"color": {"type": "string", "enum": ["red", "green"]}}});
        assert!(answer(color.clone(), json!({"color": "green"})).is_ok());
        assert_eq!(
            answer(color, json!({"color": "pink"})).unwrap_err(),
            "field \"color\": \"pink\" is not one of \"red\", \"green\""
        );
    }

    #[test]
    fn single_choice_with_titles_via_one_of() {
        let size = json!({"type": "string", "oneOf": [
            {"const": "s", "title": "Small"},
            {"const": "m", "title": "Medium"}
        ]});
        assert!(field(size.clone(), json!("m")).is_ok());
        assert_eq!(
            field(size.clone(), json!("Small")).unwrap_err(),
            "field \"f\": \"Small\" is not one of \"s\", \"m\""
        );
        assert!(field(size, json!(1)).is_err());
        let any = json!({"type": "string", "anyOf": [{"const": "a", "title": "A"}]});
        assert!(field(any.clone(), json!("a")).is_ok());
        assert!(field(any, json!("b")).is_err());
    }

    #[test]
    fn long_choice_lists_are_cut_after_ten() {
        let choices: Vec<String> = (0..25).map(|i| format!("c{i}")).collect();
        let why = field(json!({"type": "string", "enum": choices}), json!("x")).unwrap_err();
        assert_eq!(
            why,
            "field \"f\": \"x\" is not one of \"c0\", \"c1\", \"c2\", \"c3\", \"c4\", \
             \"c5\", \"c6\", \"c7\", \"c8\", \"c9\", …"
        );
    }

    #[test]
    fn numbers_and_their_bounds() {
        let n = json!({"type": "number", "minimum": 0.5, "maximum": 10});
        for ok in [json!(0.5), json!(1), json!(9.99), json!(10), json!(10.0)] {
            assert!(field(n.clone(), ok.clone()).is_ok(), "{ok}");
        }
        assert_eq!(
            field(n.clone(), json!(0.25)).unwrap_err(),
            "field \"f\": 0.25 is below the minimum 0.5"
        );
        assert_eq!(
            field(n.clone(), json!(11)).unwrap_err(),
            "field \"f\": 11 is above the maximum 10"
        );
        assert_eq!(
            field(n, json!("5")).unwrap_err(),
            "field \"f\": expected a number, got a string"
        );
    }

    #[test]
    fn integers_and_their_bounds() {
        let schema = json!({"type": "object", "properties":
            {"age": {"type": "integer", "minimum": 18, "maximum": 130}}});
        let age = |v: Value| answer(schema.clone(), json!({ "age": v }));
        for ok in [json!(18), json!(40), json!(130), json!(40.0)] {
            assert!(age(ok.clone()).is_ok(), "{ok}");
        }
        assert_eq!(
            age(json!(7)).unwrap_err(),
            "field \"age\": 7 is below the minimum 18"
        );
        assert_eq!(
            age(json!(131)).unwrap_err(),
            "field \"age\": 131 is above the maximum 130"
        );
        assert_eq!(
            age(json!(-1)).unwrap_err(),
            "field \"age\": -1 is below the minimum 18"
        );
        assert_eq!(
            age(json!(40.5)).unwrap_err(),
            "field \"age\": 40.5 is not an integer"
        );
        let n = json!({"type": "integer"});
        assert_eq!(
            answer(json!({"properties": {"n": n}}), json!({"n": "3"})).unwrap_err(),
            "field \"n\": expected an integer, got a string"
        );
        // Whole numbers are compared exactly, beyond what an f64 holds.
        let big = json!({"type": "integer", "maximum": 9_007_199_254_740_992_u64});
        assert!(field(big.clone(), json!(9_007_199_254_740_992_u64)).is_ok());
        assert!(field(big.clone(), json!(9_007_199_254_740_993_u64)).is_err());
        assert!(field(big, json!(u64::MAX)).is_err());
        let low = json!({"type": "integer", "minimum": -5});
        assert!(field(low.clone(), json!(-5)).is_ok());
        assert!(field(low, json!(-6)).is_err());
    }

    #[test]
    fn booleans() {
        let b = json!({"type": "boolean"});
        assert!(field(b.clone(), json!(true)).is_ok());
        assert!(field(b.clone(), json!(false)).is_ok());
        assert_eq!(
            field(b.clone(), json!("true")).unwrap_err(),
            "field \"f\": expected a boolean, got a string"
        );
        assert_eq!(
            field(b, json!(1)).unwrap_err(),
            "field \"f\": expected a boolean, got a number"
        );
    }

    #[test]
    fn multiple_choice() {
        let colors = json!({"type": "array", "minItems": 1, "maxItems": 2,
            "items": {"type": "string", "enum": ["red", "green", "blue"]}});
        assert!(field(colors.clone(), json!(["red"])).is_ok());
        assert!(field(colors.clone(), json!(["blue", "red"])).is_ok());
        assert_eq!(
            field(colors.clone(), json!(["red", "pink"])).unwrap_err(),
            "field \"f\": \"pink\" is not one of \"red\", \"green\", \"blue\""
        );
        assert_eq!(
            field(colors.clone(), json!([])).unwrap_err(),
            "field \"f\": 0 items chosen, fewer than the minimum 1"
        );
        assert_eq!(
            field(colors.clone(), json!(["red", "green", "blue"])).unwrap_err(),
            "field \"f\": 3 items chosen, more than the maximum 2"
        );
        assert_eq!(
            field(colors.clone(), json!("red")).unwrap_err(),
            "field \"f\": expected a list of strings, got a string"
        );
        assert_eq!(
            field(colors, json!(["red", 1])).unwrap_err(),
            "field \"f\": expected a list of strings, but item 2 is a number"
        );
    }

    #[test]
    fn multiple_choice_refuses_duplicates() {
        let tags = json!({"type": "array", "items": {"type": "string"}});
        assert!(field(tags.clone(), json!(["a", "b"])).is_ok());
        assert_eq!(
            field(tags, json!(["a", "b", "a"])).unwrap_err(),
            "field \"f\": \"a\" is chosen more than once"
        );
    }

    #[test]
    fn multiple_choice_with_titles() {
        for key in ["anyOf", "oneOf"] {
            let sizes = json!({"type": "array", "items": {key: [
                {"const": "s", "title": "Small"},
                {"const": "l", "title": "Large"}
            ]}});
            assert!(field(sizes.clone(), json!(["l", "s"])).is_ok());
            assert_eq!(
                field(sizes, json!(["Large"])).unwrap_err(),
                "field \"f\": \"Large\" is not one of \"s\", \"l\""
            );
        }
        // Many choices and many items: a set, not a search per item.
        let choices: Vec<String> = (0..50_000).map(|i| format!("c{i}")).collect();
        let many = json!({"type": "array", "items": {"enum": choices.clone()}});
        assert!(field(many, json!(choices)).is_ok());
    }

    #[test]
    fn property_without_type_checks_what_fits() {
        let free = json!({});
        for ok in [json!("x"), json!(1), json!(true), json!(["a"])] {
            assert!(field(free.clone(), ok.clone()).is_ok(), "{ok}");
        }
        for bad in [json!({"a": 1}), json!(null), json!([1])] {
            assert!(field(free.clone(), bad.clone()).is_err(), "{bad}");
        }
        let choice = json!({"enum": ["a", "b"]});
        assert!(field(choice.clone(), json!("a")).is_ok());
        assert!(field(choice, json!("c")).is_err());
        let bounded = json!({"maximum": 3, "maxLength": 1});
        assert!(field(bounded.clone(), json!(4)).is_err());
        assert!(field(bounded.clone(), json!("ab")).is_err());
        assert!(field(bounded, json!(true)).is_ok());
        let odd = json!({"type": "object"});
        assert!(field(odd.clone(), json!("x")).is_ok());
        assert!(field(odd, json!({"a": 1})).is_err());
    }

    #[test]
    fn a_full_form() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 50},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 18},
                "score": {"type": "number", "maximum": 1},
                "subscribe": {"type": "boolean", "default": false},
                "plan": {"type": "string", "oneOf": [
                    {"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro"}]},
                "topics": {"type": "array", "maxItems": 2,
                    "items": {"type": "string", "enum": ["rust", "mcp", "web"]}},
                "born": {"type": "string", "format": "date"}
            },
            "required": ["name", "email"]
        });
        let good = json!({"name": "Ada", "email": "ada@example.com", "age": 36,
            "score": 0.5, "subscribe": true, "plan": "pro", "topics": ["rust", "mcp"],
            "born": "1815-12-10"});
        assert!(answer(schema.clone(), good).is_ok());
        assert!(answer(schema.clone(), json!({"name": "Ada", "email": "a@b.c"})).is_ok());
        assert_eq!(
            answer(schema.clone(), json!({"name": "Ada"})).unwrap_err(),
            "required field \"email\" is missing"
        );
        assert_eq!(
            answer(schema, json!({"name": "Ada", "email": "x"})).unwrap_err(),
            "field \"email\": \"x\" is not an email address"
        );
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
