//! Newline-framed JSON over any byte stream.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::{DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageSink, MessageStream, Outbound, Transport};

/// MCP over any reader and writer, one JSON message per line.
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

    async fn close(&mut self) {
        if let Some(mut w) = self.writer.take() {
            let _ = w.shutdown().await;
        }
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
        }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageStream for LineStream<R> {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        loop {
            match read_line_limited(&mut self.reader, &mut self.buf, self.max).await? {
                None => return Ok(None),
                Some(()) => {
                    let line = std::mem::take(&mut self.buf);
                    let trimmed = trim_line(&line);
                    if trimmed.is_empty() {
                        continue;
                    }
                    return Ok(Some(match std::str::from_utf8(trimmed) {
                        Ok(s) => Inbound::Message(s.to_owned()),
                        Err(e) => Inbound::Invalid(format!("a line that is not UTF-8: {e}")),
                    }));
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

    #[tokio::test]
    async fn non_utf8_is_reported_not_fatal() {
        let out = lines(b"\xff\xfe\n{}\n", 100).await;
        assert!(matches!(out[0], Ok(Some(Inbound::Invalid(_)))));
        assert!(matches!(&out[1], Ok(Some(Inbound::Message(m))) if m == "{}"));
    }
}
