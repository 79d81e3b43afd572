//! What a server offers besides tools: `resources`, `templates`, `read`,
//! `prompts`, `prompt` and `complete`. Each connects, asks once, prints
//! what it got (text for a person, or one JSON object on one line with
//! `--json`) and closes.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use mcp_tasks::Error;
use mcp_tasks::protocol::{
    CompletionArgument, CompletionContext, CompletionRef, ContentBlock, PromptArgument,
    ResourceBody, ResourceContents,
};
use serde::Serialize;
use serde_json::{Value, json};

use super::on_server;
use crate::server::ServerArgs;
use crate::{Failure, exit, one_line};

/// The commands of this module.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the server's resources: URI, MIME type, name and description.
    #[command(after_help = "\
With --json, one object: {\"resources\": [{\"uri\", \"name\", \"title\"?, \"description\"?, \
\"mimeType\"?, \"size\"?, …}]}, every page of the listing in order.")]
    Resources(ListArgs),
    /// List the server's resource templates (URIs with `{variables}`).
    #[command(after_help = "\
With --json, one object: {\"resourceTemplates\": [{\"uriTemplate\", \"name\", \
\"description\"?, \"mimeType\"?, …}]}. `mcp-tasks complete --template URI_TEMPLATE VAR=…` \
suggests values for a variable.")]
    Templates(ListArgs),
    /// Read one resource: its text is printed; binary contents are
    /// summarised unless --out saves them.
    #[command(after_help = "\
With --json, one object: {\"contents\": [{\"uri\", \"mimeType\"?, \"text\" | \"blob\" \
(base64)}]}, as the server sent it.

The server may ask a question before it answers; it is asked at the prompt (declined with \
--json or without a terminal).")]
    Read(ReadArgs),
    /// List the server's prompts and their arguments.
    #[command(after_help = "\
ARGUMENTS marks the required ones with `*`. With --json, one object: {\"prompts\": \
[{\"name\", \"description\"?, \"arguments\"?: [{\"name\", \"description\"?, \
\"required\"?}]}]}.")]
    Prompts(ListArgs),
    /// Render one prompt with its arguments and print its messages.
    #[command(after_help = "\
ARGS are key=value pairs (prompt arguments are strings) or one JSON object. Each message \
is printed after a `[role]` line. With --json, one object: {\"description\"?, \
\"messages\": [{\"role\", \"content\": {\"type\", …}}]}.")]
    Prompt(PromptArgs),
    /// Suggest values for a prompt argument or a resource template
    /// variable, given what is typed so far.
    #[command(after_help = "\
Examples:
  mcp-tasks complete --prompt review focus=s -- mcp-tasks-demo
  mcp-tasks complete --template 'demo://tables/{table}/summary' table=ord -- mcp-tasks-demo

The first NAME=TYPED names the argument to complete and what is typed so far (NAME alone: \
nothing yet); the pairs after it are the other arguments already chosen, which some servers \
use. One value per line; with --json, one object: {\"values\": [...], \"total\"?, \
\"hasMore\"?}.")]
    Complete(CompleteArgs),
}

impl Command {
    /// Whether the command prints JSON (its errors too).
    pub fn json(&self) -> bool {
        match self {
            Command::Resources(a) | Command::Templates(a) | Command::Prompts(a) => a.json,
            Command::Read(a) => a.json,
            Command::Prompt(a) => a.json,
            Command::Complete(a) => a.json,
        }
    }

    /// The server the command names.
    fn server_mut(&mut self) -> &mut ServerArgs {
        match self {
            Command::Resources(a) | Command::Templates(a) | Command::Prompts(a) => &mut a.server,
            Command::Read(a) => &mut a.server,
            Command::Prompt(a) => &mut a.server,
            Command::Complete(a) => &mut a.server,
        }
    }
}

/// The arguments of a listing.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print the listing as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    server: ServerArgs,
}

/// The arguments of `read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The resource's URI, as `mcp-tasks resources` lists it.
    uri: String,
    /// Save the contents to FILE (text as UTF-8, binary as its bytes;
    /// several parts one after the other) instead of printing them.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print the contents as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    server: ServerArgs,
}

