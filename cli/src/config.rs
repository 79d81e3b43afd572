//! Servers defined in the config files people already have: the
//! `mcpServers` form (Claude Desktop's `claude_desktop_config.json`,
//! Cursor's `mcp.json`, `.mcp.json`) and VS Code's `servers` form
//! (`.vscode/mcp.json`).
//!
//! A file is read as written; `${VAR}` and `${env:VAR}` are expanded only
//! when a server is used, so that `mcp-tasks servers` lists every entry
//! (with its secrets redacted) whatever the environment holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Map, Value};

use crate::Failure;

/// Where the user keeps the CLI's own files: `$XDG_CONFIG_HOME/mcp-tasks`,
/// else `~/.config/mcp-tasks`.
pub fn own_dir() -> Option<PathBuf> {
    config_home().map(|home| home.join("mcp-tasks"))
}

fn config_home() -> Option<PathBuf> {
    match std::env::var_os("XDG_CONFIG_HOME") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => home().map(|home| home.join(".config")),
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The files searched when no `--config` is given, first found wins per
/// name: the project's (`./.vscode/mcp.json`, `./.cursor/mcp.json`,
/// `./.mcp.json`), then the user's (the CLI's own `servers.json`, Claude
/// Desktop's, Cursor's).
pub fn search_path() -> Vec<PathBuf> {
    // Absolute, so that messages say which project a file belongs to.
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut files = vec![
        here.join(".vscode/mcp.json"),
        here.join(".cursor/mcp.json"),
        here.join(".mcp.json"),
    ];
    if let Some(own) = own_dir() {
        files.push(own.join("servers.json"));
    }
    if cfg!(target_os = "macos") {
        if let Some(home) = home() {
            files.push(home.join("Library/Application Support/Claude/claude_desktop_config.json"));
        }
    } else if let Some(config) = config_home() {
        files.push(config.join("Claude/claude_desktop_config.json"));
    }
    if let Some(home) = home() {
        files.push(home.join(".cursor/mcp.json"));
    }
    files
}

/// One server of a config file, as written (nothing expanded).
#[derive(Debug, Clone)]
pub struct Configured {
    /// Its name in the file.
    pub name: String,
    /// The file it came from.
    pub source: PathBuf,
    /// How it is reached.
    pub kind: Kind,
    /// The bound on each request to it, when the entry sets one.
    pub timeout: Option<Duration>,
    /// The entry says `"disabled": true`: listed, never run.
    pub disabled: bool,
}

/// How a configured server is reached, as written.
#[derive(Debug, Clone)]
pub enum Kind {
    /// A command run as a child process, spoken to over stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it (`env`).
        env: Vec<(String, String)>,
        /// A file of `KEY=VALUE` lines read for it (`envFile`).
        env_file: Option<String>,
    },
    /// A Streamable HTTP endpoint (`sse`: the older HTTP+SSE transport,
    /// which is listed but refused).
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
        /// Whether the entry says `"type": "sse"`.
        sse: bool,
    },
}

