//! The tasks `call --detach` leaves running, kept in a SQLite file under
//! the user's data folder, so that `list` shows them and `status`, `wait`
//! and `cancel` find them by a short local name (`12` or `#12`).
//!
//! The file is the library's `SqliteStore` (`tasks.db` in
//! `$MCP_TASKS_DATA_DIR`, else `$XDG_DATA_HOME/mcp-tasks`, else
//! `$HOME/.local/share/mcp-tasks`), with nothing added to its schema. One
//! record per detached task: its `TaskRef` (the task id in full: the file
//! is readable by its owner alone), the tool, the last status seen, and how
//! the task ended once a command saw it end. The record's `scope` is
//! [`SCOPE`]. Its reference names the server as the task list reaches it
//! again ([`Endpoint::id`]: `@NAME` for a server of a config file, else
//! its URL, else JSON such as `{"command": [PROGRAM, ARG…]}`), as an
//! application names its servers by the client's `server_id`; its `key`
//! is the digest of the task id that `list` shows (`#1a2b3c4d`), by which
//! a reference finds its record. Never a credential: headers and bearer
//! tokens are not recorded (give them again, or keep `MCP_BEARER_TOKEN`
//! set), and a URL's `user:password@` is left out. The record's id is the
//! short local name.
//!
//! Records written before kept the endpoint in the `key`, as JSON, and
//! the reference as the server gave it: they are read as they were.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use mcp_tasks::TaskRef;
use mcp_tasks::protocol::{InputRequests, InputResponse, InputResponses, TaskStatus};
use mcp_tasks::store::backend::{Claim, NewTask, StepReport};
use mcp_tasks::store::{
    Answerer, Ending, Filter, Forgotten, RecordId, SqliteStore, StoreError, TaskRecord, TaskStore,
};
use serde::{Deserialize, Serialize};

use crate::Failure;

/// The scope of every record the CLI writes.
pub const SCOPE: &str = "mcp-tasks-cli";

/// The name the CLI's writes are leased under.
const WORKER: &str = "mcp-tasks-cli";

/// How long one command holds a record while it writes it back.
const LEASE: Duration = Duration::from_secs(30);

/// The store's file name, in the data folder.
const FILE: &str = "tasks.db";

/// The variable that names the data folder itself.
pub const DATA_DIR_VAR: &str = "MCP_TASKS_DATA_DIR";

/// How to reach a task's server again: no credential in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Endpoint {
    /// A Streamable HTTP endpoint, without any `user:password@`.
    Url(String),
    /// A server run as a child process: the program and its arguments.
    Command(Vec<String>),
    /// A server of a config file, by its name (and the file, when the
    /// command named one): a later command reads its entry again, with
    /// its variables, headers and environment, none of which is kept here.
    Configured {
        /// The server's name in the config file.
        name: String,
        /// The file given with `--config`, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config: Option<std::path::PathBuf>,
    },
}

impl Endpoint {
    /// The endpoint of a server at `url`, any `user:password@` left out.
    pub fn url(url: &str) -> Endpoint {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Endpoint::Url(url.to_owned());
        };
        let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let rest = match rest[..host_end].rfind('@') {
            Some(at) => &rest[at + 1..],
            None => rest,
        };
        Endpoint::Url(format!("{scheme}://{rest}"))
    }

    /// How the task list names this server in its records' references
    /// (`TaskRef::server`): `@NAME` for a server of a config file read
    /// from the usual files, the URL of an HTTP server, else the
    /// endpoint as JSON. [`Endpoint::from_id`] reads it back.
    pub fn id(&self) -> String {
        match self {
            Endpoint::Url(url) if url.contains("://") && !url.starts_with(['@', '{']) => {
                url.clone()
            }
            Endpoint::Configured { name, config: None } => format!("@{name}"),
            _ => serde_json::to_string(self).expect("an endpoint serializes"),
        }
    }

    /// The endpoint [`Endpoint::id`] named; `None` for any other server
    /// name (a record written before, whose reference names the server
    /// as the server names itself).
    pub fn from_id(id: &str) -> Option<Endpoint> {
        if id.starts_with('{') {
            serde_json::from_str(id).ok()
        } else if let Some(name) = id.strip_prefix('@') {
            Some(Endpoint::Configured {
                name: name.to_owned(),
                config: None,
            })
        } else if id.contains("://") {
            Some(Endpoint::Url(id.to_owned()))
        } else {
            None
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Url(url) => f.write_str(url),
            Endpoint::Command(words) => f.write_str(&words.join(" ")),
            Endpoint::Configured { name, .. } => write!(f, "@{name}"),
        }
    }
}