/// The arguments of `prompt`.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The prompt, as `mcp-tasks prompts` lists it.
    name: String,
    /// Its arguments: key=value pairs, or one JSON object.
    #[arg(value_name = "ARGS")]
    arguments: Vec<String>,
    /// Print the rendered prompt as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    server: ServerArgs,
}

/// The arguments of `complete`.
#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// Complete an argument of this prompt.
    #[arg(long, value_name = "NAME", conflicts_with = "template")]
    prompt: Option<String>,
    /// Complete a variable of this resource template (its URI template,
    /// as `mcp-tasks templates` lists it).
    #[arg(long, value_name = "URI_TEMPLATE")]
    template: Option<String>,
    /// The argument to complete as NAME=TYPED, then the arguments already
    /// chosen as KEY=VALUE.
    #[arg(value_name = "NAME=TYPED", required = true)]
    arguments: Vec<String>,
    /// Print the suggestions as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    server: ServerArgs,
}

/// Runs one of these commands.
pub async fn run(mut command: Command) -> anyhow::Result<u8> {
    // `--server NAME`: a server of a config file.
    command.server_mut().resolve(None)?;
    match command {
        Command::Resources(args) => {
            let listed = on_server(
                &args.server,
                args.json,
                true,
                "listing resources",
                |c| async move { c.list_resources().await },
            )
            .await?
            .map_err(|e| refused("cannot list the resources", e))?;
            if args.json {
                return print_json(&json!({ "resources": listed }));
            }
            let rows = listed
                .iter()
                .map(|r| {
                    [
                        r.uri.clone(),
                        r.mime_type.clone().unwrap_or_else(|| "-".into()),
                        about(&r.name, r.title.as_deref(), r.description.as_deref()),
                    ]
                })
                .collect();
            table(["URI", "MIME", "NAME"], rows, "(no resources)");
            Ok(exit::OK)
        }
        Command::Templates(args) => {
            let listed = on_server(
                &args.server,
                args.json,
                true,
                "listing templates",
                |c| async move { c.list_resource_templates().await },
            )
            .await?
            .map_err(|e| refused("cannot list the resource templates", e))?;
            if args.json {
                return print_json(&json!({ "resourceTemplates": listed }));
            }
            let rows = listed
                .iter()
                .map(|t| {
                    [
                        t.uri_template.clone(),
                        t.mime_type.clone().unwrap_or_else(|| "-".into()),
                        about(&t.name, t.title.as_deref(), t.description.as_deref()),
                    ]
                })
                .collect();
            table(["URI TEMPLATE", "MIME", "NAME"], rows, "(no templates)");
            Ok(exit::OK)
        }
        Command::Prompts(args) => {
            let listed = on_server(
                &args.server,
                args.json,
                true,
                "listing prompts",
                |c| async move { c.list_prompts().await },
            )
            .await?
            .map_err(|e| refused("cannot list the prompts", e))?;
            if args.json {
                return print_json(&json!({ "prompts": listed }));
            }
            let rows = listed
                .iter()
                .map(|p| {
                    [
                        p.name.clone(),
                        arguments_of(p.arguments.as_deref().unwrap_or_default()),
                        about("", p.title.as_deref(), p.description.as_deref()),
                    ]
                })
                .collect();
            table(["PROMPT", "ARGUMENTS", "DESCRIPTION"], rows, "(no prompts)");
            Ok(exit::OK)
        }
        Command::Read(args) => read(args).await,
        Command::Prompt(args) => prompt(args).await,
        Command::Complete(args) => complete(args).await,
    }
}

/// A request's error as the command's: a server's refusal (an unknown
/// URI or prompt, a missing argument, a feature it does not offer) fails
/// the command ([`exit::FAILED`]); anything else has the exit status its
/// cause calls for ([`exit::of`]: a lost connection is
/// [`exit::UNREACHABLE`]).
fn refused(what: &str, e: Error) -> anyhow::Error {
    // The server's own words, without the layers around them.
    let line = match e.rpc_error() {
        Some(rpc) => format!("{what}: {} (code {})", rpc.message, rpc.code),
        None => format!("{what}: {}", one_line(&e)),
    };
    if e.is_rpc() || e.is_missing_capability() || e.is_input_required() {
        Failure::failed(line).into()
    } else {
        Failure::of(&e, line).into()
    }
}

