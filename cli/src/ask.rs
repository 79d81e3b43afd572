//! The server's questions, asked at the prompt: an elicitation form from
//! its `requestedSchema`, a URL to visit, a sampling request answered by
//! typing. Without a terminal (or with `--json`) all three are declined,
//! and the CLI says so: forms and URLs with a `decline` answer, sampling
//! (which has no such answer) with an error to the server. All three are
//! declared either way: a server sees what the client can answer.

use inquire::validator::Validation;
use inquire::{Confirm, InquireError, MultiSelect, Select, Text};
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CreateMessageRequest, CreateMessageResult, ElicitResult};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::arguments::boolean;
use crate::report::{Report, Style};

/// The person pressed Ctrl-C at a prompt: the task is to be cancelled.
#[derive(Debug)]
pub struct Interrupted;

/// Asks the server's questions, or declines them when it cannot.
#[derive(Clone)]
pub struct Asker {
    report: Report,
    interactive: bool,
    /// Ctrl-C at a prompt, told to the command's wait loop.
    interrupts: mpsc::UnboundedSender<()>,
}

impl Asker {
    /// An asker that prompts when `interactive`, reporting on `report`.
    pub fn new(report: Report, interactive: bool, interrupts: mpsc::UnboundedSender<()>) -> Self {
        Asker {
            report,
            interactive,
            interrupts,
        }
    }

    /// The client's input handlers: forms, URLs and sampling, asked at
    /// the prompt or declined.
    pub fn handlers(&self) -> InputHandlers {
        let form = self.clone();
        let url = self.clone();
        let handlers = InputHandlers::new()
            .elicitation_form(move |req| {
                let asker = form.clone();
                async move {
                    Ok(asker
                        .answer_blocking(move |a| a.form(&req.message, &req.requested_schema))
                        .await)
                }
            })
            .elicitation_url(move |req| {
                let asker = url.clone();
                async move {
                    Ok(asker
                        .answer_blocking(move |a| a.url(&req.message, &req.url))
                        .await)
                }
            });
        let sampling = self.clone();
        handlers.sampling(move |req| {
            let asker = sampling.clone();
            async move {
                if !asker.interactive {
                    let first = req.messages.first().map(|m| text_of(&m.content));
                    asker.declined("for a model's reply (sampling)", &first.unwrap_or_default());
                    return Err(format!(
                        "the sampling request was declined ({})",
                        asker.why_not_asked()
                    )
                    .into());
                }
                let asked = asker.clone();
                let answer = tokio::task::spawn_blocking(move || asked.sampling(&req)).await?;
                match answer {
                    Ok(Some(result)) => Ok(result),
                    Ok(None) => Err("the user declined the sampling request".into()),
                    Err(Interrupted) => {
                        let _ = asker.interrupts.send(());
                        Err("the user interrupted the sampling request".into())
                    }
                }
            }
        })
    }

    /// Runs an elicitation prompt off the runtime; Ctrl-C at it is told to
    /// the wait loop and answers `cancel`.
    async fn answer_blocking(
        &self,
        ask: impl FnOnce(&Asker) -> Result<ElicitResult, Interrupted> + Send + 'static,
    ) -> ElicitResult {
        let asker = self.clone();
        let answer = tokio::task::spawn_blocking(move || ask(&asker)).await;
        match answer {
            Ok(Ok(result)) => result,
            Ok(Err(Interrupted)) | Err(_) => {
                let _ = self.interrupts.send(());
                ElicitResult::cancel()
            }
        }
    }

