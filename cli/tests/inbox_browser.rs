//! The task inbox in a real browser: Debian's chromium, headless, driven
//! over WebDriver (chromedriver) as a person would use the pages, against
//! the inbox served on loopback over a SQLite store, with a tracker
//! working tasks on the library's scripted server.
//!
//! Without chromium and chromedriver the cases are skipped, unless
//! `MCP_TASKS_REQUIRE_BROWSER=1` (as CI sets it), which makes that a
//! failure. `MCP_TASKS_SCREENSHOTS=DIR` keeps a screenshot of each page
//! in DIR (the README's are made so, into `docs/`).

use std::future::Future;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client as Browser, ClientBuilder, Locator};
use mcp_tasks::Client;
use mcp_tasks::inbox::{Options, router};
use mcp_tasks::protocol::{InputRequest, InputRequests};
use mcp_tasks::store::{Ending, RecordId, SqliteStore, TaskStore, Tracker};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use serde_json::{Value, json};

#[path = "../../tests/support/time.rs"]
#[allow(dead_code, reason = "ms alone: the cases bound themselves")]
mod time;
use time::ms;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Everything but the form answered by a person: a status message that
/// tries to run script.
const HOSTILE: &str = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">";

fn ship_form() -> InputRequests {
    let form = InputRequest::form(
        "Ship the order to the customer?",
        json!({
            "type": "object",
            "properties": {
                "email": {"type": "string", "format": "email", "title": "Notify"},
                "boxes": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Boxes"},
                "speed": {"type": "string", "title": "Speed", "oneOf": [
                    {"const": "ground", "title": "Ground"},
                    {"const": "air", "title": "Air"}]},
                "fragile": {"type": "boolean", "title": "Fragile"},
                "when": {"type": "string", "format": "date-time", "title": "Ship at"},
            },
            "required": ["email", "speed"],
        }),
    );
    [("ship".to_owned(), form)].into()
}

fn server() -> TestServer {
    TestServer::new()
        .tool(ScriptedTool::task(
            "ship",
            TaskScript::new()
                .poll_interval(ms(50))
                .status_message("packing")
                .input(ms(10), ship_form())
                .complete_with_inputs(ms(10)),
        ))
        .tool(ScriptedTool::task(
            "long",
            TaskScript::new()
                .poll_interval(ms(50))
                .status_message(HOSTILE)
                .working(Duration::from_secs(3_600), "still going"),
        ))
}