/// `mcp-tasks read URI`.
async fn read(args: ReadArgs) -> anyhow::Result<u8> {
    let uri = args.uri.clone();
    let read = on_server(&args.server, args.json, true, "reading", |c| async move {
        c.read_resource(&uri).await
    })
    .await?
    .map_err(|e| refused(&format!("cannot read {}", args.uri), e))?;
    if let Some(path) = &args.out {
        let mut bytes = Vec::new();
        for part in &read.contents {
            bytes.extend(bytes_of(part)?);
        }
        std::fs::write(path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(|e| Failure::failed(crate::chain(&e)))?;
        eprintln!(
            "wrote {} ({}) to {}",
            size(bytes.len()),
            mime_types(&read.contents),
            path.display()
        );
    }
    if args.json {
        return print_json(&json!({ "contents": read.contents }));
    }
    if args.out.is_some() {
        return Ok(exit::OK);
    }
    let several = read.contents.len() > 1;
    for part in &read.contents {
        if several {
            out!("--- {} ({})", part.uri, mime_of(part));
        }
        match part.body() {
            Ok(ResourceBody::Text(text)) => {
                crate::stdout::bytes(text.as_bytes());
                if !text.ends_with('\n') {
                    out!();
                }
            }
            Ok(ResourceBody::Blob(bytes)) => out!(
                "[binary {}, {}: --out FILE saves it]",
                mime_of(part),
                size(bytes.len())
            ),
            Err(e) => out!("[unreadable contents: {e}]"),
        }
    }
    if read.contents.is_empty() {
        eprintln!("(the resource is empty)");
    }
    Ok(exit::OK)
}

/// The bytes of one part of a resource, for `--out`.
fn bytes_of(part: &ResourceContents) -> anyhow::Result<Vec<u8>> {
    match part.body() {
        Ok(ResourceBody::Text(text)) => Ok(text.as_bytes().to_vec()),
        Ok(ResourceBody::Blob(bytes)) => Ok(bytes),
        Err(e) => Err(Failure::failed(format!("cannot save {}: {e}", part.uri)).into()),
    }
}

/// `mcp-tasks prompt NAME ARGS…`.
async fn prompt(args: PromptArgs) -> anyhow::Result<u8> {
    let given = crate::arguments::parse(&args.arguments, &Value::Null)
        .map_err(|e| Failure::usage(format!("{e:#}")))?;
    // Prompt arguments are strings: a value given as JSON is sent as its text.
    let given: Vec<(String, String)> = given
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| match v {
            Value::String(s) => (k.clone(), s.clone()),
            other => (k.clone(), other.to_string()),
        })
        .collect();
    let name = args.name.clone();
    let rendered = on_server(
        &args.server,
        args.json,
        true,
        "rendering the prompt",
        |c| async move { c.get_prompt(&name, given).await },
    )
    .await?
    .map_err(|e| refused(&format!("cannot get the prompt {:?}", args.name), e))?;
    if args.json {
        return print_json(&json!({
            "description": rendered.description,
            "messages": rendered.messages,
        }));
    }
    for (i, message) in rendered.messages.iter().enumerate() {
        if i > 0 {
            out!();
        }
        out!("[{}]", message.role.as_str());
        out!("{}", block_text(&message.content));
    }
    if rendered.messages.is_empty() {
        eprintln!("(the prompt has no messages)");
    }
    Ok(exit::OK)
}

/// A content block as text: text as it is, anything else named.
fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text, .. } => text.clone(),
        ContentBlock::Image {
            mime_type, data, ..
        } => format!("[image {mime_type}, {} base64]", size(data.len())),
        ContentBlock::Audio {
            mime_type, data, ..
        } => format!("[audio {mime_type}, {} base64]", size(data.len())),
        ContentBlock::ResourceLink { uri, name, .. } => format!("[resource {name}: {uri}]"),
        ContentBlock::Resource { resource, .. } => match resource.body() {
            Ok(ResourceBody::Text(text)) => text.to_owned(),
            _ => format!("[resource {} ({})]", resource.uri, mime_of(resource)),
        },
        _ => "[content of a type this client does not show]".into(),
    }
}

