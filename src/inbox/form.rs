//! A form question as an HTML form, and the posted form back as the
//! answer's content.
//!
//! The requested schema of a form elicitation is a flat object whose
//! properties are primitives: strings (with `minLength`, `maxLength` and
//! the formats `email`, `uri`, `date`, `date-time`), numbers and integers
//! (with `minimum` and `maximum`), booleans, single choices (`enum`, or
//! `oneOf`/`anyOf` of `const` with `title`) and multiple choices (`array`
//! of such items). Each becomes the input a browser knows for it; the
//! answer is then checked by the store, whose refusal names the field.
//!
//! Every field is posted as `f:NAME`. A choice's option carries its value
//! as JSON, so a choice of numbers comes back a number.

use std::fmt::Write;

use serde_json::{Map, Value};

use super::html::esc;

/// What a person entered in a form, as posted (field names without their
/// `f:` prefix), to fill it in again after a refusal.
pub(super) type Entered = Vec<(String, String)>;

/// A field the form renders: its name, its schema, whether required.
struct Field<'a> {
    name: &'a str,
    schema: &'a Value,
    required: bool,
}

fn fields(schema: &Value) -> Vec<Field<'_>> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| Field {
                    name,
                    schema,
                    required: required.contains(&name.as_str()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The choices of a single choice (`enum`, `oneOf`/`anyOf` of `const`), as
/// (value, title).
fn choices(schema: &Value) -> Option<Vec<(&Value, String)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let title = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| plain(v), str::to_owned);
                    (v, title)
                })
                .collect(),
        );
    }
    let listed = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    let out: Vec<(&Value, String)> = listed
        .iter()
        .filter_map(|c| {
            let v = c.get("const")?;
            let title = c
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| plain(v), str::to_owned);
            Some((v, title))
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

/// A value as a person reads it: a string without quotes, else JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn kind(schema: &Value) -> &str {
    match schema.get("type").and_then(Value::as_str) {
        Some(t) => t,
        None if schema.get("items").is_some() => "array",
        None => "string",
    }
}

/// What was entered for `name`, else the schema's default, as text.
fn initial<'a>(entered: Option<&'a Entered>, name: &str, schema: &'a Value) -> Vec<String> {
    match entered {
        Some(e) => e
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect(),
        None => match schema.get("default") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().map(|v| v.to_string()).collect(),
            Some(v) => vec![plain(v)],
        },
    }
}