    /// Why nothing is asked at the prompt.
    fn why_not_asked(&self) -> &'static str {
        if self.report.style() == Style::Json {
            "--json never prompts"
        } else {
            "no terminal to ask at"
        }
    }

    fn declined(&self, what: &str, message: &str) {
        let why = self.why_not_asked();
        self.report.note(&format!(
            "the server asks {what}: {message}\n  declined ({why})"
        ));
        if self.report.style() == Style::Json {
            self.report.json(json!({
                "type": "input", "kind": what, "message": message, "answer": "declined",
            }));
        }
    }

    /// Asks a form elicitation, field by field.
    pub fn form(&self, message: &str, schema: &Value) -> Result<ElicitResult, Interrupted> {
        if !self.interactive {
            self.declined("for a form", message);
            return Ok(ElicitResult::decline());
        }
        self.report.paused(|| ask_form(message, schema))
    }

    /// Shows a URL to visit and waits for the person to say they are done.
    pub fn url(&self, message: &str, url: &str) -> Result<ElicitResult, Interrupted> {
        if !self.interactive {
            self.declined("to visit a URL", &format!("{message} {url}"));
            return Ok(ElicitResult::decline());
        }
        self.report.paused(|| {
            eprintln!("The server asks you to visit a URL: {message}");
            eprintln!("  {url}");
            eprintln!("  (this client does not open it; check the address before you do)");
            let done = Confirm::new("Done there?")
                .with_default(true)
                .with_help_message("y: done, n: decline, Esc: dismiss, Ctrl-C: cancel the task")
                .prompt();
            match done {
                Ok(true) => Ok(ElicitResult::accept_empty()),
                Ok(false) => Ok(ElicitResult::decline()),
                Err(e) => dismissed(e),
            }
        })
    }

    /// Shows a sampling request and takes the reply typed; `None` declines.
    pub fn sampling(
        &self,
        req: &CreateMessageRequest,
    ) -> Result<Option<CreateMessageResult>, Interrupted> {
        if !self.interactive {
            return Ok(None);
        }
        self.report.paused(|| {
            eprintln!("The server asks for a model's reply (sampling) to:");
            for m in &req.messages {
                eprintln!("  {}: {}", m.role, text_of(&m.content));
            }
            if let Some(system) = req.extra.get("systemPrompt").and_then(Value::as_str) {
                eprintln!("  (system prompt: {system})");
            }
            let reply = Text::new("Your reply:")
                .with_help_message("typed as the model's answer; empty or Esc declines")
                .prompt();
            match reply {
                Ok(text) if !text.trim().is_empty() => Ok(Some(CreateMessageResult {
                    role: "assistant".into(),
                    content: json!({ "type": "text", "text": text }),
                    model: "typed-by-a-person".into(),
                    stop_reason: Some("endTurn".into()),
                })),
                Ok(_) | Err(InquireError::OperationCanceled) => Ok(None),
                Err(InquireError::OperationInterrupted) => Err(Interrupted),
                Err(_) => Ok(None),
            }
        })
    }
}

/// A sampling message's text, or its content as JSON when it is not text.
fn text_of(content: &Value) -> String {
    content["text"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| content.to_string())
}

/// Esc declines; Ctrl-C interrupts; a broken terminal declines.
fn dismissed(e: InquireError) -> Result<ElicitResult, Interrupted> {
    match e {
        InquireError::OperationInterrupted => Err(Interrupted),
        _ => Ok(ElicitResult::decline()),
    }
}

/// One field of a form schema, ready to ask.
struct Field<'a> {
    name: &'a str,
    schema: &'a Value,
    required: bool,
}

/// The fields in asking order: the required ones as the schema lists
/// them, then the others by name.
fn fields<'a>(schema: &'a Value, properties: &'a Map<String, Value>) -> Vec<Field<'a>> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out: Vec<Field<'a>> = required
        .iter()
        .filter_map(|name| properties.get_key_value(*name))
        .map(|(name, schema)| Field {
            name,
            schema,
            required: true,
        })
        .collect();
    out.extend(
        properties
            .iter()
            .filter(|(name, _)| !required.contains(&name.as_str()))
            .map(|(name, schema)| Field {
                name,
                schema,
                required: false,
            }),
    );
    out
}

