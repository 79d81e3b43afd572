//! What the `http` and `stdio` examples do once connected: list the tools,
//! or call one, printing each progress report and each status change on
//! the way, answering the server's questions at the terminal, then the
//! outcome.

use std::io::{BufRead, Write};
use std::time::Duration;

use mcp_tasks::input::{FormRequest, InputHandlers};
use mcp_tasks::protocol::ElicitResult;
use mcp_tasks::{BoxError, Client, Outcome, TaskState};
use serde_json::{Map, Value, json};

/// Handlers that ask the person at the terminal: the form's message, then
/// one line per field of its schema (an empty line or the end of input
/// declines).
pub fn terminal() -> InputHandlers {
    InputHandlers::new().elicitation_form(|req| async move {
        tokio::task::spawn_blocking(move || ask(&req)).await?
    })
}

fn ask(req: &FormRequest) -> Result<ElicitResult, BoxError> {
    println!("the server asks: {}", req.message);
    let mut content = Map::new();
    let empty = Map::new();
    let fields = req.requested_schema["properties"]
        .as_object()
        .unwrap_or(&empty);
    let mut stdin = std::io::stdin().lock();
    for (name, field) in fields {
        // Choices come as `oneOf: [{const, title}]` or as `enum`.
        let choices: Vec<(Value, String)> =
            match (field["oneOf"].as_array(), field["enum"].as_array()) {
                (Some(one_of), _) => one_of
                    .iter()
                    .map(|c| {
                        (
                            c["const"].clone(),
                            c["title"].as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect(),
                (None, Some(values)) => values.iter().map(|v| (v.clone(), v.to_string())).collect(),
                (None, None) => Vec::new(),
            };
        let about = field["title"]
            .as_str()
            .or(field["description"].as_str())
            .unwrap_or(name);
        println!("  {about}:");
        for (n, (_, title)) in choices.iter().enumerate() {
            println!("    {}) {title}", n + 1);
        }
        print!("  > ");
        std::io::stdout().flush()?;
        let mut line = String::new();
        if stdin.read_line(&mut line)? == 0 || line.trim().is_empty() {
            return Ok(ElicitResult::decline());
        }
        let line = line.trim();
        let value = if let Some((value, _)) = line
            .parse::<usize>()
            .ok()
            .and_then(|n| choices.get(n.wrapping_sub(1)))
        {
            value.clone()
        } else {
            match field["type"].as_str() {
                Some("boolean") => json!(matches!(line, "y" | "yes" | "true")),
                Some("integer") => json!(line.parse::<i64>()?),
                Some("number") => json!(line.parse::<f64>()?),
                _ => json!(line),
            }
        };
        content.insert(name.clone(), value);
    }
    Ok(ElicitResult::accept(Value::Object(content)))
}

/// Lists the server's tools when `tool` is `None`, else calls it.
pub async fn run(
    client: &Client,
    tool: Option<String>,
    arguments: Value,
) -> Result<(), Box<dyn std::error::Error>> {
    let Some(tool) = tool else {
        let server = client.discover().await?;
        println!("server: {}", client.server_id().unwrap_or("(unnamed)"));
        println!("protocol: {}", client.protocol_version());
        println!("versions: {}", server.supported_versions.join(", "));
        println!("tasks: {}", client.supports_tasks().await?);
        for tool in client.list_tools().await? {
            let about = tool.description.as_deref().unwrap_or("");
            let about = about.lines().next().unwrap_or("");
            println!("  {:<32} {about}", tool.name);
        }
        return Ok(());
    };

    let mut state = client
        .task()
        .timeout(Duration::from_secs(600))
        .on_progress(|p| match p.fraction() {
            Some(f) => println!("progress {:>3.0}%  {p}", f * 100.0),
            None => println!("progress       {p}"),
        })
        .call_tool(&tool, arguments)
        .await?;
    let finished = loop {
        state = match state {
            TaskState::Finished(task) => break task,
            TaskState::Pending(task) => {
                // The id is a secret: it prints shortened.
                println!("task {:?}", task.id());
                // Every change of status, with the questions answered by
                // the terminal handlers on the way.
                let mut updates = task.updates();
                while let Some(snapshot) = updates.next().await {
                    let snapshot = snapshot?;
                    let message = snapshot.status_message.as_deref().unwrap_or("");
                    println!("  {:<15} {message}", snapshot.status.as_str());
                }
                updates.into_task()
            }
            TaskState::InputRequired(task) => {
                // Only questions no handler answers stop here.
                println!(
                    "the server asks for input no handler answers: {:?}",
                    task.requests().keys()
                );
                task.cancel().await?;
                return Ok(());
            }
        };
    };
    match finished.outcome() {
        Outcome::Completed(result) if result.is_error => {
            println!("the tool reported an error: {}", result.joined_text())
        }
        Outcome::Completed(result) => println!("{}", result.joined_text()),
        Outcome::Failed(error) => println!("the task failed: {error}"),
        Outcome::Cancelled => println!("the task was cancelled"),
        Outcome::Expired => println!("the task expired"),
    }
    Ok(())
}
