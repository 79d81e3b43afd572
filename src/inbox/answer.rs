//! Answering a question from the page: the posted form turned into an
//! answer and given to the store ([`TaskStore::answer_by`]), so that its
//! checks and its first-answer-wins rule hold here too.

use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::Value;

use super::form::{self, Entered};
use super::questions::{Back, Refused, list};
use super::{App, no_record, now, record_id, store_trouble, task, trouble};
use crate::protocol::ElicitResult;
use crate::store::{Answerer, Question, Refusal, TaskStore};

/// Answers question `_key` of record `id` with the posted form: through
/// the store, so that its checks and the first-answer-wins rule hold. An
/// answer taken goes back to the page it came from; a refused one shows
/// that page again, with the reason next to the form (422).
pub(super) async fn answer<S: TaskStore>(
    State(app): State<Arc<App<S>>>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Response {
    let base = app.base();
    let id = match record_id(base, &raw) {
        Ok(id) => id,
        Err(page) => return *page,
    };
    let one = |name: &str| {
        posted
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let (Some(key), Some(action)) = (one("_key"), one("_action")) else {
        return trouble(
            base,
            StatusCode::BAD_REQUEST,
            "Not an answer",
            "The form sent no question key or no action.",
        );
    };
    let back = if one("_back") == Some("task") {
        Back::Task
    } else {
        Back::Questions
    };
    let entered: Entered = posted
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("f:")
                .map(|name| (name.to_owned(), v.clone()))
                .or_else(|| k.starts_with("l:").then(|| (k.clone(), v.clone())))
        })
        .collect();
    let record = match app.store.get(id).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return no_record(base, id);
        }
        Err(e) => return store_trouble(base, &e),
    };
    let schema = record.questions.get(key).and_then(Question::schema);
    let response = match action {
        "decline" => Ok(ElicitResult::decline()),
        "cancel" => Ok(ElicitResult::cancel()),
        "accept" => match schema {
            Some(schema) => form::content(schema, &entered)
                .map(|content| ElicitResult::accept(Value::Object(content))),
            None => Ok(ElicitResult::accept_empty()),
        },
        _ => {
            return trouble(
                base,
                StatusCode::BAD_REQUEST,
                "Not an answer",
                "The form's action is not accept, decline or cancel.",
            );
        }
    };
    let refused = match response {
        Err((field, reason)) => Refused {
            key: key.to_owned(),
            reason,
            field: Some(field),
            entered,
        },
        Ok(response) => match app
            .store
            .answer_by(id, key, &response.into(), Answerer::Page, now())
            .await
        {
            Ok(()) => {
                let to = match back {
                    Back::Task => format!("{base}/tasks/{id}"),
                    Back::Questions => format!("{base}/questions"),
                };
                return Redirect::to(&to).into_response();
            }
            Err(e) => match e.refusal() {
                Some(why) => {
                    // A misfit names its field: shown next to it.
                    let (reason, field) = match why {
                        Refusal::Invalid { reason, .. } => (
                            reason.to_string(),
                            schema
                                .and_then(|s| form::field_named(s, reason.reason()))
                                .map(str::to_owned),
                        ),
                        other => (other.to_string(), None),
                    };
                    Refused {
                        key: key.to_owned(),
                        reason,
                        field,
                        entered,
                    }
                }
                None => return store_trouble(base, &e),
            },
        },
    };
    // The record as it stands now (the refusal may be that it moved on).
    let record = match app.store.get(id).await {
        Ok(Some(r)) => r,
        _ => record,
    };
    let status = StatusCode::UNPROCESSABLE_ENTITY;
    match back {
        Back::Task => task::render(base, &headers, status, &record, Some(&refused)),
        Back::Questions => list(&app, &headers, status, Some((&record, &refused))).await,
    }
}
