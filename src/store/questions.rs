//! A tracked task's questions, kept in its record so that anyone who can
//! reach the store can see them and answer them, hours later.
//!
//! A task in `input_required` lists its open questions under keys the
//! server never reuses. The tracker writes each one into the record the
//! first time it sees it ([`TaskStore::ask`](super::TaskStore::ask)), and
//! closes the ones the server stops asking. Anyone may then answer one with
//! [`TaskStore::answer`](super::TaskStore::answer): the answer is checked
//! against the question, the first answer for a key wins, and the record
//! becomes due at once, so that a worker sends it with `tasks/update`.
//!
//! The rules live here, as plain functions over a record's two maps, so
//! that every store keeps them the same way.

use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Answer;
use super::history::{Answerer, Event, HistoryEntry, cut};
use crate::input::{InvalidAnswer, validate};
use crate::protocol::{ElicitRequest, InputRequest, InputRequests, InputResponse};

/// A record's questions, by the server's key.
pub type Questions = BTreeMap<String, Question>;

/// The answers given to a record's questions, by key.
pub type Answers = BTreeMap<String, Answer>;

/// The most questions a record keeps open at once. A server that asks
/// more has the rest (by key order) left out of the record: the tracker's
/// handlers may still answer them, nobody else can see them.
pub const MAX_OPEN_QUESTIONS: usize = 100;

/// The most questions a record keeps, open and closed: past it, the oldest
/// closed ones are forgotten.
pub const MAX_KEPT_QUESTIONS: usize = 500;

/// The largest question kept, as JSON: a bigger one (a 10 MB message) is
/// left out of the record, with a warning.
pub const MAX_QUESTION_BYTES: usize = 256 * 1024;

/// The largest answer taken, as JSON.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// One question a tracked task asked, as its record keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The request as the server sent it (form, URL, sampling, roots or any
    /// other request, kept whole).
    pub request: InputRequest,
    /// When a worker first saw it.
    #[serde(with = "millis")]
    pub first_seen: SystemTime,
    /// When it closed: the server stopped asking (it took an answer, or the
    /// task moved on, ended or was cancelled). A closed question takes no
    /// answer.
    #[serde(default, with = "millis_opt", skip_serializing_if = "Option::is_none")]
    pub closed: Option<SystemTime>,
    /// Whether the application was told of it and acknowledged
    /// ([`TrackerBuilder::on_question`](super::TrackerBuilder::on_question)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub offered: bool,
}

/// What a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuestionKind {
    /// A form elicitation: answer with content that fits its schema.
    Form,
    /// A URL elicitation: the person visits the URL, then accepts.
    Url,
    /// A sampling request: answer with a model's message.
    Sampling,
    /// A roots request: answer with the client's roots.
    Roots,
    /// A request this crate does not know, kept as JSON.
    Other,
}

impl QuestionKind {
    /// A short name: `form`, `url`, `sampling`, `roots` or `other`.
    pub fn name(self) -> &'static str {
        match self {
            QuestionKind::Form => "form",
            QuestionKind::Url => "url",
            QuestionKind::Sampling => "sampling",
            QuestionKind::Roots => "roots",
            QuestionKind::Other => "other",
        }
    }
}

impl fmt::Display for QuestionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Question {
    /// A question first seen at `now`.
    pub fn new(request: InputRequest, now: SystemTime) -> Question {
        Question {
            request,
            first_seen: now,
            closed: None,
            offered: false,
        }
    }

    /// What it asks for.
    pub fn kind(&self) -> QuestionKind {
        match &self.request {
            InputRequest::Elicitation(ElicitRequest::Form { .. }) => QuestionKind::Form,
            InputRequest::Elicitation(ElicitRequest::Url { .. }) => QuestionKind::Url,
            InputRequest::Sampling(_) => QuestionKind::Sampling,
            InputRequest::Roots(_) => QuestionKind::Roots,
            _ => QuestionKind::Other,
        }
    }

