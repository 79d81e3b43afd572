//! Reading an SSE response: the `data` of each event is one JSON-RPC
//! message. The event framing is `sse-stream`'s; this module adds a bound on
//! how much may arrive without completing an event.

use std::collections::hash_map::RandomState;
use std::collections::{HashSet, VecDeque};
use std::future::poll_fn;
use std::hash::BuildHasher;
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
///
/// An event whose `id` the stream already had (on this connection or an
/// earlier one it resumes, within the last [`MAX_EVENT_IDS`]) is skipped:
/// a server that ignores `Last-Event-ID` and replays its stream does not
/// deliver the same message twice.
pub(super) struct Events {
    inner: Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>,
    pending: Arc<AtomicUsize>,
    max: usize,
    resume: Resume,
    /// Messages returned so far (events with data; priming events and
    /// replayed events not).
    messages: usize,
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
            resume: Resume::default(),
            messages: 0,
            oversized: false,
        }
    }

    /// The events of an HTTP response's body.
    pub(super) fn of(response: reqwest::Response, max: usize) -> Self {
        let body = http::Response::from(response).into_body();
        Events::new(http_body_util::BodyDataStream::new(body), max)
    }

    /// How many messages were returned: a stream that parsed events but
    /// returned none (a priming event alone, say) delivered nothing.
    pub(super) fn messages(&self) -> usize {
        self.messages
    }

    /// Whether the stream failed because an event grew past the limit (a
    /// stream worth no second attempt).
    pub(super) fn oversized(&self) -> bool {
        self.oversized
    }

    /// Starts from what an earlier connection of the same stream settled
    /// ([`Events::take_resume`]), so a resumed stream without ids of its
    /// own keeps the last one seen, and skips the events it had already.
    pub(super) fn resuming(mut self, resume: Resume) -> Self {
        self.resume = resume;
        self
    }

    /// What a later connection of the stream starts from.
    pub(super) fn take_resume(&mut self) -> Resume {
        std::mem::take(&mut self.resume)
    }

    /// The id of the last event that carried one (an empty `id:` clears it).
    pub(super) fn last_id(&self) -> Option<&str> {
        self.resume.last_id()
    }

    /// The last `retry:` the server sent: how long to wait before reconnecting.
    pub(super) fn retry(&self) -> Option<Duration> {
        self.resume.retry()
    }

    /// The next message; `None` at the end of the body; `Err` when the body
    /// broke or an event grew past the limit.
    pub(super) async fn next(&mut self) -> Option<Result<String, String>> {
        loop {
            let event = poll_fn(|cx| self.inner.as_mut().poll_next(cx)).await?;
            if let Ok(event) = &event {
                self.pending.store(0, Ordering::Relaxed);
                if let Some(ms) = event.retry {
                    self.resume.retry = Some(Duration::from_millis(ms));
                }
                if let Some(id) = &event.id
                    && !self.resume.note(id)
                {
                    tracing::debug!("skipping an SSE event whose id the stream had already");
                    continue;
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
                    self.messages += 1;
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

/// How many event ids a stream remembers to tell a replayed event.
pub(super) const MAX_EVENT_IDS: usize = 1024;

/// What one connection of an SSE stream hands the next: the last event id
/// (sent as `Last-Event-ID`), the server's `retry`, and the ids of the
/// latest events, to skip a replay.
#[derive(Default)]
pub(super) struct Resume {
    last_id: Option<String>,
    retry: Option<Duration>,
    /// The last [`MAX_EVENT_IDS`] ids, oldest first, as keyed 64-bit
    /// hashes: a few kilobytes whatever the server's ids hold.
    ids: VecDeque<u64>,
    /// The same hashes, to look up.
    known: HashSet<u64>,
    /// The hasher's random keys (a server cannot aim at a collision).
    keys: RandomState,
}

impl Resume {
    /// The id of the last event that carried one.
    pub(super) fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last `retry:` the server sent.
    pub(super) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Takes note of an event's `id`; `false` when the stream had it
    /// already (the event is a replay). An empty id clears the last id;
    /// one holding NUL is ignored, as the SSE specification says.
    fn note(&mut self, id: &str) -> bool {
        if id.is_empty() {
            self.last_id = None;
            return true;
        }
        if id.contains('\0') {
            return true;
        }
        let key = self.keys.hash_one(id);
        if self.known.contains(&key) {
            return false;
        }
        if self.ids.len() == MAX_EVENT_IDS
            && let Some(oldest) = self.ids.pop_front()
        {
            self.known.remove(&oldest);
        }
        self.ids.push_back(key);
        self.known.insert(key);
        self.last_id = Some(id.to_owned());
        true
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
    async fn an_event_replayed_on_a_resumed_stream_is_skipped() {
        let mut first = Events::new(chunks(&["id: 1\ndata: {\"a\":1}\n\n"]), 1024);
        assert_eq!(first.next().await, Some(Ok("{\"a\":1}".to_owned())));
        assert_eq!(first.next().await, None);
        // The server ignored `Last-Event-ID` and started over.
        let replay = chunks(&["id: 1\ndata: {\"a\":1}\n\n", "id: 2\ndata: {\"b\":2}\n\n"]);
        let mut second = Events::new(replay, 1024).resuming(first.take_resume());
        assert_eq!(second.next().await, Some(Ok("{\"b\":2}".to_owned())));
        assert_eq!(
            second.messages(),
            1,
            "the replay is not a message delivered"
        );
        assert_eq!(second.last_id(), Some("2"));
    }

    /// Delivers `connections` one after another, each resuming the last.
    async fn through(connections: &[Vec<(Option<u8>, u16)>]) -> Vec<String> {
        let mut resume = Resume::default();
        let mut out = Vec::new();
        for events in connections {
            let text: Vec<String> = events
                .iter()
                .map(|(id, n)| match id {
                    Some(id) => format!("id: e-{id}\ndata: {{\"n\":{n}}}\n\n"),
                    None => format!("data: {{\"n\":{n}}}\n\n"),
                })
                .collect();
            let parts: Vec<&str> = text.iter().map(String::as_str).collect();
            let mut stream = Events::new(chunks(&parts), 1024).resuming(resume);
            while let Some(Ok(data)) = stream.next().await {
                out.push(data);
            }
            resume = stream.take_resume();
        }
        out
    }

    proptest::proptest! {
        /// Whatever a server replays, across reconnections or within one
        /// stream, an event with an id is delivered once, and every other
        /// event is delivered, in order.
        #[test]
        fn an_event_id_is_delivered_once(
            connections in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::option::of(0u8..8), 0u16..1000),
                    0..12,
                ),
                1..5,
            )
        ) {
            let mut had = std::collections::HashSet::new();
            let expected: Vec<String> = connections
                .iter()
                .flatten()
                .filter(|(id, _)| id.is_none_or(|id| had.insert(id)))
                .map(|(_, n)| format!("{{\"n\":{n}}}"))
                .collect();
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let got = runtime.block_on(through(&connections));
            proptest::prop_assert_eq!(got, expected);
        }
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