fn ask_form(message: &str, schema: &Value) -> Result<ElicitResult, Interrupted> {
    eprintln!("The server asks: {message}");
    eprintln!("  (Esc declines the whole form, Ctrl-C cancels the task)");
    let empty = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    let mut content = Map::new();
    for field in fields(schema, properties) {
        match ask_field(&field) {
            Ok(Some(value)) => {
                content.insert(field.name.to_owned(), value);
            }
            Ok(None) => {}
            Err(e) => return dismissed(e),
        }
    }
    Ok(ElicitResult::accept(Value::Object(content)))
}

/// A choice's value and label.
fn choices(schema: &Value) -> Option<Vec<(Value, String)>> {
    if let Some(one_of) = schema["oneOf"].as_array().or(schema["anyOf"].as_array()) {
        return Some(
            one_of
                .iter()
                .filter(|c| !c["const"].is_null())
                .map(|c| {
                    let label = c["title"]
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| plain(&c["const"]));
                    (c["const"].clone(), label)
                })
                .collect(),
        );
    }
    let values = schema["enum"].as_array()?;
    let names = schema["enumNames"].as_array();
    Some(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| plain(v));
                (v.clone(), label)
            })
            .collect(),
    )
}

/// A value as a person reads it (strings without quotes).
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

const SKIP: &str = "(leave empty)";

