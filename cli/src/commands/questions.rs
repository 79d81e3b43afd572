//! `mcp-tasks questions` and `mcp-tasks answer`: the questions the tasks of
//! the task list wait on, answered from any shell, at any time.
//!
//! A command that reads a task (`call --detach`, `status`, `wait`) writes
//! the questions it asks into its record. `answer` checks an answer against
//! its question and keeps it in the record (the store's rules: the first
//! answer wins, a closed question takes none), then sends it; an answer
//! that could not be sent stays kept, and `wait` sends it before it asks
//! anything at the prompt.

use anyhow::bail;
use clap::Args;
use mcp_tasks::protocol::{ElicitResult, InputResponse};
use mcp_tasks::store::{Question, QuestionKind, RecordId};
use serde_json::json;

use super::OutputArgs;
use super::on_task::{self, Action, RefArgs};
use crate::records::{self, Records};
use crate::server::ServerArgs;
use crate::{Failure, exit};

/// `mcp-tasks answer`'s arguments.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The task: its short name in the task list (`12` or `#12`).
    #[arg(value_name = "NAME")]
    name: String,
    /// The question's key (needed only when the task asks more than one),
    /// then the answer's fields as key=value, typed by the question's
    /// schema (key:=JSON gives a value as JSON). A URL question takes no
    /// field: answering it says the visit is done.
    #[arg(value_name = "[KEY] FIELD=VALUE")]
    words: Vec<String>,
    /// Decline the question.
    #[arg(long, conflicts_with_all = ["cancel", "json_answer"])]
    decline: bool,
    /// Cancel the question (the person dismissed it).
    #[arg(long, conflicts_with = "json_answer")]
    cancel: bool,
    /// The whole answer as JSON, as `tasks/update` carries it: an
    /// elicitation's `{"action": …, "content": …}`, a model's message for a
    /// sampling request, `{"roots": […]}` for a roots request.
    #[arg(long, value_name = "JSON")]
    json_answer: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    server: ServerArgs,
}

impl AnswerArgs {
    /// Whether the command prints JSON lines.
    pub fn json(&self) -> bool {
        self.output.json
    }
}

/// `mcp-tasks questions`: every open question of the task list, oldest
/// first.
pub async fn list(json: bool) -> anyhow::Result<u8> {
    let asking = match Records::open_existing().await? {
        Some(records) => records.asking().await?,
        None => Vec::new(),
    };
    let mut rows = Vec::new();
    for record in &asking {
        for (key, question) in record.open_questions() {
            rows.push((record, key, question));
        }
    }
    rows.sort_by_key(|(_, _, q)| q.first_seen);
    if json {
        for (record, key, question) in &rows {
            out!(
                "{}",
                json!({
                    "name": record.id.0,
                    "tool": record.tool,
                    "key": key,
                    "kind": question.kind().name(),
                    "message": question.message(),
                    "schema": question.schema(),
                    "url": question.url(),
                    "asked": records::rfc3339(question.first_seen),
                })
            );
        }
        return Ok(exit::OK);
    }
    if rows.is_empty() {
        eprintln!(
            "no open questions (a command that reads a task, such as `mcp-tasks status NAME`, \
             records the questions it asks)"
        );
        return Ok(exit::OK);
    }
    let width = |f: &dyn Fn(&(&mcp_tasks::store::TaskRecord, &str, &Question)) -> usize,
                 least: usize| {
        rows.iter().map(f).max().unwrap_or(least).max(least)
    };
    let tool_width = width(&|r| r.0.tool.chars().count(), 4);
    let key_width = width(&|r| r.1.chars().count(), 3);
    let now = std::time::SystemTime::now();
    out!(
        "{:>4}  {:<tool_width$}  {:<key_width$}  {:<8}  {:>7}  MESSAGE",
        "NAME",
        "TOOL",
        "KEY",
        "KIND",
        "ASKED"
    );
    for (record, key, question) in &rows {
        let message = match (question.message(), question.url()) {
            (Some(m), Some(url)) => format!("{m} ({url})"),
            (Some(m), None) => m.to_owned(),
            (None, _) => String::new(),
        };
        out!(
            "{:>4}  {:<tool_width$}  {:<key_width$}  {:<8}  {:>7}  {}",
            record.id.0,
            record.tool,
            key,
            question.kind().name(),
            format!("{} ago", records::age(question.first_seen, now)),
            one_line(&message),
        );
    }
    Ok(exit::OK)
}