/// A short local name as typed: `12` or `#12`; `None` for anything else.
pub fn parse_name(text: &str) -> Option<RecordId> {
    let digits = text.trim();
    let digits = digits.strip_prefix('#').unwrap_or(digits);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(RecordId)
}

/// The data folder: `$MCP_TASKS_DATA_DIR`, else `$XDG_DATA_HOME/mcp-tasks`,
/// else `$HOME/.local/share/mcp-tasks`.
pub fn folder() -> anyhow::Result<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var(DATA_DIR_VAR) {
        return Ok(dir);
    }
    // The XDG rules ignore a relative path.
    if let Some(dir) = var("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
        return Ok(dir.join("mcp-tasks"));
    }
    if let Some(home) = var("HOME") {
        return Ok(home.join(".local").join("share").join("mcp-tasks"));
    }
    bail!("there is no folder for the task list: set {DATA_DIR_VAR} or HOME")
}

/// Creates `dir` and its parents, the last one private to its owner.
fn create_folder(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// What a command saw of a task, to write back to its record.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The last status the server stated, with its message.
    pub status: Option<(TaskStatus, Option<String>)>,
    /// How the task ended, when it did.
    pub ending: Option<Ending>,
    /// The questions the task asked when last read, when it asked any:
    /// kept in the record, so that `questions` lists them and `answer`
    /// answers them from any shell.
    pub asked: Option<InputRequests>,
    /// The keys of stored answers the server took (`tasks/update` went
    /// through): never sent again.
    pub taken: Vec<String>,
}

/// A task as `list` shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The record.
    pub record: TaskRecord,
    /// How to reach its server, when the record says.
    pub endpoint: Option<Endpoint>,
    /// The task's reference as its server knows it, to follow it with.
    pub task: TaskRef,
}

impl Listed {
    /// Reads `record`: its server from its reference, or, for a record
    /// written before, from its key.
    fn of(record: TaskRecord) -> Listed {
        let before = record
            .key
            .as_deref()
            .and_then(|k| serde_json::from_str::<Endpoint>(k).ok());
        if let Some(endpoint) = before {
            return Listed {
                task: record.reference.clone(),
                endpoint: Some(endpoint),
                record,
            };
        }
        let endpoint = record.reference.server().and_then(Endpoint::from_id);
        // The server's own name is not kept: the recorded endpoint is
        // what reaches it.
        let task = match endpoint {
            Some(_) => with_server(&record.reference, None),
            None => record.reference.clone(),
        };
        Listed {
            record,
            endpoint,
            task,
        }
    }

    /// The last known status: how the task ended, or the last status seen.
    pub fn status(&self) -> &'static str {
        match &self.record.ending {
            Some(Ending::Completed { result }) if result.is_error => "tool_error",
            Some(ending) => ending.name(),
            None => self.record.status.as_str(),
        }
    }
}

/// The CLI's records of detached tasks.
#[derive(Debug, Clone)]
pub struct Records {
    store: SqliteStore,
}