/// Writes the inputs of a form question into `out`: one labelled input
/// per field, required ones marked, filled with what was `entered` (else
/// the defaults), and `refusal` (field, reason) next to its field.
/// `id` makes the element ids unique on the page.
pub(super) fn render(
    out: &mut String,
    id: &str,
    schema: &Value,
    entered: Option<&Entered>,
    refusal: Option<(&str, &str)>,
) {
    let fields = fields(schema);
    if fields.is_empty() {
        out.push_str("<p class=\"hint\">This form has no fields.</p>");
    }
    for (i, f) in fields.iter().enumerate() {
        let fid = format!("{id}-f{i}");
        let name = format!("f:{}", f.name);
        let title = f
            .schema
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(f.name);
        let refused_here = refusal.filter(|(field, _)| *field == f.name);
        let _ = write!(
            out,
            "<div class=\"field{}\"><label for=\"{fid}\">{}{}</label>",
            if refused_here.is_some() {
                " refused"
            } else {
                ""
            },
            esc(title),
            if f.required {
                " <abbr class=\"required\" title=\"required\">*</abbr>"
            } else {
                ""
            }
        );
        if let Some(d) = f.schema.get("description").and_then(Value::as_str) {
            let _ = write!(out, "<small>{}</small>", esc(d));
        }
        let values = initial(entered, f.name, f.schema);
        let first = values.first().map_or("", String::as_str);
        let required = if f.required { " required" } else { "" };
        match (kind(f.schema), choices(f.schema)) {
            ("array", _) => {
                let items = f.schema.get("items").unwrap_or(&Value::Null);
                let options = choices(items).unwrap_or_default();
                let _ = write!(out, "<fieldset id=\"{fid}\">");
                for (j, (v, t)) in options.iter().enumerate() {
                    let text = v.to_string();
                    let chosen = values.iter().any(|x| *x == text || *x == plain(v));
                    let _ = write!(
                        out,
                        "<label class=\"choice\"><input type=\"checkbox\" id=\"{fid}-{j}\" \
                         name=\"{}\" value=\"{}\"{}> {}</label>",
                        esc(&name),
                        esc(&text),
                        if chosen { " checked" } else { "" },
                        esc(t),
                    );
                }
                if options.is_empty() {
                    // A list of free strings: one per line.
                    let _ = write!(
                        out,
                        "<textarea name=\"{}\" rows=\"3\" placeholder=\"one per line\">{}</textarea>",
                        esc(&format!("l:{}", f.name)),
                        esc(&values.join("\n"))
                    );
                }
                out.push_str("</fieldset>");
            }
            (_, Some(options)) => {
                let _ = write!(
                    out,
                    "<select id=\"{fid}\" name=\"{}\"{required}>",
                    esc(&name)
                );
                if !f.required || first.is_empty() {
                    out.push_str("<option value=\"\">—</option>");
                }
                for (v, t) in &options {
                    let text = v.to_string();
                    let chosen = first == text || first == plain(v);
                    let _ = write!(
                        out,
                        "<option value=\"{}\"{}>{}</option>",
                        esc(&text),
                        if chosen { " selected" } else { "" },
                        esc(t)
                    );
                }
                out.push_str("</select>");
            }
            ("boolean", None) => {
                let checked = first == "true";
                let _ = write!(
                    out,
                    "<input type=\"checkbox\" id=\"{fid}\" name=\"{}\" value=\"true\"{}>",
                    esc(&name),
                    if checked { " checked" } else { "" }
                );
            }
            (t @ ("number" | "integer"), None) => {
                let mut attrs = String::new();
                for (key, attr) in [("minimum", "min"), ("maximum", "max")] {
                    if let Some(n) = f.schema.get(key).filter(|v| v.is_number()) {
                        let _ = write!(attrs, " {attr}=\"{n}\"");
                    }
                }
                let step = if t == "integer" { "1" } else { "any" };
                let _ = write!(
                    out,
                    "<input type=\"number\" id=\"{fid}\" name=\"{}\" step=\"{step}\" \
                     value=\"{}\"{attrs}{required}>",
                    esc(&name),
                    esc(first)
                );
            }
            _ => {
                let format = f.schema.get("format").and_then(Value::as_str);
                let (input, hint) = match format {
                    Some("email") => ("email", None),
                    Some("uri") => ("url", None),
                    Some("date") => ("date", None),
                    // A browser's date-time input has no time zone, and
                    // RFC 3339 needs one: text, with an example.
                    Some("date-time") => ("text", Some("2025-01-31T12:00:00Z")),
                    _ => ("text", None),
                };
                let mut attrs = String::new();
                for (key, attr) in [("minLength", "minlength"), ("maxLength", "maxlength")] {
                    if let Some(n) = f.schema.get(key).and_then(Value::as_u64) {
                        let _ = write!(attrs, " {attr}=\"{n}\"");
                    }
                }
                if let Some(h) = hint {
                    let _ = write!(attrs, " placeholder=\"{h}\"");
                }
                let _ = write!(
                    out,
                    "<input type=\"{input}\" id=\"{fid}\" name=\"{}\" value=\"{}\"{attrs}{required}>",
                    esc(&name),
                    esc(first)
                );
            }
        }
        if let Some((_, reason)) = refused_here {
            let _ = write!(
                out,
                "<p class=\"refusal\" role=\"alert\">{}</p>",
                esc(reason)
            );
        }
        out.push_str("</div>");
    }
}

/// The field a refusal's reason names, when it names one of the form's:
/// the store quotes it (`field "age": …`).
pub(super) fn field_named<'a>(schema: &'a Value, reason: &str) -> Option<&'a str> {
    fields(schema)
        .into_iter()
        .map(|f| f.name)
        .find(|name| reason.contains(&format!("{name:?}")))
}