impl Configured {
    /// `stdio`, `http` or `sse`.
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            Kind::Stdio { .. } => "stdio",
            Kind::Http { sse: true, .. } => "sse",
            Kind::Http { .. } => "http",
        }
    }

    /// The command line or the URL, with secrets redacted: the values of
    /// the variables and headers, a URL's password and query values, and
    /// the value of an argument whose flag names a secret.
    pub fn redacted(&self) -> String {
        let mut line = self.redacted_command();
        match &self.kind {
            Kind::Stdio { env, .. } => {
                for (key, _) in env {
                    line.push_str(&format!("  {key}=***"));
                }
            }
            Kind::Http { headers, .. } => {
                for (name, _) in headers {
                    line.push_str(&format!("  {name}: ***"));
                }
            }
        }
        line
    }

    /// The command line or the URL alone, redacted as by
    /// [`Configured::redacted`].
    pub fn redacted_command(&self) -> String {
        match &self.kind {
            Kind::Stdio { command, args, .. } => {
                let mut words = vec![command.clone()];
                words.extend(redact_args(args));
                words.join(" ")
            }
            Kind::Http { url, .. } => redact_url(url),
        }
    }

    /// The entry with its variables expanded, ready to connect.
    ///
    /// # Errors
    ///
    /// A variable that is not set (named in the message), a VS Code input
    /// (`${input:…}`), an `envFile` that cannot be read, or the HTTP+SSE
    /// transport.
    pub fn resolve(&self) -> anyhow::Result<Resolved> {
        let workspace = workspace_of(&self.source);
        let lookup = |name: &str| std::env::var(name).ok();
        let expand = |text: &str| {
            expand(text, &lookup, &workspace).map_err(|e| {
                anyhow::Error::new(Failure::usage(format!(
                    "server {} ({}): {e}",
                    self.name,
                    self.source.display()
                )))
            })
        };
        let kind = match &self.kind {
            Kind::Stdio {
                command,
                args,
                env,
                env_file,
            } => {
                let mut vars = Vec::new();
                if let Some(file) = env_file {
                    let path = PathBuf::from(expand(file)?);
                    let path = if path.is_relative() {
                        workspace.join(path)
                    } else {
                        path
                    };
                    let text = std::fs::read_to_string(&path).with_context(|| {
                        format!(
                            "server {}: cannot read its envFile {}",
                            self.name,
                            path.display()
                        )
                    })?;
                    vars.extend(env_file_lines(&text));
                }
                for (key, value) in env {
                    vars.retain(|(k, _)| k != key);
                    vars.push((key.clone(), expand(value)?));
                }
                ResolvedKind::Stdio {
                    command: expand(command)?,
                    args: args.iter().map(|a| expand(a)).collect::<Result<_, _>>()?,
                    env: vars,
                }
            }
            Kind::Http { sse: true, .. } => bail!(Failure::usage(format!(
                "server {} ({}) uses the HTTP+SSE transport, which mcp-tasks does not \
                 speak: give it the server's Streamable HTTP endpoint (\"type\": \"http\")",
                self.name,
                self.source.display()
            ))),
            Kind::Http { url, headers, .. } => ResolvedKind::Http {
                url: expand(url)?,
                headers: headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                    .collect::<anyhow::Result<_>>()?,
            },
        };
        Ok(Resolved {
            kind,
            timeout: self.timeout,
        })
    }
}

/// A configured server with its variables expanded.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// How it is reached.
    pub kind: ResolvedKind,
    /// The bound on each request, when the entry sets one.
    pub timeout: Option<Duration>,
}

/// How a resolved server is reached.
#[derive(Debug, Clone)]
pub enum ResolvedKind {
    /// A child process.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it.
        env: Vec<(String, String)>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
}

/// The servers of the files read, first found winning per name.
#[derive(Debug, Default)]
pub struct ConfiguredServers {
    /// The servers by name.
    pub servers: BTreeMap<String, Configured>,
    /// The files looked at, in order.
    pub searched: Vec<PathBuf>,
    /// Files found but not readable as a config (searched files only; an
    /// explicit `--config` that cannot be read is an error).
    pub problems: Vec<String>,
}

impl ConfiguredServers {
    /// The servers of `explicit` (`--config`), else of the files of
    /// [`search_path`].
    ///
    /// # Errors
    ///
    /// When `explicit` cannot be read or is not a config file.
    pub fn load(explicit: Option<&Path>) -> anyhow::Result<ConfiguredServers> {
        let mut configured = ConfiguredServers::default();
        if let Some(file) = explicit {
            configured.searched.push(file.to_owned());
            let text = std::fs::read_to_string(file).map_err(|e| {
                Failure::usage(format!("cannot read --config {}: {e}", file.display()))
            })?;
            let found = parse(&text, file).map_err(|e| Failure::usage(format!("{e:#}")))?;
            configured.add(found);
            return Ok(configured);
        }
        for file in search_path() {
            configured.searched.push(file.clone());
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    configured
                        .problems
                        .push(format!("cannot read {}: {e}", file.display()));
                    continue;
                }
            };
            match parse(&text, &file) {
                Ok(found) => configured.add(found),
                Err(e) => configured.problems.push(format!("{e:#}")),
            }
        }
        Ok(configured)
    }

    fn add(&mut self, found: Vec<Configured>) {
        for server in found {
            self.servers.entry(server.name.clone()).or_insert(server);
        }
    }

    /// The server named `name`.
    ///
    /// # Errors
    ///
    /// When no file read defines it: the message names the files looked
    /// at and the servers they define.
    pub fn find(&self, name: &str) -> anyhow::Result<&Configured> {
        if let Some(server) = self.servers.get(name) {
            if server.disabled {
                bail!(Failure::usage(format!(
                    "the server {name:?} is disabled in {} (\"disabled\": true)",
                    server.source.display()
                )));
            }
            return Ok(server);
        }
        let files: Vec<String> = self
            .searched
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        let mut message = format!("no server named {name:?} in {}", files.join(", "));
        if self.servers.is_empty() {
            message.push_str(" (none defines a server)");
        } else {
            let known: Vec<String> = self
                .servers
                .values()
                .map(|s| format!("{} ({})", s.name, s.source.display()))
                .collect();
            message.push_str(&format!("; known: {}", known.join(", ")));
        }
        for problem in &self.problems {
            message.push_str(&format!("; {problem}"));
        }
        bail!(Failure::usage(message))
    }
}