    /// The message to show a person, for an elicitation.
    pub fn message(&self) -> Option<&str> {
        match &self.request {
            InputRequest::Elicitation(ElicitRequest::Form { message, .. })
            | InputRequest::Elicitation(ElicitRequest::Url { message, .. }) => Some(message),
            _ => None,
        }
    }

    /// The requested schema, for a form.
    pub fn schema(&self) -> Option<&Value> {
        match &self.request {
            InputRequest::Elicitation(ElicitRequest::Form {
                requested_schema, ..
            }) => Some(requested_schema),
            _ => None,
        }
    }

    /// The URL to visit, for a URL elicitation.
    pub fn url(&self) -> Option<&str> {
        match &self.request {
            InputRequest::Elicitation(ElicitRequest::Url { url, .. }) => Some(url),
            _ => None,
        }
    }

    /// Whether the question is still asked.
    pub fn is_closed(&self) -> bool {
        self.closed.is_some()
    }
}

/// Why an answer was refused; nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The record has no question under this key.
    NoSuchQuestion {
        /// The key.
        key: String,
    },
    /// The question closed: the server no longer asks it, or the task ended.
    Closed {
        /// The key.
        key: String,
    },
    /// The question already has an answer: the first one stored wins.
    Answered {
        /// The key.
        key: String,
    },
    /// The answer does not fit the question (a missing required field, a
    /// value of the wrong type, outside an enum or a bound, content for a
    /// URL elicitation).
    Invalid {
        /// The key.
        key: String,
        /// What is wrong, naming the field.
        reason: InvalidAnswer,
    },
    /// The answer is larger than [`MAX_ANSWER_BYTES`] as JSON.
    TooLarge {
        /// The key.
        key: String,
        /// Its size as JSON, in bytes.
        bytes: usize,
    },
}

impl Refusal {
    /// The key of the question the answer was for.
    pub fn key(&self) -> &str {
        match self {
            Refusal::NoSuchQuestion { key }
            | Refusal::Closed { key }
            | Refusal::Answered { key }
            | Refusal::Invalid { key, .. }
            | Refusal::TooLarge { key, .. } => key,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoSuchQuestion { key } => write!(f, "there is no question {key:?}"),
            Refusal::Closed { key } => write!(f, "question {key:?} is closed"),
            Refusal::Answered { key } => write!(f, "question {key:?} was already answered"),
            Refusal::Invalid { key, reason } => {
                write!(f, "the answer to question {key:?} does not fit: {reason}")
            }
            Refusal::TooLarge { key, bytes } => write!(
                f,
                "the answer to question {key:?} is {bytes} bytes, over the bound of \
                 {MAX_ANSWER_BYTES}"
            ),
        }
    }
}

/// Records the questions a read showed: a key not seen before is added
/// (within the bounds), a question no longer listed is closed. A key seen
/// before keeps its first question, even if a server sends another under
/// it. Returns whether anything changed.
pub(crate) fn ask(questions: &mut Questions, asked: &InputRequests, now: SystemTime) -> bool {
    let mut changed = false;
    for (key, q) in questions.iter_mut() {
        if q.closed.is_none() && !asked.contains_key(key) {
            q.closed = Some(now);
            changed = true;
        }
    }
    let mut open = questions.values().filter(|q| q.closed.is_none()).count();
    for (key, request) in asked {
        if questions.contains_key(key) {
            continue;
        }
        if open >= MAX_OPEN_QUESTIONS {
            tracing::warn!(
                "a task asks more than {MAX_OPEN_QUESTIONS} questions at once; the rest are \
                 not kept"
            );
            break;
        }
        let bytes = serde_json::to_vec(request).map_or(usize::MAX, |v| v.len());
        if bytes > MAX_QUESTION_BYTES {
            tracing::warn!(
                key = %key,
                bytes,
                "a question is larger than {MAX_QUESTION_BYTES} bytes; it is not kept"
            );
            continue;
        }
        questions.insert(key.clone(), Question::new(request.clone(), now));
        open += 1;
        changed = true;
    }
    forget_oldest_closed(questions);
    changed
}

