//! A tool's arguments from the command line: one JSON object, or
//! `key=value` pairs typed by the tool's input schema where it says
//! (`key:=JSON` gives a value as JSON whatever the schema says).

use anyhow::{Context, bail};
use serde_json::{Map, Value};

/// The arguments object for `words`, typed by `schema` (the tool's
/// `inputSchema`, or `null` when unknown).
pub fn parse(words: &[String], schema: &Value) -> anyhow::Result<Value> {
    if let [one] = words
        && one.trim_start().starts_with('{')
    {
        let value: Value = serde_json::from_str(one).context("the arguments are not valid JSON")?;
        if !value.is_object() {
            bail!("the arguments must be one JSON object");
        }
        return Ok(value);
    }
    let mut object = Map::new();
    for word in words {
        let (key, value) = if let Some((key, json)) = word.split_once(":=") {
            let value = serde_json::from_str(json)
                .with_context(|| format!("the value of {key} is not valid JSON"))?;
            (key, value)
        } else if let Some((key, text)) = word.split_once('=') {
            (key, typed(key, text, &schema["properties"][key])?)
        } else {
            bail!("{word:?} is neither key=value nor a JSON object");
        };
        if key.is_empty() {
            bail!("{word:?} has no key before '='");
        }
        object.insert(key.to_owned(), value);
    }
    Ok(Value::Object(object))
}

/// The JSON type a schema names (the first of a list, `null` aside).
fn type_of(field: &Value) -> Option<&str> {
    match &field["type"] {
        Value::String(t) => Some(t),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    }
}

fn typed(key: &str, text: &str, field: &Value) -> anyhow::Result<Value> {
    Ok(match type_of(field) {
        Some("integer") => text
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| anyhow::anyhow!("{key} takes an integer, not {text:?}"))?,
        Some("number") => {
            let n: f64 = text
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("{key} takes a number, not {text:?}"))?;
            serde_json::Number::from_f64(n)
                .map(Value::Number)
                .ok_or_else(|| anyhow::anyhow!("{key} takes a finite number, not {text:?}"))?
        }
        Some("boolean") => Value::Bool(
            boolean(text)
                .ok_or_else(|| anyhow::anyhow!("{key} takes true or false, not {text:?}"))?,
        ),
        Some("object" | "array") => serde_json::from_str(text).with_context(|| {
            format!(
                "{key} takes JSON ({}), not {text:?}",
                type_of(field).unwrap_or("")
            )
        })?,
        _ => Value::String(text.to_owned()),
    })
}

/// `true`/`false`, and the words people type for them.
pub fn boolean(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "y" | "1" | "on" => Some(true),
        "false" | "no" | "n" | "0" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pairs_are_typed_by_the_schema() {
        let schema = json!({"properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "ok": {"type": "boolean"},
            "name": {"type": "string"}, "tags": {"type": "array"}, "maybe": {"type": ["null", "integer"]},
        }});
        let got = parse(
            &words(&[
                "n=3",
                "x=0.5",
                "ok=yes",
                "name=42",
                "tags=[1,2]",
                "maybe=7",
                "free=text",
                "raw:={\"a\":1}",
            ]),
            &schema,
        )
        .unwrap();
        assert_eq!(
            got,
            json!({"n": 3, "x": 0.5, "ok": true, "name": "42", "tags": [1, 2], "maybe": 7,
                   "free": "text", "raw": {"a": 1}})
        );
    }

    #[test]
    fn one_json_object_is_taken_as_it_is() {
        let got = parse(&words(&[r#"{"topic": "rust", "n": 2}"#]), &Value::Null).unwrap();
        assert_eq!(got, json!({"topic": "rust", "n": 2}));
        assert_eq!(parse(&[], &Value::Null).unwrap(), json!({}));
    }

    #[test]
    fn mistakes_say_what_was_expected() {
        let schema = json!({"properties": {"n": {"type": "integer"}}});
        let e = parse(&words(&["n=three"]), &schema).unwrap_err();
        assert_eq!(e.to_string(), "n takes an integer, not \"three\"");
        assert!(parse(&words(&["oops"]), &schema).is_err());
        assert!(parse(&words(&["[1]"]), &schema).is_err());
        assert!(parse(&words(&["{]"]), &schema).is_err());
    }
}