/// The servers of one config file's text, either form.
///
/// # Errors
///
/// When the text is not JSON (comments and trailing commas, which VS Code
/// allows, are accepted), holds neither `mcpServers` nor `servers`, or an
/// entry is neither a command nor a URL.
pub fn parse(text: &str, source: &Path) -> anyhow::Result<Vec<Configured>> {
    let value: Value = serde_json::from_str(&strip_jsonc(text))
        .with_context(|| format!("{} is not JSON", source.display()))?;
    let (entries, vscode) = match (value.get("mcpServers"), value.get("servers")) {
        (Some(Value::Object(entries)), _) => (entries, false),
        (None, Some(Value::Object(entries))) => (entries, true),
        _ => bail!(
            "{} has no \"mcpServers\" or \"servers\" object",
            source.display()
        ),
    };
    let mut servers = Vec::new();
    for (name, entry) in entries {
        let server = entry_of(name, entry, vscode, source)
            .with_context(|| format!("server {name} in {}", source.display()))?;
        servers.push(server);
    }
    Ok(servers)
}

fn entry_of(name: &str, entry: &Value, vscode: bool, source: &Path) -> anyhow::Result<Configured> {
    let Value::Object(entry) = entry else {
        bail!("not an object");
    };
    let kind_word = entry.get("type").and_then(Value::as_str);
    let url = entry
        .get("url")
        .or_else(|| entry.get("serverUrl"))
        .and_then(Value::as_str);
    let command = entry.get("command").and_then(Value::as_str);
    let kind = match (kind_word, command, url) {
        (Some("stdio") | None, Some(command), _) => Kind::Stdio {
            command: command.to_owned(),
            args: strings(entry, "args")?,
            env: pairs(entry, "env")?,
            env_file: entry
                .get("envFile")
                .and_then(Value::as_str)
                .map(str::to_owned),
        },
        (Some("http" | "streamable-http" | "streamableHttp") | None, _, Some(url)) => Kind::Http {
            url: url.to_owned(),
            headers: pairs(entry, "headers")?,
            sse: false,
        },
        (Some("sse"), _, Some(url)) => Kind::Http {
            url: url.to_owned(),
            headers: pairs(entry, "headers")?,
            sse: true,
        },
        (Some(other), _, _) if !matches!(other, "stdio" | "http" | "sse") => {
            bail!("\"type\": {other:?} is none of stdio, http, sse")
        }
        _ if vscode => bail!("has neither \"command\" (type stdio) nor \"url\" (type http)"),
        _ => bail!("has neither \"command\" nor \"url\""),
    };
    Ok(Configured {
        name: name.to_owned(),
        source: source.to_owned(),
        kind,
        timeout: timeout_of(entry)?,
        disabled: entry.get("disabled").and_then(Value::as_bool) == Some(true),
    })
}

fn strings(entry: &Map<String, Value>, key: &str) -> anyhow::Result<Vec<String>> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                Value::Bool(b) => Ok(b.to_string()),
                _ => bail!("\"{key}\" holds something other than strings"),
            })
            .collect(),
        Some(_) => bail!("\"{key}\" is not a list"),
    }
}