/// `mcp-tasks complete`.
async fn complete(args: CompleteArgs) -> anyhow::Result<u8> {
    let reference = match (&args.prompt, &args.template) {
        (Some(name), None) => CompletionRef::prompt(name),
        (None, Some(template)) => CompletionRef::resource_template(template),
        _ => {
            return Err(Failure::usage(
                "name what to complete: --prompt NAME or --template URI_TEMPLATE",
            )
            .into());
        }
    };
    let (first, others) = args
        .arguments
        .split_first()
        .ok_or_else(|| Failure::usage("name the argument to complete: NAME=TYPED"))?;
    let argument = match first.split_once('=') {
        Some((name, typed)) => CompletionArgument::new(name, typed),
        None => CompletionArgument::new(first, ""),
    };
    if argument.name.is_empty() {
        return Err(Failure::usage(format!("{first:?} names no argument before '='")).into());
    }
    let mut chosen = Vec::new();
    for pair in others {
        let (key, value) = pair
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| Failure::usage(format!("{pair:?} is not KEY=VALUE")))?;
        chosen.push((key.to_owned(), value.to_owned()));
    }
    let context = (!chosen.is_empty()).then(|| CompletionContext::new(chosen));
    let found = on_server(
        &args.server,
        args.json,
        true,
        "completing",
        |c| async move { c.complete(reference, argument, context).await },
    )
    .await?
    .map_err(|e| refused("cannot complete", e))?;
    if args.json {
        return print_json(&found);
    }
    for value in &found.values {
        out!("{value}");
    }
    if found.values.is_empty() {
        eprintln!("(no suggestions)");
    } else if found.has_more == Some(true)
        || found.total.is_some_and(|t| t as usize > found.values.len())
    {
        let total = found
            .total
            .map_or_else(|| "more".to_owned(), |t| t.to_string());
        eprintln!("({} of {total} shown)", found.values.len());
    }
    Ok(exit::OK)
}

/// Prints `value` as one JSON object on one line, as every `--json`
/// output is.
fn print_json(value: &impl Serialize) -> anyhow::Result<u8> {
    out!("{}", serde_json::to_string(value)?);
    Ok(exit::OK)
}

/// Prints rows under a header, columns padded to their widest cell but the
/// last; `empty` when there are none.
fn table<const N: usize>(header: [&str; N], rows: Vec<[String; N]>, empty: &str) {
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out!("{}", out.trim_end());
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
    if rows.is_empty() {
        out!("{empty}");
    }
}

/// A name with its title and the first line of its description.
fn about(name: &str, title: Option<&str>, description: Option<&str>) -> String {
    let mut text = name.to_owned();
    if let Some(title) = title.filter(|t| !t.is_empty() && *t != name) {
        if !text.is_empty() {
            text.push_str(" — ");
        }
        text.push_str(title);
    }
    let first = description
        .and_then(|d| d.lines().find(|l| !l.trim().is_empty()))
        .map(str::trim);
    if let Some(first) = first {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(first);
    }
    text
}

/// A prompt's arguments, the required ones marked `*`.
fn arguments_of(arguments: &[PromptArgument]) -> String {
    if arguments.is_empty() {
        return "-".into();
    }
    arguments
        .iter()
        .map(|a| {
            if a.required == Some(true) {
                format!("{}*", a.name)
            } else {
                a.name.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn mime_of(part: &ResourceContents) -> &str {
    part.mime_type.as_deref().unwrap_or("no MIME type")
}

/// The MIME types of the parts, each once.
fn mime_types(parts: &[ResourceContents]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for part in parts {
        let mime = mime_of(part);
        if !seen.contains(&mime) {
            seen.push(mime);
        }
    }
    if seen.is_empty() {
        return "empty".into();
    }
    seen.join(", ")
}

/// A byte count for people: `68 bytes`, `1.2 kB`, `3.4 MB`.
fn size(bytes: usize) -> String {
    match bytes {
        0..1000 => format!("{bytes} bytes"),
        1000..1_000_000 => format!("{:.1} kB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(size(69), "69 bytes");
        assert_eq!(size(1234), "1.2 kB");
        assert_eq!(size(3_400_000), "3.4 MB");
    }

    #[test]
    fn about_joins_name_title_and_first_line() {
        assert_eq!(about("a", None, None), "a");
        assert_eq!(
            about("readme", Some("About"), Some("\nFirst.\nSecond.")),
            "readme — About: First."
        );
        assert_eq!(about("", None, Some("Only this")), "Only this");
    }
}
