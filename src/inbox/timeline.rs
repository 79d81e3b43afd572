//! A task's history as a timeline on its page.

use std::fmt::Write;
use std::time::SystemTime;

use super::html::{esc, when};
use crate::store::{Answerer, Event, History, MAX_HISTORY};

/// Writes `history` as a timeline, oldest first, each entry with its
/// moment; server text escaped like everything else on the page.
pub(super) fn timeline(body: &mut String, history: &History, now: SystemTime) {
    body.push_str("<h2>History</h2>");
    if history.is_cut() {
        let _ = write!(
            body,
            "<p class=\"hint\" id=\"history-cut\">{} older entries are not kept: a record keeps \
             its newest {MAX_HISTORY}.</p>",
            history.dropped
        );
    }
    if history.entries.is_empty() {
        body.push_str("<p class=\"hint\">Nothing recorded.</p>");
        return;
    }
    body.push_str("<ol class=\"history\" id=\"history\">");
    for e in &history.entries {
        let _ = write!(
            body,
            "<li class=\"{}\"><span class=\"at\">{}</span> {}</li>",
            e.event.name(),
            when(e.at, now),
            words(&e.event)
        );
    }
    body.push_str("</ol>");
}

/// What happened, in words, as HTML.
fn words(event: &Event) -> String {
    let status = |status: &crate::protocol::TaskStatus, message: &Option<String>| match message {
        Some(m) => format!(
            "<b>{}</b>: <span class=\"message\">{}</span>",
            status.as_str(),
            esc(m)
        ),
        None => format!("<b>{}</b>", status.as_str()),
    };
    match event {
        Event::Created { status: s, message } => format!("Recorded, {}", status(s, message)),
        Event::Status { status: s, message } => status(s, message),
        Event::Asked { key } => format!("Asked question <code>{}</code>", esc(key)),
        Event::Answered { key, by } => format!(
            "Question <code>{}</code> answered by {}",
            esc(key),
            answerer(*by)
        ),
        Event::Taken { key } => format!("The server took the answer to <code>{}</code>", esc(key)),
        Event::CancelRequested => "A cancel was asked for".into(),
        Event::Ended { ending } => format!("Ended: <b>{}</b>", esc(ending)),
        Event::Delivered => "The outcome was delivered to the application".into(),
        Event::TakenOver { from, to } => format!(
            "Worker <b>{}</b> took it over from <b>{}</b>, whose lease ran out",
            esc(to),
            esc(from)
        ),
        _ => "Something this version does not know".into(),
    }
}

fn answerer(by: Answerer) -> &'static str {
    match by {
        Answerer::Handler => "an input handler of the worker",
        Answerer::Page => "a person, on this page",
        Answerer::CommandLine => "a person, on the command line",
        Answerer::Application => "the application",
        _ => "someone",
    }
}
