//! Newline-framed JSON over any byte stream.

use std::collections::VecDeque;
use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::batch::batch_items;
use super::{
    Closed, DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageSink, MessageStream, Outbound, Transport,
};

/// MCP over any reader and writer, one JSON message per line.
///
/// A line holding a JSON array is a JSON-RPC batch (as a 2025-03-26
/// server may send): its messages are handed to the client one by one,
/// in order, as over HTTP.
///
/// The framing of stdio, usable for TCP or Unix sockets:
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_tasks::{Client, transport::LineTransport};
/// let stream = tokio::net::TcpStream::connect("127.0.0.1:7000").await?;
/// let (read, write) = stream.into_split();
/// let client = Client::builder().connect(LineTransport::new(read, write)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LineTransport<R, W> {
    reader: R,
    writer: W,
    max_message_size: usize,
}

impl<R, W> LineTransport<R, W> {
    /// Frames messages over `reader` and `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport {
            reader,
            writer,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }

    /// The longest line accepted (default 16 MiB). A longer one closes the
    /// connection with an error rather than growing a buffer without bound.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }
}

/// The writing half of a [`LineTransport`].
#[derive(Debug)]
pub struct LineSink<W> {
    writer: Option<W>,
}

/// The reading half of a [`LineTransport`].
#[derive(Debug)]
pub struct LineStream<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    max: usize,
    /// The rest of a batch line, to hand out before reading another line.
    batch: VecDeque<String>,
}

impl<R, W> Transport for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Sink = LineSink<W>;
    type Stream = LineStream<R>;

    async fn connect(self) -> io::Result<(LineSink<W>, LineStream<R>)> {
        Ok((
            LineSink {
                writer: Some(self.writer),
            },
            LineStream::new(self.reader, self.max_message_size),
        ))
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> MessageSink for LineSink<W> {
    async fn send(&mut self, message: Outbound) -> io::Result<()> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "transport closed"))?;
        write_line(w, message.json).await
    }

    async fn close(&mut self) -> io::Result<Closed> {
        if let Some(mut w) = self.writer.take() {
            w.shutdown().await?;
        }
        Ok(Closed::gracefully())
    }
}

/// Writes one message and its newline with a single write: the newline is
/// appended to the message's own buffer (which usually has room for it),
/// so an unbuffered pipe sees one `write` per message, not two.
pub(crate) async fn write_line<W: AsyncWrite + Unpin>(
    w: &mut W,
    mut json: String,
) -> io::Result<()> {
    debug_assert!(!json.contains('\n'), "serde_json never writes raw newlines");
    json.push('\n');
    w.write_all(json.as_bytes()).await?;
    w.flush().await
}

impl<R: AsyncRead + Unpin> LineStream<R> {
    pub(crate) fn new(reader: R, max: usize) -> Self {
        LineStream {
            reader: BufReader::new(reader),
            buf: Vec::new(),
            max,
            batch: VecDeque::new(),
        }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageStream for LineStream<R> {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        if let Some(next) = self.batch.pop_front() {
            return Ok(Some(Inbound::Message(next)));
        }
        loop {
            match read_line_limited(&mut self.reader, &mut self.buf, self.max).await? {
                None => return Ok(None),
                Some(()) => {
                    let line = std::mem::take(&mut self.buf);
                    let trimmed = trim_line(&line);
                    if trimmed.is_empty() {
                        continue;
                    }
                    let text = match std::str::from_utf8(trimmed) {
                        Ok(text) => text,
                        Err(e) => {
                            let why = format!("a line that is not UTF-8: {e}");
                            return Ok(Some(Inbound::Invalid(why)));
                        }
                    };
                    if let Some(items) = batch_items(text) {
                        self.batch = items.into();
                        if let Some(first) = self.batch.pop_front() {
                            return Ok(Some(Inbound::Message(first)));
                        }
                    }
                    return Ok(Some(Inbound::Message(text.to_owned())));
                }
            }
        }
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads up to and including the next `\n` into `buf`, refusing lines over `max`.
///
/// Returns `Ok(None)` at a clean end of stream. A last line without a
/// newline is still returned.
pub(crate) async fn read_line_limited<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<()>> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() { None } else { Some(()) });
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        if buf.len() + chunk.len() > max.saturating_add(2) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the server sent a message larger than {max} bytes"),
            ));
        }
        buf.extend_from_slice(chunk);
        let used = chunk.len();
        reader.consume(used);
        if done {
            return Ok(Some(()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<io::Result<Option<Inbound>>> {
        let mut s = LineStream::new(std::io::Cursor::new(input.to_vec()), max);
        let mut out = Vec::new();
        loop {
            let r = s.recv().await;
            let end = !matches!(r, Ok(Some(_)));
            out.push(r);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        let out = lines(b"{\"a\":1}\r\n\n{\"b\":2}", 100).await;
        let texts: Vec<_> = out
            .iter()
            .filter_map(|r| match r {
                Ok(Some(Inbound::Message(m))) => Some(m.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["{\"a\":1}", "{\"b\":2}"]);
        assert!(matches!(out.last(), Some(Ok(None))));
    }

    #[tokio::test]
    async fn oversized_line_is_an_error() {
        let big = [b'x'; 64];
        let out = lines(&big, 16).await;
        let err = out.last().unwrap().as_ref().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("larger than 16 bytes"));
    }

    fn messages(out: &[io::Result<Option<Inbound>>]) -> Vec<String> {
        out.iter()
            .filter_map(|r| match r {
                Ok(Some(Inbound::Message(m))) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn a_batch_line_is_handed_out_one_message_at_a_time() {
        let input = b"[{\"a\":1}, {\"b\":2}]\n{\"c\":3}\n[]\n";
        let out = lines(input, 100).await;
        assert_eq!(
            messages(&out),
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "[]"]
        );
    }

    proptest::proptest! {
        /// However messages are grouped into lines (alone, or batched with
        /// their neighbours), the stream hands out the same messages in
        /// the same order.
        #[test]
        fn batching_never_changes_the_messages_or_their_order(
            groups in proptest::collection::vec(1usize..4, 0..12),
        ) {
            let mut input = String::new();
            let mut expected = Vec::new();
            for (g, size) in groups.iter().enumerate() {
                let items: Vec<String> = (0..*size)
                    .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":[{i}]}}", g * 10 + i))
                    .collect();
                expected.extend(items.iter().cloned());
                if *size == 1 && g % 2 == 0 {
                    input.push_str(&items[0]);
                } else {
                    input.push('[');
                    input.push_str(&items.join(","));
                    input.push(']');
                }
                input.push_str(if g % 3 == 0 { "\r\n" } else { "\n" });
            }
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let out = rt.block_on(lines(input.as_bytes(), 1 << 16));
            proptest::prop_assert_eq!(messages(&out), expected);
        }
    }

    #[tokio::test]
    async fn non_utf8_is_reported_not_fatal() {
        let out = lines(b"\xff\xfe\n{}\n", 100).await;
        assert!(matches!(out[0], Ok(Some(Inbound::Invalid(_)))));
        assert!(matches!(&out[1], Ok(Some(Inbound::Message(m))) if m == "{}"));
    }
}