/// [`ask`], with the history entries of the questions it added.
pub(crate) fn ask_noting(
    questions: &mut Questions,
    asked: &InputRequests,
    now: SystemTime,
) -> (bool, Vec<HistoryEntry>) {
    let unseen: Vec<&String> = asked
        .keys()
        .filter(|k| !questions.contains_key(*k))
        .collect();
    let changed = ask(questions, asked, now);
    let entries = unseen
        .into_iter()
        .filter(|k| questions.contains_key(*k))
        .map(|k| HistoryEntry {
            at: now,
            event: Event::Asked { key: cut(k) },
        })
        .collect();
    (changed, entries)
}

/// The history entries of the answers to `keys` that [`take`] would mark
/// taken now (stored, not yet taken).
pub(crate) fn taken_now(answers: &Answers, keys: &[String], now: SystemTime) -> Vec<HistoryEntry> {
    keys.iter()
        .filter(|k| answers.get(*k).is_some_and(|a| !a.taken))
        .map(|k| HistoryEntry {
            at: now,
            event: Event::Taken { key: cut(k) },
        })
        .collect()
}

/// The history event of an answer to `key` by `by`.
pub(crate) fn answered(key: &str, by: Answerer) -> Event {
    Event::Answered { key: cut(key), by }
}

fn forget_oldest_closed(questions: &mut Questions) {
    if questions.len() <= MAX_KEPT_QUESTIONS {
        return;
    }
    let mut closed: Vec<(SystemTime, String)> = questions
        .iter()
        .filter_map(|(k, q)| q.closed.map(|at| (at, k.clone())))
        .collect();
    closed.sort();
    let excess = questions.len() - MAX_KEPT_QUESTIONS;
    for (_, key) in closed.into_iter().take(excess) {
        questions.remove(&key);
    }
}

/// Stores `response` as the answer to question `key`, after checking it:
/// the question exists and is open, it has no answer yet, and the answer
/// fits it. `ended`: the task ended (every question is then closed).
pub(crate) fn answer(
    questions: &Questions,
    answers: &mut Answers,
    ended: bool,
    key: &str,
    response: &InputResponse,
) -> Result<(), Refusal> {
    let key_owned = || key.to_owned();
    let Some(question) = questions.get(key) else {
        return Err(Refusal::NoSuchQuestion { key: key_owned() });
    };
    if answers.contains_key(key) {
        return Err(Refusal::Answered { key: key_owned() });
    }
    if ended || question.is_closed() {
        return Err(Refusal::Closed { key: key_owned() });
    }
    let bytes = serde_json::to_vec(response).map_or(usize::MAX, |v| v.len());
    if bytes > MAX_ANSWER_BYTES {
        return Err(Refusal::TooLarge {
            key: key_owned(),
            bytes,
        });
    }
    validate(&question.request, response).map_err(|reason| Refusal::Invalid {
        key: key_owned(),
        reason,
    })?;
    answers.insert(
        key.to_owned(),
        Answer {
            response: response.clone(),
            taken: false,
        },
    );
    Ok(())
}

/// Marks the answers to `keys` taken by the server, and closes their
/// questions at `now`: the server took the answer, so it asks no more. A
/// key it still lists for a while after is then neither sent nor written
/// again, and closing costs no statement of its own.
pub(crate) fn take(
    questions: &mut Questions,
    answers: &mut Answers,
    keys: &[String],
    now: SystemTime,
) -> bool {
    let mut changed = false;
    for key in keys {
        if let Some(a) = answers.get_mut(key)
            && !a.taken
        {
            a.taken = true;
            changed = true;
        }
        if let Some(q) = questions.get_mut(key)
            && q.closed.is_none()
        {
            q.closed = Some(now);
            changed = true;
        }
    }
    changed
}

/// Marks the questions `keys` offered to the application.
pub(crate) fn offer(questions: &mut Questions, keys: &[String]) -> bool {
    let mut changed = false;
    for key in keys {
        if let Some(q) = questions.get_mut(key)
            && !q.offered
        {
            q.offered = true;
            changed = true;
        }
    }
    changed
}

