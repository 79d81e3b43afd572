//! An in-process transport: two connected ends, no I/O.
//!
//! Used by tests, examples and servers embedded in the same process.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let (client_end, server_end) = mcp_tasks::transport::memory::pair();
//! # drop((client_end, server_end)); }
//! ```

use std::io;

use tokio::sync::mpsc;

use super::{Closed, Inbound, MessageSink, MessageStream, Outbound, Transport};

/// How many messages may wait in each direction before a sender waits.
const CAPACITY: usize = 256;

/// One end of an in-memory connection. See [`pair`].
#[derive(Debug)]
pub struct MemoryTransport {
    tx: mpsc::Sender<Outbound>,
    rx: mpsc::Receiver<Outbound>,
}

/// Two connected ends: what one sends, the other receives.
pub fn pair() -> (MemoryTransport, MemoryTransport) {
    let (a_tx, b_rx) = mpsc::channel(CAPACITY);
    let (b_tx, a_rx) = mpsc::channel(CAPACITY);
    (
        MemoryTransport { tx: a_tx, rx: a_rx },
        MemoryTransport { tx: b_tx, rx: b_rx },
    )
}

/// The sending half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemorySink(Option<mpsc::Sender<Outbound>>);

/// The receiving half of a [`MemoryTransport`].
#[derive(Debug)]
pub struct MemoryStream(mpsc::Receiver<Outbound>);

impl Transport for MemoryTransport {
    type Sink = MemorySink;
    type Stream = MemoryStream;

    async fn connect(self) -> io::Result<(MemorySink, MemoryStream)> {
        Ok((MemorySink(Some(self.tx)), MemoryStream(self.rx)))
    }
}

impl MessageSink for MemorySink {
    async fn send(&mut self, message: Outbound) -> io::Result<()> {
        let closed = || io::Error::new(io::ErrorKind::BrokenPipe, "the other end is closed");
        let tx = self.0.as_ref().ok_or_else(closed)?;
        tx.send(message).await.map_err(|_| closed())
    }

    async fn close(&mut self) -> io::Result<Closed> {
        self.0 = None;
        Ok(Closed::gracefully())
    }
}

impl MessageStream for MemoryStream {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        Ok(self.0.recv().await.map(|m| Inbound::Message(m.json)))
    }
}
