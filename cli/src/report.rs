//! What the person (or the program reading `--json`) sees while a call
//! runs: a live status line on a terminal, one line per change when piped,
//! JSON lines with `--json`. Results go to stdout; everything else to
//! stderr, so that `mcp-tasks call … | jq` gets the result alone.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_tasks::TaskRef;
use mcp_tasks::protocol::Progress;
use serde_json::{Value, json};

/// How status is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A spinner (and a bar once the server sends totals) on a terminal.
    Live,
    /// One plain line per change on stderr: no spinner, no colours.
    Lines,
    /// One JSON object per line on stdout.
    Json,
}

/// How status is shown for a command given `--json` or not, and whether
/// questions can be asked at the prompt.
pub fn style(json: bool) -> (Style, bool) {
    if json {
        return (Style::Json, false);
    }
    let terminal = std::io::stderr().is_terminal();
    let interactive = terminal && std::io::stdin().is_terminal();
    (
        if terminal { Style::Live } else { Style::Lines },
        interactive,
    )
}

/// The display of one command. Clones share it.
#[derive(Clone)]
pub struct Report {
    style: Style,
    bar: Option<ProgressBar>,
    state: Arc<Mutex<Seen>>,
}

#[derive(Default)]
struct Seen {
    /// The last status line shown, so that only changes are shown.
    status: Option<String>,
    /// The last progress line shown (plain lines and JSON).
    progress: Option<String>,
    /// Whether the bar shows a fraction.
    bar_mode: bool,
}

/// The reference (`mtr_…`) of the task the command concerns, once it is
/// known: every `--json` line carries it, errors included.
static TASK: Mutex<Option<String>> = Mutex::new(None);

/// Notes the task the command concerns, for the `--json` lines that
/// follow.
pub fn task_is(task: &TaskRef) {
    let word = crate::reference::encode(task);
    *TASK.lock().unwrap_or_else(|e| e.into_inner()) = Some(word);
}

/// The reference of the task the command concerns, once known.
pub fn task_reference() -> Option<String> {
    TASK.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

const SPINNER: &str = "{spinner} {msg}  [{elapsed}]";
const BAR: &str = "{spinner} [{bar:24}] {percent:>3}% {msg}  [{elapsed}]";

impl Report {
    /// A display in `style`.
    pub fn new(style: Style) -> Report {
        let bar = (style == Style::Live).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(ProgressStyle::with_template(SPINNER).expect("a valid template"));
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        Report {
            style,
            bar,
            state: Arc::new(Mutex::new(Seen::default())),
        }
    }

    /// How status is shown.
    pub fn style(&self) -> Style {
        self.style
    }

    /// What is happening before there is a status to show.
    pub fn activity(&self, text: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(text.to_owned());
        }
    }

    /// A task's status and message; shown when they changed.
    pub fn status(&self, status: &str, message: Option<&str>) {
        let line = match message {
            Some(m) if !m.is_empty() => format!("{status}: {m}"),
            _ => status.to_owned(),
        };
        {
            let mut seen = self.state.lock().unwrap();
            if seen.status.as_deref() == Some(line.as_str()) {
                return;
            }
            seen.status = Some(line.clone());
        }
        match self.style {
            Style::Live => self.activity(&line),
            Style::Lines => eprintln!("{line}"),
            Style::Json => self.json(json!({
                "type": "status", "status": status, "message": message,
            })),
        }
    }

    /// A progress report of the call.
    pub fn progress(&self, p: &Progress) {
        let mut seen = self.state.lock().unwrap();
        match self.style {
            Style::Live => {
                let Some(bar) = &self.bar else { return };
                match p.fraction() {
                    Some(f) => {
                        if !seen.bar_mode {
                            seen.bar_mode = true;
                            bar.set_style(
                                ProgressStyle::with_template(BAR).expect("a valid template"),
                            );
                            bar.set_length(1000);
                        }
                        bar.set_position((f * 1000.0).round() as u64);
                    }
                    None if seen.bar_mode => {
                        seen.bar_mode = false;
                        bar.set_style(
                            ProgressStyle::with_template(SPINNER).expect("a valid template"),
                        );
                    }
                    None => {}
                }
                if let Some(m) = p.message.as_deref().filter(|m| !m.is_empty()) {
                    bar.set_message(m.to_owned());
                }
            }
            Style::Lines => {
                let line = match p.fraction() {
                    Some(f) => format!(
                        "progress {:.0}%{}",
                        f * 100.0,
                        p.message
                            .as_deref()
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default()
                    ),
                    None => format!("progress {p}"),
                };
                if seen.progress.as_deref() != Some(line.as_str()) {
                    eprintln!("{line}");
                    seen.progress = Some(line);
                }
            }
            Style::Json => {
                drop(seen);
                self.json(json!({
                    "type": "progress", "progress": p.progress, "total": p.total, "message": p.message,
                }));
            }
        }
    }

    /// A line for the person, on stderr (above the status line, which
    /// stays).
    pub fn note(&self, text: &str) {
        match &self.bar {
            Some(bar) if !bar.is_hidden() => bar.suspend(|| eprintln!("{text}")),
            _ => eprintln!("{text}"),
        }
    }

    /// One JSON line on stdout (`--json`), with the task's `reference`
    /// (`null` while there is no task) unless `value` gives its own.
    pub fn json(&self, mut value: Value) {
        if let Value::Object(fields) = &mut value
            && !fields.contains_key("reference")
        {
            fields.insert("reference".into(), task_reference().into());
        }
        crate::stdout::line(value);
    }

    /// Runs `f` (a prompt) with the status line out of the way.
    pub fn paused<T>(&self, f: impl FnOnce() -> T) -> T {
        let Some(bar) = &self.bar else { return f() };
        // Hidden, not suspended: progress that arrives meanwhile updates a
        // hidden bar instead of waiting for the prompt.
        bar.set_draw_target(ProgressDrawTarget::hidden());
        // The hidden target does not wipe the line the bar was on.
        eprint!("\r\x1b[2K");
        let out = f();
        bar.set_draw_target(ProgressDrawTarget::stderr());
        out
    }

    /// Takes the status line off the screen for good.
    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Prints each line of a child server's stderr above the status line:
/// the library logs them at target `mcp_tasks::stderr`
/// ([`Stderr::Log`](mcp_tasks::transport::Stderr::Log)). Nothing else the
/// library logs is shown.
pub fn show_server_stderr(report: &Report) {
    use tracing_subscriber::layer::SubscriberExt;
    let subscriber = tracing_subscriber::registry().with(ServerStderr(report.clone()));
    // Only the first report of a process gets them (there is one).
    let _ = tracing::subscriber::set_global_default(subscriber);
}

const STDERR_TARGET: &str = "mcp_tasks::stderr";

struct ServerStderr(Report);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ServerStderr {
    fn enabled(
        &self,
        metadata: &tracing::Metadata<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        metadata.target() == STDERR_TARGET
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() != STDERR_TARGET {
            return;
        }
        let mut line = Message(String::new());
        event.record(&mut line);
        self.0.note(&line.0);
    }
}

/// The `message` field of an event.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            use std::fmt::Write;
            let _ = write!(self.0, "{value:?}");
        }
    }
}