impl Records {
    /// Opens the file in the data folder, creating both when needed.
    pub async fn open() -> anyhow::Result<Records> {
        let dir = folder()?;
        create_folder(&dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
        let store = SqliteStore::open(dir.join(FILE))
            .await
            .map_err(|e| anyhow::anyhow!(crate::one_line(&e)))
            .context("cannot open the task list")?;
        Ok(Records { store })
    }

    /// The store itself (`mcp-tasks serve` serves it).
    pub fn store(&self) -> SqliteStore {
        self.store.clone()
    }

    /// Opens the file in the data folder when there is one: a command
    /// that only looks a task up creates nothing.
    pub async fn open_existing() -> anyhow::Result<Option<Records>> {
        if !folder()?.join(FILE).exists() {
            return Ok(None);
        }
        Records::open().await.map(Some)
    }

    /// Records a detached task and gives its short local name.
    pub async fn record(
        &self,
        reference: &TaskRef,
        tool: &str,
        endpoint: &Endpoint,
        status: TaskStatus,
        status_message: Option<String>,
    ) -> anyhow::Result<RecordId> {
        self.store
            .insert(NewTask {
                unique_key: false,
                reference: with_server(reference, Some(endpoint.id())),
                tool: tool.to_owned(),
                key: Some(key_of(reference)),
                scope: SCOPE.to_owned(),
                status,
                status_message,
                poll_interval_ms: None,
                due: SystemTime::now(),
                ending: None,
                schedule: Default::default(),
            })
            .await
            .map_err(|e| anyhow::anyhow!("cannot record the task: {}", crate::one_line(&e)))
    }

    /// The task named `id`, with its server; an unknown name is a usage error.
    pub async fn find(&self, id: RecordId) -> anyhow::Result<Listed> {
        let record =
            self.store.get(id).await.map_err(|e| {
                anyhow::anyhow!("cannot read the task list: {}", crate::one_line(&e))
            })?;
        match record {
            Some(record) if record.scope == SCOPE => Ok(Listed::of(record)),
            _ => bail!(Failure::usage(format!(
                "there is no task {id} in the task list (`mcp-tasks list` shows them)"
            ))),
        }
    }

    /// The short name of the task `reference` names, if it was recorded:
    /// found by its key; a record written before, by the endpoint of
    /// `server` (the server the command line names) it kept as its key.
    pub async fn name_of(
        &self,
        reference: &TaskRef,
        server: Option<&Endpoint>,
    ) -> Option<RecordId> {
        let before = server.and_then(|s| serde_json::to_string(s).ok());
        for key in std::iter::once(key_of(reference)).chain(before) {
            let found = self
                .store
                .list(&Filter::all().scope(SCOPE).key(key))
                .await
                .ok()?;
            let named = found
                .into_iter()
                .flatten()
                .find(|r| r.reference.task_id() == reference.task_id());
            if let Some(record) = named {
                return Some(record.id);
            }
        }
        None
    }

    /// Every recorded task, newest first. A record that cannot be read is
    /// left out with a note on stderr.
    pub async fn list(&self) -> anyhow::Result<Vec<Listed>> {
        let records = self.read(&Filter::all().scope(SCOPE)).await?;
        Ok(records.into_iter().rev().map(Listed::of).collect())
    }

    /// Every open question of the task list, oldest first: the task and
    /// the question's key.
    pub async fn asking(&self) -> anyhow::Result<Vec<TaskRecord>> {
        self.read(&Filter::all().scope(SCOPE).asking()).await
    }

    /// The records `filter` selects, oldest first. A record that cannot
    /// be read is left out with a note on stderr.
    async fn read(&self, filter: &Filter) -> anyhow::Result<Vec<TaskRecord>> {
        let records =
            self.store.list(filter).await.map_err(|e| {
                anyhow::anyhow!("cannot read the task list: {}", crate::one_line(&e))
            })?;
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            match record {
                Ok(record) => out.push(record),
                Err(e) => eprintln!("mcp-tasks: {}", crate::one_line(&e)),
            }
        }
        Ok(out)
    }

    /// Stores `response` as the answer to question `key` of task `id`,
    /// checked against the question first (the store's rules: the first
    /// answer wins, a closed question takes none).
    pub async fn answer(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
    ) -> Result<(), StoreError> {
        self.store
            .answer_by(id, key, response, Answerer::CommandLine, SystemTime::now())
            .await
    }

    /// Writes what a command saw of task `id` back to its record: its last
    /// status and questions, the answers the server took, or how it ended.
    /// A record another command holds right now, or one that already
    /// ended, is left as it is.
    pub async fn write_back(&self, id: RecordId, seen: &Seen) -> anyhow::Result<()> {
        if seen.status.is_none() && seen.ending.is_none() && seen.taken.is_empty() {
            return Ok(());
        }
        let now = SystemTime::now();
        let claimed = self
            .store
            .claim(Claim {
                worker: WORKER,
                limit: 1,
                now,
                lease: LEASE,
                record: Some(id),
            })
            .await?;
        let Some(record) = claimed.into_iter().next() else {
            return Ok(());
        };
        let record = record?;
        let Some(fence) = record.fence() else {
            return Ok(());
        };
        let (status, status_message) = seen.status.clone().unwrap_or((record.status, None));
        // Questions are written before anything else; a task that moved
        // on, ended or was cancelled closes the ones it asked.
        let asking = seen.ending.is_none() && status == TaskStatus::InputRequired;
        match &seen.asked {
            Some(asked) if asking => {
                self.store.ask(id, fence, asked, now).await?;
            }
            _ if !asking && record.open_questions().next().is_some() => {
                self.store
                    .ask(id, fence, &InputRequests::new(), now)
                    .await?;
            }
            _ => {}
        }
        if let Some(ending) = &seen.ending {
            self.store.finish(id, fence, ending).await?;
            self.store.acknowledge(id, fence).await?;
            return Ok(());
        }
        self.store
            .save(
                id,
                fence,
                StepReport {
                    status,
                    status_message,
                    poll_interval_ms: record.poll_interval_ms,
                    failed_reads: 0,
                    due: now,
                    taken: seen.taken.clone(),
                    offered: Vec::new(),
                },
            )
            .await?;
        Ok(())
    }
}

/// How many ended tasks one write of `prune` removes at most: another
/// command waits for one batch at most.
const PRUNE_BATCH: usize = 1_000;

