//! A form answer against the flat object schema it answers (MCP's
//! `requestedSchema`: primitives, choices, multiple choice).

use std::cmp::Ordering;
use std::collections::HashSet;

use serde_json::{Map, Number, Value};

use super::formats::{is_date, is_date_time, is_email, is_uri};

/// The most fields an accepted form answer may have.
pub(super) const MAX_FIELDS: usize = 1_000;
/// The longest string value an answer may carry, in bytes (1 MiB).
pub(super) const MAX_TEXT: usize = 1 << 20;
/// How many choices an error message lists before "…".
const LISTED: usize = 10;
/// How many characters of a name or value an error message quotes.
pub(super) const QUOTED: usize = 64;

type Object = Map<String, Value>;

/// An accepted form answer against the flat object schema it answers.
pub(super) fn check_form(schema: &Value, content: Option<&Object>) -> Result<(), String> {
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