/// When the oldest question that waits for an answer was first seen:
/// open, and not answered. `None` when none waits.
pub(crate) fn asking_since(questions: &Questions, answers: &Answers) -> Option<SystemTime> {
    questions
        .iter()
        .filter(|(k, q)| q.closed.is_none() && !answers.contains_key(*k))
        .map(|(_, q)| q.first_seen)
        .min()
}

#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn questions_json(questions: &Questions) -> String {
    serde_json::to_string(questions).expect("questions serialize")
}

pub(super) mod millis {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(in crate::store) fn serialize<S: Serializer>(
        t: &SystemTime,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_i64(super::super::epoch::millis(*t))
    }

    pub(in crate::store) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<SystemTime, D::Error> {
        Ok(super::super::epoch::time(i64::deserialize(d)?))
    }
}

mod millis_opt {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        t: &Option<SystemTime>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_i64(super::super::epoch::millis(*t)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        Ok(Option::<i64>::deserialize(d)?.map(super::super::epoch::time))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::protocol::ElicitResult;

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s)
    }

    fn form() -> InputRequest {
        InputRequest::form(
            "Approve the refund?",
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
        )
    }

    fn asked(keys: &[&str]) -> InputRequests {
        keys.iter().map(|k| ((*k).to_owned(), form())).collect()
    }

    #[test]
    fn new_questions_are_added_and_withdrawn_ones_closed() {
        let mut q = Questions::new();
        assert!(ask(&mut q, &asked(&["a", "b"]), at(1)));
        assert!(!ask(&mut q, &asked(&["a", "b"]), at(2)), "nothing new");
        assert_eq!(q["a"].first_seen, at(1));
        assert!(ask(&mut q, &asked(&["b", "c"]), at(3)));
        assert_eq!(q["a"].closed, Some(at(3)));
        assert_eq!(q["b"].closed, None);
        assert_eq!(q["c"].first_seen, at(3));
        // A closed key is never opened again, even if a server lists it.
        assert!(!ask(&mut q, &asked(&["a", "b", "c"]), at(4)));
        assert!(q["a"].is_closed());
    }

    #[test]
    fn a_reused_key_keeps_its_first_question() {
        let mut q = Questions::new();
        ask(&mut q, &asked(&["a"]), at(1));
        let other: InputRequests =
            [("a".to_owned(), InputRequest::url("Visit", "https://x"))].into();
        ask(&mut q, &other, at(2));
        assert_eq!(q["a"].kind(), QuestionKind::Form);
    }

    #[test]
    fn open_questions_are_bounded_and_a_huge_one_is_left_out() {
        let many: InputRequests = (0..10_000).map(|i| (format!("k{i:05}"), form())).collect();
        let mut q = Questions::new();
        ask(&mut q, &many, at(1));
        assert_eq!(q.len(), MAX_OPEN_QUESTIONS);
        let huge: InputRequests = [(
            "big".to_owned(),
            InputRequest::form("x".repeat(10 << 20), json!({"type": "object"})),
        )]
        .into();
        let mut q = Questions::new();
        assert!(!ask(&mut q, &huge, at(1)));
        assert!(q.is_empty());
    }

    #[test]
    fn closed_questions_are_forgotten_oldest_first_past_the_bound() {
        let mut q = Questions::new();
        for round in 0..(MAX_KEPT_QUESTIONS as u64 + 10) {
            ask(&mut q, &asked(&[&format!("k{round:05}")]), at(round));
        }
        assert_eq!(q.len(), MAX_KEPT_QUESTIONS);
        assert!(!q.contains_key("k00000"));
        assert!(q.values().filter(|x| !x.is_closed()).count() == 1);
    }

    #[test]
    fn the_first_answer_wins_and_a_closed_question_takes_none() {
        let mut q = Questions::new();
        ask(&mut q, &asked(&["a", "b"]), at(1));
        let mut answers = Answers::new();
        let yes: InputResponse = ElicitResult::accept(json!({"ok": true})).into();
        answer(&q, &mut answers, false, "a", &yes).unwrap();
        assert_eq!(asking_since(&q, &answers), Some(at(1)), "b still asks");
        let again = answer(
            &q,
            &mut answers,
            false,
            "a",
            &ElicitResult::decline().into(),
        );
        assert_eq!(again, Err(Refusal::Answered { key: "a".into() }));
        assert_eq!(answers["a"].response, yes);
        let missing = answer(&q, &mut answers, false, "zz", &yes);
        assert!(matches!(missing, Err(Refusal::NoSuchQuestion { .. })));
        let ended = answer(&q, &mut answers, true, "b", &yes);
        assert!(matches!(ended, Err(Refusal::Closed { .. })));
        ask(&mut q, &InputRequests::new(), at(2));
        let closed = answer(&q, &mut answers, false, "b", &yes);
        assert!(matches!(closed, Err(Refusal::Closed { .. })));
        assert_eq!(asking_since(&q, &answers), None);
    }

    #[test]
    fn an_answer_that_does_not_fit_is_refused_and_not_stored() {
        let mut q = Questions::new();
        ask(&mut q, &asked(&["a"]), at(1));
        let mut answers = Answers::new();
        let bad = answer(
            &q,
            &mut answers,
            false,
            "a",
            &ElicitResult::accept(json!({})).into(),
        );
        let Err(Refusal::Invalid { reason, .. }) = bad else {
            panic!("{bad:?}")
        };
        assert!(reason.reason().contains("\"ok\""), "{reason}");
        let huge = ElicitResult::accept(json!({"ok": true, "pad": "x".repeat(2 << 20)}));
        let big = answer(&q, &mut answers, false, "a", &huge.into());
        assert!(matches!(big, Err(Refusal::TooLarge { .. })), "{big:?}");
        assert!(answers.is_empty());
    }

    #[test]
    fn a_question_whose_schema_is_not_an_object_is_kept_and_refuses_content() {
        let odd: InputRequests = [(
            "odd".to_owned(),
            InputRequest::form("Pick one", json!("not a schema")),
        )]
        .into();
        let mut q = Questions::new();
        assert!(ask(&mut q, &odd, at(1)));
        let mut answers = Answers::new();
        let accept = ElicitResult::accept(json!({"x": 1})).into();
        let refused = answer(&q, &mut answers, false, "odd", &accept);
        let Err(Refusal::Invalid { reason, .. }) = refused else {
            panic!("{refused:?}")
        };
        assert!(reason.reason().contains("schema"), "{reason}");
        // A decline needs no schema.
        answer(
            &q,
            &mut answers,
            false,
            "odd",
            &ElicitResult::decline().into(),
        )
        .unwrap();
    }

    #[test]
    fn a_taken_answer_closes_its_question_once() {
        let mut q = Questions::new();
        ask(&mut q, &asked(&["a", "b"]), at(1));
        let mut answers = Answers::new();
        let yes: InputResponse = ElicitResult::accept(json!({"ok": true})).into();
        answer(&q, &mut answers, false, "a", &yes).unwrap();
        assert!(take(&mut q, &mut answers, &["a".to_owned()], at(2)));
        assert_eq!(q["a"].closed, Some(at(2)));
        assert!(answers["a"].taken);
        assert!(!q["b"].is_closed(), "b still asks");
        // The server lists the key a while longer: nothing to write.
        assert!(!ask(&mut q, &asked(&["a", "b"]), at(3)));
        assert!(!take(&mut q, &mut answers, &["a".to_owned()], at(4)));
        assert_eq!(q["a"].closed, Some(at(2)));
    }

    #[test]
    fn a_question_survives_a_round_trip_through_json() {
        let mut q = Questions::new();
        ask(&mut q, &asked(&["a"]), at(1));
        ask(&mut q, &InputRequests::new(), at(2));
        offer(&mut q, &["a".to_owned()]);
        let back: Questions = serde_json::from_str(&questions_json(&q)).unwrap();
        assert_eq!(back, q);
    }
}