/// Asks one field; `None` leaves an optional field out.
fn ask_field(field: &Field<'_>) -> Result<Option<Value>, InquireError> {
    let schema = field.schema;
    let title = schema["title"].as_str().unwrap_or(field.name);
    let label = if field.required {
        format!("{title}:")
    } else {
        format!("{title} (optional):")
    };
    let help = schema["description"].as_str();
    let default = &schema["default"];
    let kind = schema["type"].as_str().unwrap_or("string");

    if kind == "array" {
        let Some(options) = choices(&schema["items"]) else {
            return ask_text(field, &label, help, default, "array");
        };
        let defaults: Vec<usize> = default
            .as_array()
            .map(|d| {
                options
                    .iter()
                    .enumerate()
                    .filter(|(_, (v, _))| d.contains(v))
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default();
        let labels: Vec<String> = options.iter().map(|(_, l)| l.clone()).collect();
        let mut prompt = MultiSelect::new(&label, labels.clone()).with_default(&defaults);
        if let Some(help) = help {
            prompt = prompt.with_help_message(help);
        }
        let picked = prompt.prompt()?;
        let values = picked
            .iter()
            .filter_map(|l| labels.iter().position(|x| x == l))
            .map(|i| options[i].0.clone())
            .collect();
        return Ok(Some(Value::Array(values)));
    }
    if let Some(options) = choices(schema) {
        let mut labels: Vec<String> = options.iter().map(|(_, l)| l.clone()).collect();
        if !field.required {
            labels.push(SKIP.to_owned());
        }
        let start = options.iter().position(|(v, _)| v == default).unwrap_or(0);
        let mut prompt = Select::new(&label, labels.clone()).with_starting_cursor(start);
        if let Some(help) = help {
            prompt = prompt.with_help_message(help);
        }
        let picked = prompt.prompt()?;
        return Ok(labels
            .iter()
            .position(|l| *l == picked)
            .and_then(|i| options.get(i))
            .map(|(v, _)| v.clone()));
    }
    if kind == "boolean" {
        let mut prompt = Confirm::new(&label).with_default(default.as_bool().unwrap_or(false));
        if let Some(help) = help {
            prompt = prompt.with_help_message(help);
        }
        return prompt.prompt().map(|b| Some(Value::Bool(b)));
    }
    ask_text(field, &label, help, default, kind)
}

/// A typed line: a string, a number, an integer (or JSON for the rest),
/// checked as it is typed.
fn ask_text(
    field: &Field<'_>,
    label: &str,
    help: Option<&str>,
    default: &Value,
    kind: &str,
) -> Result<Option<Value>, InquireError> {
    let default_text = (!default.is_null()).then(|| plain(default));
    let kind_owned = kind.to_owned();
    let schema = field.schema.clone();
    let required = field.required && default_text.is_none();
    let mut prompt = Text::new(label).with_validator(move |text: &str| {
        if text.trim().is_empty() {
            return Ok(if required {
                Validation::Invalid("required".into())
            } else {
                Validation::Valid
            });
        }
        Ok(match convert(text, &kind_owned, &schema) {
            Ok(_) => Validation::Valid,
            Err(why) => Validation::Invalid(why.into()),
        })
    });
    if let Some(d) = &default_text {
        prompt = prompt.with_default(d);
    }
    if let Some(help) = help {
        prompt = prompt.with_help_message(help);
    }
    let text = prompt.prompt()?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(convert(&text, kind, field.schema).ok())
}

/// The typed text as the schema's type, within its bounds.
fn convert(text: &str, kind: &str, schema: &Value) -> Result<Value, String> {
    let text = text.trim();
    let in_bounds = |n: f64| -> Result<(), String> {
        if let Some(min) = schema["minimum"].as_f64()
            && n < min
        {
            return Err(format!("at least {min}"));
        }
        if let Some(max) = schema["maximum"].as_f64()
            && n > max
        {
            return Err(format!("at most {max}"));
        }
        Ok(())
    };
    match kind {
        "integer" => {
            let n: i64 = text
                .parse()
                .map_err(|_| "a whole number, please".to_owned())?;
            in_bounds(n as f64)?;
            Ok(Value::from(n))
        }
        "number" => {
            let n: f64 = text.parse().map_err(|_| "a number, please".to_owned())?;
            in_bounds(n)?;
            serde_json::Number::from_f64(n)
                .map(Value::Number)
                .ok_or_else(|| "a finite number, please".to_owned())
        }
        "boolean" => boolean(text)
            .map(Value::Bool)
            .ok_or_else(|| "yes or no, please".to_owned()),
        "object" | "array" => serde_json::from_str(text).map_err(|e| format!("JSON, please ({e})")),
        _ => {
            let chars = text.chars().count() as u64;
            if let Some(min) = schema["minLength"].as_u64()
                && chars < min
            {
                return Err(format!("at least {min} characters"));
            }
            if let Some(max) = schema["maxLength"].as_u64()
                && chars > max
            {
                return Err(format!("at most {max} characters"));
            }
            Ok(Value::String(text.to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_fields_come_first_then_the_rest_by_name() {
        let schema = json!({
            "properties": {"b": {}, "a": {}, "z": {}, "m": {}},
            "required": ["z", "b"],
        });
        let order: Vec<&str> = fields(&schema, schema["properties"].as_object().unwrap())
            .iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(order, ["z", "b", "a", "m"]);
    }

    #[test]
    fn choices_come_from_enum_or_one_of() {
        let c = choices(&json!({"enum": ["a", "b"], "enumNames": ["Alpha"]})).unwrap();
        assert_eq!(c, [(json!("a"), "Alpha".into()), (json!("b"), "b".into())]);
        let c = choices(&json!({"oneOf": [{"const": 1, "title": "One"}]})).unwrap();
        assert_eq!(c, [(json!(1), "One".into())]);
        assert!(choices(&json!({"type": "string"})).is_none());
    }

    #[test]
    fn typed_answers_are_checked_against_the_schema() {
        let s = json!({"minimum": 1, "maximum": 5});
        assert_eq!(convert("3", "integer", &s), Ok(json!(3)));
        assert!(convert("9", "integer", &s).is_err());
        assert!(convert("1.5", "integer", &s).is_err());
        assert_eq!(convert("yes", "boolean", &s), Ok(json!(true)));
        assert!(convert("ab", "string", &json!({"minLength": 3})).is_err());
    }
}
