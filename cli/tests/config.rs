//! Servers named in config files and signing in to them: `mcp-tasks` run
//! in a folder of its own (its own HOME and XDG_CONFIG_HOME), against the
//! bundled demo server (run as a command, or over loopback HTTP) and the
//! library's loopback OAuth server, `login` in a real pseudo-terminal
//! whose printed URL the test follows as a browser would.
//!
//! Every expectation is bounded (the pty session's timeout, socket
//! timeouts, the demo's scripts); nothing asserts how long anything took.

#[path = "../../tests/oauth/server.rs"]
#[allow(
    dead_code,
    reason = "the OAuth tests turn knobs these tests leave alone"
)]
mod oauth_server;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use oauth_server::{AuthServer, Knobs};
use rexpect::process::WaitStatus;
use rexpect::session::spawn_command;
use serde_json::{Value, json};

#[path = "support/http_demo.rs"]
mod http_demo;
use http_demo::HttpDemo;

const CLI: &str = env!("CARGO_BIN_EXE_mcp-tasks");
const DEMO: &str = env!("CARGO_BIN_EXE_mcp-tasks-demo");

/// The bound on each expectation of a terminal session.
const TIMEOUT_MS: u64 = 30_000;

/// A folder standing for a person's project and home: `mcp-tasks` runs in
/// it and keeps its files under it, never in the real home.
struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Sandbox {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-tasks-config-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home/.config")).unwrap();
        Sandbox { dir }
    }

    /// Writes `text` to `path` (relative to the sandbox), folders included.
    fn write(&self, path: &str, text: &str) -> PathBuf {
        let path = self.dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Writes a config file at `path` (relative to the sandbox) that
    /// defines one server, `name`, as `entry`, in the `mcpServers` form.
    fn write_server(&self, path: &str, name: &str, entry: Value) -> PathBuf {
        self.write(path, &json!({ "mcpServers": { name: entry } }).to_string())
    }

    fn config_home(&self) -> PathBuf {
        self.dir.join("home/.config")
    }

    /// `mcp-tasks ARGS`, run in the sandbox.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(CLI);
        self.prepare(&mut cmd);
        cmd.args(args);
        cmd
    }

    fn prepare(&self, cmd: &mut Command) {
        cmd.current_dir(&self.dir)
            .env("HOME", self.dir.join("home"))
            .env("XDG_CONFIG_HOME", self.config_home())
            .env("MCP_TASKS_DATA_DIR", self.dir.join("data"))
            .env("NO_COLOR", "1")
            .env_remove("MCP_BEARER_TOKEN")
            .env_remove("MCP_TASKS_CONFIG")
            .env_remove("MCP_TASKS_NO_LOGIN");
    }

    /// `mcp-tasks ARGS` with pipes, to its end.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = self.command(args);
        cmd.envs(env.iter().copied()).stdin(Stdio::null());
        cmd.output().expect("run mcp-tasks")
    }

    /// The token files kept.
    fn token_files(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.config_home().join("mcp-tasks/tokens")) {
            Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A JSON string, for writing config files.
fn quoted(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

#[test]
fn a_command_server_of_the_mcp_servers_form_answers_with_its_variables_expanded() {
    let sandbox = Sandbox::new("stdio");
    let file = sandbox.write(
        "claude_desktop_config.json",
        r#"{"mcpServers": {"demo": {"command": "${DEMO_BIN}", "args": [], "env": {"DEMO_NOTE": "${env:DEMO_NOTE}"}}}}"#,
    );
    let file = file.to_str().unwrap();
    let env = [("DEMO_BIN", DEMO), ("DEMO_NOTE", "set")];
    let out = sandbox.run(&["call", "@demo", "hello", "--config", file], &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("hello from the demo server"),
        "{}",
        text(&out.stdout)
    );
    // The long form says the same.
    let out = sandbox.run(&["tools", "--server", "demo", "--config", file], &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("hello"), "{}", text(&out.stdout));
    // So does every command that names a server, the catalog's too.
    let out = sandbox.run(
        &[
            "read",
            "demo://readme",
            "--server",
            "demo",
            "--config",
            file,
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).is_empty());

    // A variable that is not set: a usage error naming it and the server.
    let out = sandbox.run(
        &["call", "@demo", "hello", "--config", file],
        &[("DEMO_BIN", DEMO)],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("DEMO_NOTE is not set") && err.contains("demo"),
        "{err}"
    );
}

#[test]
fn an_unknown_name_says_which_files_were_read_and_what_they_define() {
    let sandbox = Sandbox::new("unknown");
    sandbox.write_server(".mcp.json", "demo", json!({ "command": DEMO }));
    let out = sandbox.run(&["tools", "@nope"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("no server named \"nope\"")
            && err.contains(".vscode/mcp.json")
            && err.contains("demo (")
            && err.contains(".mcp.json"),
        "{err}"
    );
}

#[test]
fn an_http_server_of_the_vscode_form_is_found_in_the_project() {
    let demo = HttpDemo::start();
    let sandbox = Sandbox::new("http");
    sandbox.write(
        ".vscode/mcp.json",
        &format!(
            r#"{{
              // VS Code's form, comments and all
              "inputs": [],
              "servers": {{
                "web": {{"type": "http", "url": {}, "headers": {{"X-Team": "${{TEAM}}"}}, "timeout": "30s"}},
              }}
            }}"#,
            quoted(&demo.url())
        ),
    );
    let env = [("TEAM", "blue")];
    let out = sandbox.run(&["tools", "@web"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    assert!(
        listing.contains("protocol  2026-07-28") && listing.contains("export"),
        "{listing}"
    );
    let out = sandbox.run(&["call", "@web", "hello", "--json"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("hello from the demo server"),
        "{}",
        text(&out.stdout)
    );
    // `-e` is for a child's environment: refused for a URL.
    let out = sandbox.run(&["tools", "@web", "-e", "A=1"], &env);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("-e is for a server run as a command"));
}

#[test]
fn a_detached_task_of_a_configured_server_keeps_its_name_not_its_expanded_secrets() {
    let demo = HttpDemo::start();
    let sandbox = Sandbox::new("detach");
    let url = format!("{}?key=${{KEY}}", demo.url());
    sandbox.write_server(".mcp.json", "web", json!({ "url": url }));
    let secret = "k-5ecret-in-the-url";
    let out = sandbox.run(
        &["call", "@web", "job", "n=1", "ms=300", "--detach"],
        &[("KEY", secret)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = sandbox.run(&["list"], &[]);
    let listing = text(&out.stdout);
    assert!(listing.contains("@web"), "{listing}");
    assert!(!listing.contains(secret), "{listing}");
    for entry in std::fs::read_dir(sandbox.dir.join("data")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "the task list holds the expanded URL"
        );
    }
    // A later command reads the entry again, variables and all.
    let out = sandbox.run(&["wait", "1"], &[("KEY", secret)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("done"), "{}", text(&out.stdout));
    // Without the variable, the entry cannot be read: said, not guessed.
    let out = sandbox.run(&["status", "1"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("KEY"), "{}", text(&out.stderr));
}

#[test]
fn servers_lists_every_file_first_found_winning_with_secrets_redacted() {
    let sandbox = Sandbox::new("servers");
    sandbox.write(
        ".cursor/mcp.json",
        r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-files", "--api-key", "key-secret-1"],
                      "env": {"GITHUB_TOKEN": "env-secret-2"}},
            "remote": {"url": "https://user:pw-secret-3@mcp.example.com/mcp?token=url-secret-4",
                       "headers": {"Authorization": "Bearer header-secret-5"}, "timeoutMs": 120000}
        }}"#,
    );
    let user = sandbox.write(
        "home/.config/mcp-tasks/servers.json",
        r#"{"mcpServers": {"files": {"command": "shadowed"}, "mine": {"url": "http://127.0.0.1:9/mcp"},
            "off": {"command": "never-run", "disabled": true}}}"#,
    );
    let out = sandbox.run(&["servers"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    for secret in ["secret-1", "secret-2", "secret-3", "secret-4", "secret-5"] {
        assert!(!listing.contains(secret), "{secret} shown:\n{listing}");
    }
    assert!(
        listing.contains("npx -y server-files --api-key ***"),
        "{listing}"
    );
    assert!(listing.contains("GITHUB_TOKEN=***"), "{listing}");
    assert!(
        listing.contains("https://***@mcp.example.com/mcp?token=***  Authorization: ***"),
        "{listing}"
    );
    assert!(!listing.contains("shadowed"), "{listing}");
    assert!(listing.contains(&user.display().to_string()), "{listing}");

    let out = sandbox.run(&["servers", "--json"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    let off = lines.iter().find(|l| l["name"] == "off").unwrap();
    assert_eq!(off["disabled"], true);
    let remote = lines.iter().find(|l| l["name"] == "remote").unwrap();
    assert_eq!(remote["kind"], "http");
    assert_eq!(remote["timeoutMs"], 120_000);
    assert_eq!(remote["headers"], serde_json::json!(["Authorization"]));
    assert!(
        remote["file"]
            .as_str()
            .unwrap()
            .ends_with(".cursor/mcp.json")
    );
    let raw = text(&out.stdout);
    assert!(!raw.contains("secret-"), "{raw}");

    // A disabled entry is listed as such, and never run.
    assert!(listing.contains("(disabled)"), "{listing}");
    let out = sandbox.run(&["tools", "@off"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("\"off\" is disabled in"),
        "{}",
        text(&out.stderr)
    );
}

/// A GET on loopback without following redirects: the status and the
/// `Location` header. Bounded by socket timeouts.
fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").expect("a loopback http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let location = reply.lines().take_while(|l| !l.is_empty()).find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    });
    (status, location)
}

/// The loopback OAuth server, on threads of its own while the test drives
/// the binary.
fn auth_server() -> (tokio::runtime::Runtime, AuthServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(AuthServer::start(Knobs::default()));
    (runtime, server)
}

#[test]
fn login_in_a_terminal_then_later_commands_reuse_the_token_until_logout() {
    let (_runtime, server) = auth_server();
    let sandbox = Sandbox::new("login");
    let file = sandbox.write_server(
        "servers.json",
        "secure",
        json!({ "url": server.endpoint() }),
    );
    let file = file.to_str().unwrap();

    // Before any login, --no-login fails with the auth status.
    let out = sandbox.run(
        &["call", "@secure", "export", "--no-login", "--config", file],
        &[],
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("mcp-tasks login secure"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.seen(|s| s.authorizations), 0);

    // `login` in a terminal prints the URL; the test visits it as a
    // browser would and is sent back to the CLI's loopback port.
    let mut cmd = Command::new("sh");
    sandbox.prepare(&mut cmd);
    cmd.arg("-c")
        .arg("stty cols 100 rows 40 && exec \"$@\"")
        .arg("sh")
        .arg(CLI)
        .args(["login", "secure", "--config", file]);
    let mut p = spawn_command(cmd, Some(TIMEOUT_MS)).expect("start mcp-tasks login");
    // What the person sees, shown by `--nocapture`.
    let mut screen = p
        .exp_string("secure asks you to sign in")
        .expect("the invitation");
    screen.push_str("secure asks you to sign in");
    let (before, url) = p
        .exp_regex(r"http://127\.0\.0\.1:\d+/authorize\?\S+")
        .expect("the authorization URL");
    screen.push_str(&before);
    screen.push_str(&url);
    let (status, back) = get(&url);
    assert_eq!(status, 302);
    let back = back.expect("a redirect");
    assert!(back.starts_with("http://127.0.0.1:"), "{back}");
    let (status, _) = get(&back);
    assert_eq!(status, 200, "the CLI took the redirect");
    screen.push_str(&p.exp_string("Signed in to secure").expect("signed in"));
    screen.push_str("Signed in to secure");
    screen.push_str(&p.exp_eof().expect("login ends"));
    eprintln!("{}", screen.replace('\r', ""));
    match p.process().wait().expect("its status") {
        WaitStatus::Exited(_, code) => assert_eq!(code, 0),
        other => panic!("login did not exit normally: {other:?}"),
    }
    let tokens = sandbox.token_files();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&tokens[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A later command uses the stored token: no second sign-in, even
    // with sign-ins forbidden.
    let out = sandbox.run(
        &["call", "@secure", "export", "--config", file],
        &[("MCP_TASKS_NO_LOGIN", "1")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("done"), "{}", text(&out.stdout));
    assert_eq!(server.seen(|s| (s.authorizations, s.code_grants)), (1, 1));

    // `logout` forgets it; then --no-login fails again, with status 5.
    let out = sandbox.run(&["logout", "secure", "--config", file], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Signed out of secure"));
    assert!(sandbox.token_files().is_empty());
    let out = sandbox.run(&["tools", "@secure", "--no-login", "--config", file], &[]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert_eq!(server.seen(|s| s.authorizations), 1);
}

#[test]
fn detach_from_a_configured_command_server_is_refused_in_its_own_words() {
    let sandbox = Sandbox::new("detach-stdio");
    sandbox.write_server(".mcp.json", "demo", json!({ "command": DEMO }));
    for args in [
        &["call", "@demo", "export", "--detach"][..],
        &["call", "export", "--server", "demo", "--detach"],
    ] {
        let out = sandbox.run(args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = text(&out.stderr);
        assert!(err.contains("--detach refused"), "{err}");
        // Named as the person named it: no `--` they never typed.
        assert!(err.contains("@demo"), "{err}");
        assert!(!err.contains("`--`") && !err.contains("after --"), "{err}");
        assert!(out.stdout.is_empty(), "no reference: {out:?}");
    }
}
