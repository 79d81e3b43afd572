//! Reading an SSE response: the `data` of each event is one JSON-RPC
//! message. The event framing is `sse-stream`'s; this module adds a bound on
//! how much may arrive without completing an event.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use sse_stream::{Sse, SseByteStream};

/// The messages of one `text/event-stream` body, in order.
///
/// Comment lines (`: keep-alive`) and events without data are skipped; an
/// event whose type is neither absent nor `message` is skipped too, since
/// MCP sends its messages as plain events.
///
/// The `id` and `retry` fields of every event, messages or not (a priming
/// event has an id and no data), are remembered: [`Events::last_id`] is what
/// a reconnection sends as `Last-Event-ID`, and [`Events::retry`] how long it
/// waits first.
pub(super) struct Events {
    inner: Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>,
    pending: Arc<AtomicUsize>,
    max: usize,
    last_id: Option<String>,
    retry: Option<Duration>,
    /// Events parsed so far, messages or not.
    seen: usize,
    /// Whether the stream failed on an event past the limit.
    oversized: bool,
}

impl Events {
    /// Reads events from `chunks`, refusing more than `max` bytes of input
    /// without an event completing.
    pub(super) fn new<S, E>(chunks: S, max: usize) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let pending = Arc::new(AtomicUsize::new(0));
        Events {
            inner: Box::pin(SseByteStream::new(Counted {
                inner: Box::pin(chunks),
                pending: pending.clone(),
                max,
            })),
            pending,
            max,
            last_id: None,
            retry: None,
            seen: 0,
            oversized: false,
        }
    }

    /// The events of an HTTP response's body.
    pub(super) fn of(response: reqwest::Response, max: usize) -> Self {
        let body = http::Response::from(response).into_body();
        Events::new(http_body_util::BodyDataStream::new(body), max)
    }

    /// How many events were parsed (keep-alive comments are not events).
    pub(super) fn seen(&self) -> usize {
        self.seen
    }

    /// Whether the stream failed because an event grew past the limit (a
    /// stream worth no second attempt).
    pub(super) fn oversized(&self) -> bool {
        self.oversized
    }

    /// Starts from what an earlier stream of the same exchange settled, so
    /// a resumed stream without ids of its own keeps the last one seen.
    pub(super) fn resuming(mut self, last_id: Option<String>, retry: Option<Duration>) -> Self {
        self.last_id = last_id;
        self.retry = retry;
        self
    }

    /// The id of the last event that carried one (an empty `id:` clears it).
    pub(super) fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last `retry:` the server sent: how long to wait before reconnecting.
    pub(super) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// The next message; `None` at the end of the body; `Err` when the body
    /// broke or an event grew past the limit.
    pub(super) async fn next(&mut self) -> Option<Result<String, String>> {
        loop {
            let event = poll_fn(|cx| self.inner.as_mut().poll_next(cx)).await?;
            if let Ok(event) = &event {
                self.seen += 1;
                self.pending.store(0, Ordering::Relaxed);
                if let Some(id) = &event.id {
                    // An id holding NUL is ignored, as the SSE specification says.
                    if id.is_empty() {
                        self.last_id = None;
                    } else if !id.contains('\0') {
                        self.last_id = Some(id.clone());
                    }
                }
                if let Some(ms) = event.retry {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            match event {
                Ok(Sse {
                    data: Some(data),
                    event,
                    ..
                }) if matches!(event.as_deref(), None | Some("message")) => {
                    if data.trim().is_empty() {
                        continue; // a priming event
                    }
                    return Some(Ok(data));
                }
                Ok(other) => {
                    if other.event.is_some() && other.data.is_some() {
                        tracing::debug!(event = ?other.event, "skipping an SSE event that is not a message");
                    }
                }
                Err(e) => {
                    let too_large = self.pending.load(Ordering::Relaxed) > self.max;
                    self.oversized = too_large;
                    return Some(Err(if too_large {
                        format!(
                            "an SSE event grew past {}, the most the client reads",
                            crate::human::bytes(self.max)
                        )
                    } else {
                        format!("the response stream broke: {e}")
                    }));
                }
            }
        }
    }
}

/// Counts the bytes read since the last event and fails past the limit.
struct Counted<S> {
    inner: Pin<Box<S>>,
    pending: Arc<AtomicUsize>,
    max: usize,
}

#[derive(Debug, thiserror::Error)]
enum ChunkError {
    #[error(transparent)]
    Body(Box<dyn std::error::Error + Send + Sync>),
    #[error("too much input without an event")]
    TooLarge,
}

impl<S, E> Stream for Counted<S>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<Bytes, ChunkError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = ready!(self.inner.as_mut().poll_next(cx));
        Poll::Ready(item.map(|chunk| {
            let chunk = chunk.map_err(|e| ChunkError::Body(Box::new(e)))?;
            let total = self.pending.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
            if total > self.max {
                return Err(ChunkError::TooLarge);
            }
            Ok(chunk)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Chunks(std::vec::IntoIter<Result<Bytes, std::io::Error>>);

    impl Stream for Chunks {
        type Item = Result<Bytes, std::io::Error>;
        fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Ready(self.0.next())
        }
    }

    fn chunks(parts: &[&str]) -> Chunks {
        Chunks(
            parts
                .iter()
                .map(|p| Ok(Bytes::from(p.to_string())))
                .collect::<Vec<_>>()
                .into_iter(),
        )
    }

    async fn all(parts: &[&str], max: usize) -> Vec<Result<String, String>> {
        let mut events = Events::new(chunks(parts), max);
        let mut out = Vec::new();
        while let Some(e) = events.next().await {
            out.push(e);
        }
        out
    }

    #[tokio::test]
    async fn messages_split_across_chunks_and_keep_alives_skipped() {
        let out = all(
            &[
                ": keep-alive\n\n",
                "data: {\"a\":",
                "1}\n\n: ping\n\nevent: message\ndata: {\"b\":2}\r\n\r\n",
                "id: 7\ndata:\n\n",
                "event: other\ndata: {\"c\":3}\n\n",
            ],
            1024,
        )
        .await;
        assert_eq!(
            out,
            [Ok("{\"a\":1}".to_owned()), Ok("{\"b\":2}".to_owned())]
        );
    }

    #[tokio::test]
    async fn ids_and_retry_are_remembered_across_events() {
        let mut events = Events::new(
            chunks(&[
                "id: e-1\nretry: 500\ndata: \n\n",
                "data: {\"a\":1}\n\n",
                "id: e-2\nevent: other\ndata: x\n\n",
            ]),
            1024,
        );
        assert_eq!(events.next().await, Some(Ok("{\"a\":1}".to_owned())));
        assert_eq!(events.last_id(), Some("e-1"));
        assert_eq!(events.retry(), Some(Duration::from_millis(500)));
        assert_eq!(events.next().await, None);
        assert_eq!(events.last_id(), Some("e-2"));
    }

    #[tokio::test]
    async fn an_event_past_the_limit_is_an_error() {
        let big = format!("data: {}", "x".repeat(100));
        let out = all(&["data: {}\n\n", &big, &big], 64).await;
        assert_eq!(out[0], Ok("{}".to_owned()));
        assert!(
            out[1].as_ref().unwrap_err().contains("past 64 bytes"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn a_broken_body_is_reported() {
        let parts = vec![
            Ok(Bytes::from("data: {}\n\n")),
            Err(std::io::Error::other("reset")),
        ];
        let mut events = Events::new(Chunks(parts.into_iter()), 1024);
        assert_eq!(events.next().await, Some(Ok("{}".to_owned())));
        let err = events.next().await.unwrap().unwrap_err();
        assert!(err.contains("broke"), "{err}");
        assert_eq!(events.next().await, None);
    }
}