impl Records {
    /// Removes task `id` from the list, unless another command is writing
    /// it back right now. A task that has not ended is not cancelled.
    pub async fn forget(&self, id: RecordId) -> anyhow::Result<Forgotten> {
        self.store
            .forget(id, SystemTime::now())
            .await
            .map_err(|e| anyhow::anyhow!("cannot forget task {id}: {}", crate::one_line(&e)))
    }

    /// Removes the ended tasks last written before `older_than`, a batch
    /// at a time, and says how many. Tasks that have not ended stay.
    pub async fn prune(&self, older_than: SystemTime) -> anyhow::Result<usize> {
        let mut removed = 0;
        loop {
            let batch = self
                .store
                .prune(older_than, PRUNE_BATCH)
                .await
                .map_err(|e| {
                    anyhow::anyhow!("cannot prune the task list: {}", crate::one_line(&e))
                })?;
            removed += batch;
            if batch < PRUNE_BATCH {
                return Ok(removed);
            }
        }
    }
}

/// The answers stored for `record`'s open questions and not taken by the
/// server yet: what a command sends before it asks anything itself.
pub fn stored_answers(record: &TaskRecord) -> InputResponses {
    record
        .answers
        .iter()
        .filter(|(key, answer)| {
            !answer.taken
                && record
                    .questions
                    .get(key.as_str())
                    .is_some_and(|q| !q.is_closed())
        })
        .map(|(key, answer)| (key.clone(), answer.response.clone()))
        .collect()
}

/// The key of a task's record: the digest of its id that `list` shows,
/// never the id.
fn key_of(reference: &TaskRef) -> String {
    reference.task_id().redacted()
}

/// `reference` with `server` as the name of its server (`None`: unnamed).
pub fn with_server(reference: &TaskRef, server: Option<String>) -> TaskRef {
    let task = TaskRef::new(reference.task_id().clone(), server);
    match reference.protocol_version() {
        Some(version) => task.with_protocol_version(version),
        None => task,
    }
}

/// `SystemTime` as RFC 3339 in UTC, to the second (`2026-07-28T09:30:00Z`).
pub fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// How long ago `t` was, in one unit: `12s`, `5m`, `3h`, `2d`.
pub fn age(t: SystemTime, now: SystemTime) -> String {
    let secs = now.duration_since(t).map_or(0, |d| d.as_secs());
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_numbers_with_or_without_a_hash() {
        assert_eq!(parse_name("12"), Some(RecordId(12)));
        assert_eq!(parse_name("#3"), Some(RecordId(3)));
        assert_eq!(parse_name("mtr_abc"), None);
        assert_eq!(parse_name("#"), None);
        assert_eq!(parse_name("-1"), None);
        assert_eq!(parse_name("99999999999999999999999"), None);
    }

    #[test]
    fn a_url_is_recorded_without_its_password() {
        assert_eq!(
            Endpoint::url("https://me:secret@mcp.example.com/mcp?x=a@b"),
            Endpoint::Url("https://mcp.example.com/mcp?x=a@b".into())
        );
        assert_eq!(
            Endpoint::url("http://127.0.0.1:8080/mcp"),
            Endpoint::Url("http://127.0.0.1:8080/mcp".into())
        );
        let json = serde_json::to_string(&Endpoint::Command(vec!["demo".into(), "-v".into()]));
        assert_eq!(json.unwrap(), r#"{"command":["demo","-v"]}"#);
    }

    #[test]
    fn a_server_is_named_by_an_id_that_reads_back() {
        let configured = |config: Option<&str>| Endpoint::Configured {
            name: "github".into(),
            config: config.map(Into::into),
        };
        let url = Endpoint::url("https://mcp.example.com/mcp");
        assert_eq!(url.id(), "https://mcp.example.com/mcp");
        assert_eq!(configured(None).id(), "@github");
        for endpoint in [
            url,
            Endpoint::Url("localhost:8080".into()),
            Endpoint::Url("@x://y".into()),
            Endpoint::Command(vec!["mcp-tasks-demo".into(), "--flag x".into()]),
            configured(None),
            configured(Some("/etc/mcp.json")),
        ] {
            assert_eq!(Endpoint::from_id(&endpoint.id()), Some(endpoint));
        }
        // A server's own name, as records written before hold it.
        assert_eq!(Endpoint::from_id("mcp-tasks-demo"), None);
    }

    #[test]
    fn times_are_dates_in_utc() {
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(rfc3339(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(at(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(at(1_785_231_000)), "2026-07-28T09:30:00Z");
        assert_eq!(age(at(0), at(59)), "59s");
        assert_eq!(age(at(0), at(7_200)), "2h");
        assert_eq!(age(at(10), at(0)), "0s");
    }
}