/// The content of an accepted form, from the posted fields: each field as
/// its schema types it. A field left empty is left out (the store then
/// says whether it was required); an unchecked box is `false`. `Err`
/// names a field whose text is not a number where one is asked.
pub(super) fn content(
    schema: &Value,
    posted: &Entered,
) -> Result<Map<String, Value>, (String, String)> {
    let mut out = Map::new();
    for f in fields(schema) {
        let first = given(posted, f.name).next().unwrap_or("");
        let value = match (kind(f.schema), choices(f.schema)) {
            ("array", _) => {
                let mut items: Vec<Value> = given(posted, f.name).map(choice_value).collect();
                let lines = posted
                    .iter()
                    .filter(|(k, _)| k.strip_prefix("l:") == Some(f.name))
                    .flat_map(|(_, v)| v.lines())
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(|l| Value::String(l.to_owned()));
                items.extend(lines);
                if items.is_empty() && !f.required {
                    continue;
                }
                Value::Array(items)
            }
            (_, Some(_)) if first.is_empty() => continue,
            (_, Some(_)) => choice_value(first),
            ("boolean", None) => Value::Bool(first == "true"),
            (t @ ("number" | "integer"), None) => {
                let text = first.trim();
                if text.is_empty() {
                    continue;
                }
                let number = if t == "integer" {
                    text.parse::<i64>().ok().map(Value::from)
                } else {
                    None
                }
                .or_else(|| {
                    text.parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                });
                match number {
                    Some(n) => n,
                    None => {
                        return Err((
                            f.name.to_owned(),
                            format!("field {:?}: {:?} is not a number", f.name, text),
                        ));
                    }
                }
            }
            _ if first.is_empty() => continue,
            _ => Value::String(first.to_owned()),
        };
        out.insert(f.name.to_owned(), value);
    }
    Ok(out)
}

/// The values posted for field `name`.
fn given<'a>(posted: &'a Entered, name: &'a str) -> impl Iterator<Item = &'a str> {
    posted
        .iter()
        .filter(move |(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A choice's posted value: its JSON, else the text itself.
fn choice_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "email": {"type": "string", "format": "email", "title": "Your <email>"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ok": {"type": "boolean", "default": true},
                "size": {"type": "string", "oneOf": [
                    {"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "level": {"enum": [1, 2, 3]},
                "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}},
                "when": {"type": "string", "format": "date-time"},
            },
            "required": ["email", "size"],
        })
    }

    fn posted(pairs: &[(&str, &str)]) -> Entered {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn each_kind_renders_as_its_input() {
        let mut out = String::new();
        render(
            &mut out,
            "q",
            &schema(),
            None,
            Some(("age", "field \"age\": too old")),
        );
        assert!(out.contains("Your &lt;email&gt; <abbr"), "{out}");
        assert!(out.contains("type=\"email\""), "{out}");
        assert!(out.contains("type=\"number\" id=\"q-f0\" name=\"f:age\" step=\"1\" value=\"\" min=\"0\" max=\"150\""), "{out}");
        assert!(
            out.contains("name=\"f:ok\" value=\"true\" checked"),
            "default: {out}"
        );
        assert!(
            out.contains("<option value=\"&quot;s&quot;\">Small</option>"),
            "{out}"
        );
        assert!(out.contains("<option value=\"2\">2</option>"), "{out}");
        assert!(
            out.contains("type=\"checkbox\" id=\"q-f5-1\" name=\"f:tags\" value=\"&quot;b&quot;\""),
            "{out}"
        );
        assert!(
            out.contains("placeholder=\"2025-01-31T12:00:00Z\""),
            "{out}"
        );
        assert!(
            out.contains("<p class=\"refusal\" role=\"alert\">field &quot;age&quot;: too old</p>"),
            "{out}"
        );
    }

    #[test]
    fn posted_fields_come_back_typed() {
        let content = content(
            &schema(),
            &posted(&[
                ("email", "a@b.c"),
                ("age", "41"),
                ("size", "\"l\""),
                ("level", "3"),
                ("tags", "\"a\""),
                ("tags", "\"c\""),
                ("when", ""),
            ]),
        )
        .unwrap();
        assert_eq!(
            Value::Object(content),
            json!({"email": "a@b.c", "age": 41, "ok": false, "size": "l", "level": 3, "tags": ["a", "c"]})
        );
        let bad = super::content(&schema(), &posted(&[("age", "forty")])).unwrap_err();
        assert_eq!(bad.0, "age");
        assert!(bad.1.contains("not a number"), "{bad:?}");
    }

    #[test]
    fn a_refusal_finds_its_field() {
        assert_eq!(
            field_named(&schema(), "field \"when\": \"x\" is not a date-time"),
            Some("when")
        );
        assert_eq!(field_named(&schema(), "question closed"), None);
    }

    #[test]
    fn a_schema_that_is_not_an_object_renders_no_fields() {
        let mut out = String::new();
        render(&mut out, "q", &json!("not a schema"), None, None);
        assert!(out.contains("no fields"));
        assert!(content(&json!(null), &Vec::new()).unwrap().is_empty());
    }
}
