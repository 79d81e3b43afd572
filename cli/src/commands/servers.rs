//! `mcp-tasks servers`: the servers of the config files.

use serde_json::json;

use crate::config::{self, ConfiguredServers};
use crate::exit;

/// `mcp-tasks servers`.
pub fn run(file: Option<&std::path::Path>, json: bool) -> anyhow::Result<u8> {
    let configured = ConfiguredServers::load(file)?;
    for problem in &configured.problems {
        eprintln!("mcp-tasks: {problem}");
    }
    if json {
        for server in configured.servers.values() {
            let mut line = json!({
                "name": server.name,
                "kind": server.kind_name(),
                "file": server.source.display().to_string(),
                "timeoutMs": server.timeout.map(|t| t.as_millis() as u64),
                "disabled": server.disabled,
            });
            match &server.kind {
                config::Kind::Stdio { env, .. } => {
                    line["command"] = json!(server.redacted_command());
                    line["env"] = json!(env.iter().map(|(k, _)| k).collect::<Vec<_>>());
                }
                config::Kind::Http { url, headers, .. } => {
                    line["url"] = json!(config::redact_url(url));
                    line["headers"] = json!(headers.iter().map(|(k, _)| k).collect::<Vec<_>>());
                }
            }
            out!("{line}");
        }
        return Ok(exit::OK);
    }
    if configured.servers.is_empty() {
        let files: Vec<String> = configured
            .searched
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        eprintln!("no servers in {}", files.join(", "));
        return Ok(exit::OK);
    }
    let width = configured
        .servers
        .keys()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    out!("{:<width$}  {:<5}  SERVER", "NAME", "KIND");
    for server in configured.servers.values() {
        out!(
            "{:<width$}  {:<5}  {}",
            server.name,
            server.kind_name(),
            server.redacted()
        );
        let disabled = if server.disabled { " (disabled)" } else { "" };
        out!(
            "{:<width$}         from {}{disabled}",
            "",
            server.source.display()
        );
    }
    Ok(exit::OK)
}
