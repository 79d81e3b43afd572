//! What the `http` and `stdio` examples do once connected: list the tools,
//! or call one, printing each progress report and each status change on
//! the way, answering the server's questions at the terminal, then the
//! outcome, with the exit status a script expects.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Duration;

use mcp_tasks::input::{FormRequest, InputHandlers};
use mcp_tasks::protocol::{
    CreateMessageRequest, CreateMessageResult, ElicitResult, ListRootsResult, Root,
};
use mcp_tasks::{BoxError, Client, Outcome, TaskState};
use serde_json::{Map, Value, json};

/// Handlers for all the example can answer, so that the client declares
/// each (a server hides the tools that need what a client does not
/// declare): a form asked at the terminal (the form's message, then one
/// line per field of its schema; an empty line or the end of input
/// declines), a sampling request answered by the line the person types,
/// and the current folder as the one root.
pub fn terminal() -> InputHandlers {
    InputHandlers::new()
        .elicitation_form(
            |req| async move { tokio::task::spawn_blocking(move || ask(&req)).await? },
        )
        .sampling(|req| async move { tokio::task::spawn_blocking(move || sample(&req)).await? })
        .roots(|_| async {
            let here = std::env::current_dir()?;
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: file_uri(&here),
                    name: None,
                }],
            })
        })
}

/// Shows a sampling request's messages and takes the typed line as the
/// model's reply; an empty line or the end of input declines (an error
/// to the server: sampling has no decline answer).
fn sample(req: &CreateMessageRequest) -> Result<CreateMessageResult, BoxError> {
    println!("the server asks for a model's reply to:");
    for m in &req.messages {
        let text = m.content["text"].as_str().map(str::to_owned);
        println!(
            "  {}: {}",
            m.role,
            text.unwrap_or_else(|| m.content.to_string())
        );
    }
    print!("  your reply > ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 || line.trim().is_empty() {
        return Err("declined: no reply was typed".into());
    }
    Ok(CreateMessageResult {
        role: "assistant".into(),
        content: json!({"type": "text", "text": line.trim()}),
        model: "typed-at-the-terminal".into(),
        stop_reason: Some("endTurn".into()),
    })
}

/// `file://` and an absolute path, bytes other than letters, digits,
/// `-._~/:` percent-encoded (`\` read as `/`, for Windows).
fn file_uri(path: &std::path::Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let mut uri = String::from("file://");
    if !text.starts_with('/') {
        uri.push('/');
    }
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/:".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
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

/// Lists the server's tools when `tool` is `None`, else calls it. The exit
/// status a script expects: success when the tools were listed or the call
/// completed, failure when the tool reported an error or the task failed,
/// was cancelled, expired, or asked for input no handler answers.
pub async fn run(
    client: &Client,
    tool: Option<String>,
    arguments: Value,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
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
        return Ok(ExitCode::SUCCESS);
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
                eprintln!(
                    "the server asks for input no handler answers: {:?}",
                    task.requests().keys()
                );
                task.cancel().await?;
                return Ok(ExitCode::FAILURE);
            }
        };
    };
    match finished.outcome() {
        Outcome::Completed(result) if result.is_error => {
            eprintln!("the tool reported an error: {}", result.joined_text());
            return Ok(ExitCode::FAILURE);
        }
        Outcome::Completed(result) => println!("{}", result.joined_text()),
        Outcome::Failed(error) => {
            eprintln!("the task failed: {error}");
            return Ok(ExitCode::FAILURE);
        }
        Outcome::Cancelled => {
            eprintln!("the task was cancelled");
            return Ok(ExitCode::FAILURE);
        }
        Outcome::Expired => {
            eprintln!("the task expired");
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}