/// `mcp-tasks answer`: the answer checked and kept in the task list, then
/// sent to the task.
pub async fn answer(args: AnswerArgs) -> anyhow::Result<u8> {
    let Some(name) = records::parse_name(&args.name) else {
        bail!(Failure::usage(format!(
            "{:?} is not a short name of the task list (`mcp-tasks questions` lists them)",
            args.name
        )));
    };
    let records = Records::open().await?;
    let found = records.find(name).await?;
    let record = &found.record;
    // Answered questions are candidates too, for the store to refuse with
    // its reason (the first answer wins).
    let open: Vec<(&str, &Question)> = record
        .questions
        .iter()
        .filter(|(_, q)| !q.is_closed())
        .map(|(k, q)| (k.as_str(), q))
        .collect();
    let waiting: Vec<(&str, &Question)> = record.open_questions().collect();
    let (key, question, fields) = pick(name, &open, &waiting, &args.words)?;
    let response = response(&args, key, question, fields)?;
    if let Err(e) = records.answer(name, key, &response).await {
        match e.refusal() {
            Some(refusal) => bail!(Failure::usage(format!("the answer was refused: {refusal}"))),
            None => bail!(Failure::failed(format!(
                "cannot keep the answer: {}",
                crate::one_line(&e)
            ))),
        }
    }
    tracing::debug!(task = name.0, key, "an answer was kept in the task list");
    let task = RefArgs {
        reference: args.name,
        output: args.output,
        server: args.server,
    };
    let sent = on_task::run(task, Action::Deliver).await;
    if sent.is_err() {
        eprintln!(
            "mcp-tasks: the answer is kept in the task list; `mcp-tasks wait {name}` sends it"
        );
    }
    sent
}

/// The question an answer is for, and the words left for its fields: the
/// first word when it is the key of an open question, else the only one
/// that waits for an answer (or the only open one).
fn pick<'a>(
    name: RecordId,
    open: &[(&'a str, &'a Question)],
    waiting: &[(&'a str, &'a Question)],
    words: &'a [String],
) -> anyhow::Result<(&'a str, &'a Question, &'a [String])> {
    if let Some(first) = words.first()
        && let Some((key, question)) = open.iter().find(|(k, _)| k == first)
    {
        return Ok((key, question, &words[1..]));
    }
    let candidates = if waiting.is_empty() { open } else { waiting };
    match candidates {
        [] => bail!(Failure::usage(format!(
            "task {name} asks no question (as last read: `mcp-tasks status {name}` reads it again)"
        ))),
        [(key, question)] => Ok((key, question, words)),
        _ => {
            let keys: Vec<&str> = candidates.iter().map(|(k, _)| *k).collect();
            bail!(Failure::usage(format!(
                "task {name} asks {} questions: name one first ({})",
                candidates.len(),
                keys.join(", ")
            )))
        }
    }
}

/// The answer the command line gives to `question`.
fn response(
    args: &AnswerArgs,
    key: &str,
    question: &Question,
    fields: &[String],
) -> anyhow::Result<InputResponse> {
    let given = |what: &str| {
        if fields.is_empty() {
            Ok(())
        } else {
            Err(Failure::usage(format!(
                "{what} takes no fields (given: {})",
                fields.join(" ")
            )))
        }
    };
    if let Some(text) = &args.json_answer {
        given("--json-answer")?;
        return serde_json::from_str(text)
            .map_err(|e| Failure::usage(format!("--json-answer is not an answer: {e}")).into());
    }
    if args.decline {
        given("--decline")?;
        return Ok(ElicitResult::decline().into());
    }
    if args.cancel {
        given("--cancel")?;
        return Ok(ElicitResult::cancel().into());
    }
    match question.kind() {
        QuestionKind::Form => {
            let schema = question.schema().cloned().unwrap_or_default();
            let content = crate::arguments::parse(fields, &schema)
                .map_err(|e| Failure::usage(format!("{e:#}")))?;
            Ok(ElicitResult::accept(content).into())
        }
        QuestionKind::Url => {
            given("a URL question")?;
            Ok(ElicitResult::accept_empty().into())
        }
        kind => bail!(Failure::usage(format!(
            "question {key:?} is a {kind} request: give its answer with --json-answer"
        ))),
    }
}

/// `text` on one line, cut to 120 characters.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}