/// The inbox, a tracker and its server, served on loopback.
struct Stage {
    store: SqliteStore,
    tracker: Tracker<SqliteStore, Client>,
    client: Client,
    server: TestServer,
    base: String,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Stage {
    async fn new(name: &str) -> Stage {
        let dir =
            std::env::temp_dir().join(format!("mcp-tasks-inbox-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = SqliteStore::open(dir.join("tasks.db")).await.unwrap();
        let server = server();
        let client = Client::connect(server.connect()).await.unwrap();
        let tracker = Tracker::builder(store.clone(), client.clone())
            .idle(ms(50))
            .min_poll_interval(ms(20))
            .build();
        let worker = tracker.clone();
        tokio::spawn(async move { worker.run(|_| async { true }).await });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let app = router(store.clone(), Options::new());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Stage {
            store,
            tracker,
            client,
            server,
            base: format!("http://{addr}"),
            _dir: TempDir(dir),
        }
    }

    /// Loads the inbox page at `path` in `b`.
    async fn open(&self, b: &Browser, path: &str) {
        b.goto(&format!("{}{path}", self.base)).await.unwrap();
    }

    async fn start(&self, tool: &str) -> RecordId {
        self.tracker
            .call_tool(self.client.task(), tool, json!({}))
            .await
            .unwrap()
            .record()
            .unwrap()
    }

    /// Waits (bounded) until record `id` asks a question.
    async fn until_asking(&self, id: RecordId) {
        for _ in 0..300 {
            let r = self.store.get(id).await.unwrap().unwrap();
            if r.open_questions().next().is_some() {
                return;
            }
            tokio::time::sleep(ms(20)).await;
        }
        panic!("record {id} never asked");
    }

    async fn ending(&self, id: RecordId) -> Option<Ending> {
        self.store.get(id).await.unwrap().unwrap().ending
    }
}

/// Waits (bounded, without reloading) until the text of `css` contains
/// `text`; the last text seen on failure.
async fn until_text(b: &Browser, css: &str, text: &str) {
    let mut last = String::new();
    for _ in 0..200 {
        if let Ok(e) = b.find(Locator::Css(css)).await
            && let Ok(t) = e.text().await
        {
            if t.contains(text) {
                return;
            }
            last = t;
        }
        tokio::time::sleep(ms(50)).await;
    }
    panic!("{css} never showed {text:?}; last: {last:?}");
}

/// Clicks the element `css` finds.
async fn click(b: &Browser, css: &str) {
    b.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// The text of the element `css` finds.
async fn text_of(b: &Browser, css: &str) -> String {
    b.find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Whether the page's `window.pwned` is still undefined (no hostile
/// script ran), as the page answers it.
async fn no_script_ran(b: &Browser) -> Value {
    b.execute("return window.pwned === undefined;", vec![])
        .await
        .unwrap()
}

/// The input of form field `name`.
async fn field(b: &Browser, name: &str) -> fantoccini::elements::Element {
    b.find(Locator::Css(&format!("[name=\"f:{name}\"]")))
        .await
        .unwrap_or_else(|e| panic!("no field {name}: {e}"))
}

async fn shot(b: &Browser, name: &str) {
    if let Some(dir) = std::env::var_os("MCP_TASKS_SCREENSHOTS") {
        let png = b.screenshot().await.unwrap();
        std::fs::write(Path::new(&dir).join(format!("inbox-{name}.png")), png).unwrap();
    }
}

/// A person answers a form on the task's page; the task completes on
/// the server and the page shows it without a reload.
async fn a_person_answers_and_the_page_follows(b: &Browser) {
    let stage = Stage::new("answer").await;
    let _other = stage.start("long").await;
    let id = stage.start("ship").await;
    stage.until_asking(id).await;
    stage.open(b, "/questions").await;
    until_text(b, "main", "Ship the order to the customer?").await;
    shot(b, "questions").await;
    stage.open(b, "/tasks").await;
    until_text(b, "main", "ship").await;
    shot(b, "tasks").await;
    stage.open(b, &format!("/tasks/{id}")).await;
    until_text(b, "#status", "input required").await;
    field(b, "email")
        .await
        .send_keys("ops@example.com")
        .await
        .unwrap();
    field(b, "boxes").await.send_keys("3").await.unwrap();
    field(b, "speed")
        .await
        .select_by_value("\"air\"")
        .await
        .unwrap();
    field(b, "fragile").await.click().await.unwrap();
    click(b, "button[value=accept]").await;
    // The answer is stored, a worker sends it, the task completes; the
    // page, loaded once after the post, shows each step by itself.
    until_text(b, "#status", "completed").await;
    until_text(b, "#outcome", "ops@example.com").await;
    // Its history, live too: who answered, and the end.
    until_text(b, "#history", "answered by a person, on this page").await;
    until_text(b, "#history", "Ended: completed").await;
    shot(b, "task").await;
    let Some(Ending::Completed { result }) = stage.ending(id).await else {
        panic!("not completed");
    };
    let sent = &result.structured_content.unwrap()["inputResponses"]["ship"];
    assert_eq!(
        sent,
        &json!({"action": "accept", "content":
            {"email": "ops@example.com", "boxes": 3, "speed": "air", "fragile": true}}),
        "the server got the answer as the person gave it"
    );
    let counts = stage.server.counters();
    let answers: u64 = counts
        .tasks
        .values()
        .filter_map(|t| t.answers.get("ship"))
        .sum();
    assert_eq!(answers, 1, "sent once");
}

/// An answer the store refuses shows its reason next to its field, and
/// nothing is stored.
async fn a_refused_answer_shows_why(b: &Browser) {
    let stage = Stage::new("refused").await;
    let id = stage.start("ship").await;
    stage.until_asking(id).await;
    stage.open(b, "/questions").await;
    field(b, "email")
        .await
        .send_keys("ops@example.com")
        .await
        .unwrap();
    field(b, "speed")
        .await
        .select_by_value("\"ground\"")
        .await
        .unwrap();
    field(b, "when").await.send_keys("tomorrow").await.unwrap();
    click(b, "button[value=accept]").await;
    until_text(b, ".field.refused .refusal", "is not a date-time").await;
    let label = text_of(b, ".field.refused label").await;
    assert!(label.contains("Ship at"), "next to its field: {label}");
    let kept = field(b, "when").await.prop("value").await.unwrap();
    assert_eq!(kept.as_deref(), Some("tomorrow"), "what was typed is kept");
    assert!(
        stage
            .store
            .get(id)
            .await
            .unwrap()
            .unwrap()
            .answers
            .is_empty()
    );
    // Answered elsewhere meanwhile: the first answer wins, and the page says so.
    field(b, "when").await.clear().await.unwrap();
    let decline = mcp_tasks::protocol::ElicitResult::decline();
    stage
        .store
        .answer(id, "ship", &decline.into(), std::time::SystemTime::now())
        .await
        .unwrap();
    click(b, "button[value=accept]").await;
    until_text(b, "main", "was already answered").await;
}

/// Cancel on the task's page cancels the task on the server; script in a
/// status message stays text and never runs.
async fn cancel_from_the_page_and_script_stays_text(b: &Browser) {
    let stage = Stage::new("cancel").await;
    let id = stage.start("long").await;
    stage.open(b, &format!("/tasks/{id}")).await;
    until_text(b, "#status", "working").await;
    let message = text_of(b, "#message").await;
    assert_eq!(message, HOSTILE, "shown as text");
    let ran: Value = no_script_ran(b).await;
    assert_eq!(ran, json!(true), "no script ran");
    click(b, "#cancel").await;
    until_text(b, "#status", "cancelled").await;
    assert_eq!(stage.ending(id).await, Some(Ending::Cancelled));
    let ran: Value = no_script_ran(b).await;
    assert_eq!(ran, json!(true), "no script ran after the page changed");
}

/// The page follows a change it did not make, without a reload: a cancel
/// asked from elsewhere, then the task's end.
async fn the_page_follows_by_itself(b: &Browser) {
    let stage = Stage::new("live").await;
    let id = stage.start("long").await;
    stage.open(b, &format!("/tasks/{id}")).await;
    until_text(b, "#status", "working").await;
    // A mark that a reload would wipe.
    b.execute("window.mark = 'kept'; return null;", vec![])
        .await
        .unwrap();
    assert!(
        stage
            .store
            .request_cancel(id, std::time::SystemTime::now())
            .await
            .unwrap()
    );
    until_text(b, "#status", "cancelled").await;
    let mark: Value = b.execute("return window.mark;", vec![]).await.unwrap();
    assert_eq!(mark, json!("kept"), "the page was not reloaded");
}

/// The list filters by state, as a person picks it.
async fn the_list_filters(b: &Browser) {
    let stage = Stage::new("filters").await;
    let long = stage.start("long").await;
    let ship = stage.start("ship").await;
    stage.until_asking(ship).await;
    stage.open(b, "/tasks").await;
    b.find(Locator::Css("select[name=state]"))
        .await
        .unwrap()
        .select_by_value("asking")
        .await
        .unwrap();
    click(b, "form.filters button").await;
    until_text(b, "table.tasks tbody", "ship").await;
    let rows = b
        .find_all(Locator::Css("table.tasks tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let text = rows[0].text().await.unwrap();
    assert!(text.starts_with(&ship.to_string()), "{text}");
    assert!(!text.contains(&format!("{long} long")));
    assert!(
        b.current_url()
            .await
            .unwrap()
            .as_str()
            .contains("state=asking")
    );
}

type Case = fn(&Browser) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;

fn main() {
    let required = std::env::var("MCP_TASKS_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
        if required {
            eprintln!("MCP_TASKS_REQUIRE_BROWSER=1 but {CHROMIUM} or {CHROMEDRIVER} is missing");
            std::process::exit(1);
        }
        eprintln!(
            "skipped: no {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)"
        );
        return;
    }
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let cases: [(&str, Case); 5] = [
        ("the_page_follows_by_itself", |b| {
            Box::pin(the_page_follows_by_itself(b))
        }),
        ("a_person_answers_and_the_page_follows", |b| {
            Box::pin(a_person_answers_and_the_page_follows(b))
        }),
        ("a_refused_answer_shows_why", |b| {
            Box::pin(a_refused_answer_shows_why(b))
        }),
        ("cancel_from_the_page_and_script_stays_text", |b| {
            Box::pin(cancel_from_the_page_and_script_stays_text(b))
        }),
        ("the_list_filters", |b| Box::pin(the_list_filters(b))),
    ];
    let driver = Driver::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut failed = 0;
    let mut ran = 0;
    for (name, case) in cases {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        ran += 1;
        let port = driver.port;
        let outcome = runtime.block_on(async move {
            let browser = driver_session(port).await;
            let outcome = tokio::time::timeout(
                Duration::from_secs(60),
                tokio::spawn(async move {
                    let b = browser;
                    case(&b).await;
                    b
                }),
            )
            .await;
            match outcome {
                Ok(Ok(b)) => {
                    let _ = b.close().await;
                    Ok(())
                }
                Ok(Err(panic)) => Err(format!("{panic}")),
                Err(_) => Err("timed out after 60 s".to_owned()),
            }
        });
        match outcome {
            Ok(()) => println!("test {name} ... ok"),
            Err(e) => {
                failed += 1;
                println!("test {name} ... FAILED: {e}");
            }
        }
    }
    drop(driver);
    println!("{} passed, {failed} failed", ran - failed);
    if failed > 0 {
        std::process::exit(1);
    }
}

/// chromedriver on a loopback port of the moment, stopped when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
        let port = StdListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Driver { child, port };
            }
            std::thread::sleep(ms(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("chromedriver never listened on {port}");
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A new headless browser, with a fresh profile, that reaches nothing
/// beyond loopback.
async fn driver_session(port: u16) -> Browser {
    let profile = std::env::temp_dir().join(format!(
        "mcp-tasks-chromium-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": CHROMIUM,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--window-size=1280,900",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a browser session")
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
