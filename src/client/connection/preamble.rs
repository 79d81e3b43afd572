//! What the server sent that the client could not read before its first
//! JSON-RPC message (a banner, a usage text: a wrong command), kept to
//! explain a handshake that fails.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// How many of the unreadable messages are quoted.
const KEPT: usize = 3;

/// The unreadable input that came before the first JSON-RPC message.
#[derive(Default)]
pub(crate) struct Preamble {
    /// Whether a JSON-RPC message has come: then nothing more is kept.
    heard: AtomicBool,
    /// How many came, and why the last [`KEPT`] were unreadable.
    skipped: Mutex<(usize, VecDeque<String>)>,
    /// Whether the reader stopped: nothing more will come.
    ended: AtomicBool,
    /// Wakes [`Preamble::ended`].
    ended_wake: Notify,
}

impl Preamble {
    /// A JSON-RPC message came.
    pub(super) fn heard(&self) {
        if !self.heard.load(Ordering::Relaxed) {
            self.heard.store(true, Ordering::Relaxed);
        }
    }

    /// Something unreadable came, for `why`.
    pub(super) fn skipped(&self, why: &str) {
        if self.heard.load(Ordering::Relaxed) {
            return;
        }
        let mut skipped = self.skipped.lock().unwrap();
        skipped.0 += 1;
        if skipped.1.len() == KEPT {
            skipped.1.pop_front();
        }
        skipped.1.push_back(why.to_owned());
    }

    /// The reader stopped (the server closed its output, or the read
    /// failed): nothing more will come.
    pub(super) fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.ended_wake.notify_waiters();
    }

    /// Resolves once the reader has stopped.
    pub(super) async fn ended(&self) {
        loop {
            let woken = self.ended_wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.ended.load(Ordering::Acquire) {
                return;
            }
            woken.await;
        }
    }

    /// What came, when nothing but unreadable input has: how much, and
    /// the last few.
    pub(super) fn unread(&self) -> Option<String> {
        if self.heard.load(Ordering::Relaxed) {
            return None;
        }
        let skipped = self.skipped.lock().unwrap();
        let (count, last) = &*skipped;
        if *count == 0 {
            return None;
        }
        let last: Vec<&str> = last.iter().map(String::as_str).collect();
        let shown = if *count > last.len() {
            format!("({count} in all, the last {}) ", last.len())
        } else {
            String::new()
        };
        Some(format!("{shown}{}", last.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_few_until_a_message_comes() {
        let p = Preamble::default();
        assert_eq!(p.unread(), None);
        for n in 1..=5 {
            p.skipped(&format!("line {n}"));
        }
        let text = p.unread().unwrap();
        assert_eq!(text, "(5 in all, the last 3) line 3; line 4; line 5");
        p.heard();
        p.skipped("later");
        assert_eq!(p.unread(), None);
    }
}