fn pairs(entry: &Map<String, Value>, key: &str) -> anyhow::Result<Vec<(String, String)>> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => bail!("\"{key}\".{k} is not a string"),
            })
            .collect(),
        Some(_) => bail!("\"{key}\" is not an object"),
    }
}

/// The per-server timeout: `timeout` in milliseconds (a number of at
/// least 1000) or with a unit (`"90s"`, `"2m"`, `"500ms"`), `timeoutMs`,
/// or `timeoutSeconds`.
fn timeout_of(entry: &Map<String, Value>) -> anyhow::Result<Option<Duration>> {
    if let Some(ms) = entry.get("timeoutMs") {
        let ms = ms.as_u64().context("\"timeoutMs\" is not a whole number")?;
        return Ok(Some(Duration::from_millis(ms)));
    }
    if let Some(s) = entry.get("timeoutSeconds") {
        let s = s
            .as_f64()
            .filter(|s| *s >= 0.0 && s.is_finite())
            .context("\"timeoutSeconds\" is not a number of seconds")?;
        return Ok(Some(Duration::from_secs_f64(s)));
    }
    match entry.get("timeout") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let ms = n
                .as_u64()
                .context("\"timeout\" is not a whole number of milliseconds")?;
            if ms < 1000 {
                bail!(
                    "\"timeout\": {ms} is read as milliseconds, which is too short to be meant: \
                     write \"{ms}s\" for seconds"
                );
            }
            Ok(Some(Duration::from_millis(ms)))
        }
        Some(Value::String(text)) => parse_duration(text).map(Some).with_context(|| {
            format!("\"timeout\": {text:?} is not like \"90s\", \"2m\", \"500ms\"")
        }),
        Some(_) => bail!("\"timeout\" is neither a number nor a string"),
    }
}

fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    match unit.trim() {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" | "min" => Some(Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
    }
}

/// The text without `//` and `/* */` comments and without commas before a
/// closing bracket (VS Code's JSON with comments), strings untouched.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            (']' | '}', _) => {
                let trimmed = out.trim_end().len();
                if out[..trimmed].ends_with(',') {
                    out.truncate(trimmed - 1);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The folder `${workspaceFolder}` stands for: the one holding the file's
/// `.vscode` or `.cursor` folder, else the file's own folder.
fn workspace_of(source: &Path) -> PathBuf {
    let dir = source.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    match dir.file_name().and_then(|n| n.to_str()) {
        Some(".vscode" | ".cursor") => dir.parent().unwrap_or(Path::new(".")).to_owned(),
        _ => dir.to_owned(),
    }
}

/// Why a value could not be expanded.
#[derive(Debug, PartialEq, Eq)]
pub enum ExpandError {
    /// `${VAR}` or `${env:VAR}` of a variable that is not set.
    Missing(String),
    /// `${input:ID}`: VS Code prompts for it; this CLI does not.
    Input(String),
    /// `${…}` of a kind not known here.
    Unknown(String),
    /// `${` without its `}`.
    Unclosed,
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Missing(name) => {
                write!(f, "the environment variable {name} is not set")
            }
            ExpandError::Input(id) => write!(
                f,
                "${{input:{id}}} asks VS Code to prompt for a value, which mcp-tasks does not \
                 do: put the value in an environment variable and write ${{env:VAR}}"
            ),
            ExpandError::Unknown(what) => {
                write!(f, "${{{what}}} is not a variable mcp-tasks knows")
            }
            ExpandError::Unclosed => f.write_str("a `${` has no closing `}`"),
        }
    }
}

impl std::error::Error for ExpandError {}

/// `text` with `${VAR}`, `${env:VAR}`, `${workspaceFolder}` and
/// `${userHome}` replaced; anything else is kept as written.
///
/// # Errors
///
/// A variable `lookup` does not know, `${input:…}`, another `${…:…}`, or
/// a `${` left open.
pub fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    workspace: &Path,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(ExpandError::Unclosed)?;
        let inner = &after[..end];
        let value = match inner.split_once(':') {
            Some(("env", name)) => lookup(name).ok_or_else(|| ExpandError::Missing(name.into()))?,
            Some(("input", id)) => return Err(ExpandError::Input(id.into())),
            Some(_) => return Err(ExpandError::Unknown(inner.into())),
            None if inner == "workspaceFolder" => workspace.display().to_string(),
            None if inner == "userHome" => {
                lookup("HOME").ok_or_else(|| ExpandError::Missing("HOME".into()))?
            }
            None if is_name(inner) => {
                lookup(inner).ok_or_else(|| ExpandError::Missing(inner.into()))?
            }
            None => return Err(ExpandError::Unknown(inner.into())),
        };
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `KEY=VALUE` lines of an env file: blank lines and `#` comments
/// skipped, an `export ` prefix and quotes around the value removed.
fn env_file_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|line| {
            let line = line.strip_prefix("export ").unwrap_or(line);
            let (key, value) = line.split_once('=')?;
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            Some((key.trim().to_owned(), value.to_owned()))
        })
        .collect()
}

/// `url` with its password (or lone user, often a token) and its query
/// values replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(host_end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("***@{}", &authority[at + 1..]),
        None => authority.to_owned(),
    };
    let (tail, fragment) = match tail.split_once('#') {
        Some((tail, _)) => (tail, "#***"),
        None => (tail, ""),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) => format!("{key}=***"),
                    None => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}{authority}{tail}{fragment}")
}

/// Whether a flag's name suggests its value is a secret.
fn secret_flag(flag: &str) -> bool {
    let flag = flag.trim_start_matches('-').to_ascii_lowercase();
    [
        "token",
        "secret",
        "key",
        "password",
        "passwd",
        "auth",
        "credential",
    ]
    .iter()
    .any(|word| flag.contains(word))
}

/// Arguments with the value of a secret-looking flag (`--api-key X`,
/// `--token=X`) replaced by `***`.
fn redact_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for arg in args {
        if hide_next && !arg.starts_with('-') {
            out.push("***".to_owned());
            hide_next = false;
            continue;
        }
        hide_next = false;
        if arg.starts_with('-') && arg.len() > 1 {
            if let Some((flag, _)) = arg.split_once('=') {
                if secret_flag(flag) {
                    out.push(format!("{flag}=***"));
                    continue;
                }
            } else {
                hide_next = secret_flag(arg);
            }
        }
        out.push(arg.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "HOME" => Some("/home/me".into()),
            _ => None,
        }
    }

    fn parsed(text: &str, file: &str) -> Vec<Configured> {
        parse(text, Path::new(file)).expect("parses")
    }

    #[test]
    fn the_mcp_servers_form_gives_commands_and_urls() {
        let servers = parsed(
            r#"{"mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server-files", "/tmp"],
                          "env": {"DEBUG": "1"}},
                "remote": {"url": "https://mcp.example.com/mcp",
                           "headers": {"Authorization": "Bearer ${TOKEN}"},
                           "timeout": 90000}
            }}"#,
            "claude_desktop_config.json",
        );
        assert_eq!(servers.len(), 2);
        let files = servers.iter().find(|s| s.name == "files").unwrap();
        assert_eq!(files.kind_name(), "stdio");
        assert_eq!(files.redacted(), "npx -y server-files /tmp  DEBUG=***");
        let remote = servers.iter().find(|s| s.name == "remote").unwrap();
        assert_eq!(remote.kind_name(), "http");
        assert_eq!(remote.timeout, Some(Duration::from_secs(90)));
        assert_eq!(
            remote.redacted(),
            "https://mcp.example.com/mcp  Authorization: ***"
        );
    }

    #[test]
    fn the_vscode_form_reads_types_comments_and_trailing_commas() {
        let servers = parsed(
            r#"{
              // a comment
              "inputs": [{"type": "promptString", "id": "key"}],
              "servers": {
                "local": {"type": "stdio", "command": "demo", "args": ["--fast",],},
                "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "timeout": "30s"},
                "old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, /* the last */
              }
            }"#,
            ".vscode/mcp.json",
        );
        let kinds: Vec<_> = servers
            .iter()
            .map(|s| (s.name.as_str(), s.kind_name()))
            .collect();
        assert_eq!(kinds, [("local", "stdio"), ("old", "sse"), ("web", "http")]);
        let web = servers.iter().find(|s| s.name == "web").unwrap();
        assert_eq!(web.timeout, Some(Duration::from_secs(30)));
        let old = servers.iter().find(|s| s.name == "old").unwrap();
        let e = old.resolve().unwrap_err().to_string();
        assert!(e.contains("HTTP+SSE"), "{e}");
    }

    #[test]
    fn a_file_without_servers_or_a_bad_entry_is_refused_with_its_name() {
        let e = parse(r#"{"other": {}}"#, Path::new("x.json")).unwrap_err();
        assert!(format!("{e:#}").contains("x.json"), "{e:#}");
        let e = parse(
            r#"{"mcpServers": {"a": {"args": []}}}"#,
            Path::new("x.json"),
        )
        .unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("server a") && text.contains("neither"),
            "{text}"
        );
        let e = parse(
            r#"{"mcpServers": {"a": {"url": "http://h", "timeout": 60}}}"#,
            Path::new("x.json"),
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("60s"), "{e:#}");
    }

    #[test]
    fn variables_expand_and_a_missing_one_is_named() {
        let here = Path::new("/work/project");
        assert_eq!(
            expand("Bearer ${TOKEN}", &env, here).unwrap(),
            "Bearer s3cret"
        );
        assert_eq!(expand("${env:TOKEN}!", &env, here).unwrap(), "s3cret!");
        assert_eq!(
            expand("${workspaceFolder}/data ${userHome}", &env, here).unwrap(),
            "/work/project/data /home/me"
        );
        assert_eq!(expand("$PLAIN and $", &env, here).unwrap(), "$PLAIN and $");
        assert_eq!(
            expand("${env:NOPE}", &env, here),
            Err(ExpandError::Missing("NOPE".into()))
        );
        assert_eq!(
            expand("${NOPE}", &env, here).unwrap_err().to_string(),
            "the environment variable NOPE is not set"
        );
        assert!(matches!(
            expand("${input:key}", &env, here),
            Err(ExpandError::Input(_))
        ));
        assert_eq!(expand("${TOKEN", &env, here), Err(ExpandError::Unclosed));
    }

    #[test]
    fn workspace_folder_is_the_project_of_a_vscode_file() {
        assert_eq!(
            workspace_of(Path::new("/p/.vscode/mcp.json")),
            Path::new("/p")
        );
        assert_eq!(workspace_of(Path::new("/p/servers.json")), Path::new("/p"));
        assert_eq!(workspace_of(Path::new(".mcp.json")), Path::new("."));
    }

    #[test]
    fn urls_lose_their_passwords_and_query_values() {
        assert_eq!(
            redact_url("https://user:pw@h.example/mcp?api_key=abc&x=1#frag"),
            "https://***@h.example/mcp?api_key=***&x=***#***"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8/mcp"),
            "http://127.0.0.1:8/mcp"
        );
    }

    #[test]
    fn arguments_naming_a_secret_lose_their_values() {
        let args: Vec<String> = ["--api-key", "k1", "--token=t1", "--port", "80", "-v"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            redact_args(&args),
            ["--api-key", "***", "--token=***", "--port", "80", "-v"]
        );
    }

    #[test]
    fn env_files_give_key_value_pairs() {
        let vars = env_file_lines("# note\n\nexport A=1\nB = \"two words\"\nC='x'\nnot a pair\n");
        assert_eq!(
            vars,
            [
                ("A".to_owned(), "1".to_owned()),
                ("B".to_owned(), "two words".to_owned()),
                ("C".to_owned(), "x".to_owned()),
            ]
        );
    }

    #[test]
    fn the_first_file_wins_and_an_unknown_name_names_the_files() {
        let mut configured = ConfiguredServers {
            searched: vec!["a.json".into(), "b.json".into()],
            ..ConfiguredServers::default()
        };
        configured.add(parsed(
            r#"{"mcpServers": {"x": {"command": "first"}}}"#,
            "a.json",
        ));
        configured.add(parsed(
            r#"{"mcpServers": {"x": {"command": "second"}, "y": {"url": "http://h/mcp"}}}"#,
            "b.json",
        ));
        assert_eq!(configured.find("x").unwrap().source, Path::new("a.json"));
        assert_eq!(configured.find("y").unwrap().source, Path::new("b.json"));
        let e = configured.find("z").unwrap_err().to_string();
        assert!(
            e.contains("\"z\"") && e.contains("a.json, b.json") && e.contains("y (b.json)"),
            "{e}"
        );
    }
}
