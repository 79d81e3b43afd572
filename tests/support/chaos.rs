//! Transports that lose replies, for fault tests and the soak.

use std::io;

use mcp_tasks::transport::{
    Closed, Inbound, MessageSink, MessageStream, Outbound, Transport, memory,
};
use tokio::sync::mpsc;

/// Loses the reply to the first request of method `.1` (reported as
/// [`Inbound::Lost`], as a broken HTTP response stream is), then works.
pub struct Lossy(pub memory::MemoryTransport, pub &'static str);

impl Transport for Lossy {
    type Sink = ChaosSink;
    type Stream = ChaosStream;
    async fn connect(self) -> io::Result<(ChaosSink, ChaosStream)> {
        let method = self.1;
        let mut fired = false;
        Chaos::with_rule(self.0, move |m: &Outbound| {
            if !fired && m.method == method {
                fired = true;
                Fate::Lose
            } else {
                Fate::Deliver
            }
        })
        .connect()
        .await
    }
}

/// What happens to one request on a [`Chaos`] transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// It reaches the server.
    Deliver,
    /// It never reaches the server and the transport says its reply is lost
    /// (a connection reset): the client fails it at once.
    Lose,
    /// It never reaches the server and nothing is said: only the client's
    /// request timeout ends it.
    Swallow,
}

type Rule = Box<dyn FnMut(&Outbound) -> Fate + Send>;

/// A memory transport whose requests meet the fate a rule gives them.
/// Notifications always go through.
pub struct Chaos {
    inner: memory::MemoryTransport,
    rule: Rule,
}

impl Chaos {
    /// Decides each request's fate with `rule`.
    pub fn with_rule(
        inner: memory::MemoryTransport,
        rule: impl FnMut(&Outbound) -> Fate + Send + 'static,
    ) -> Self {
        Chaos {
            inner,
            rule: Box::new(rule),
        }
    }

    /// Loses `lose` and swallows `swallow` requests in a thousand, chosen by
    /// a generator seeded with `seed` (so a run can be replayed).
    pub fn random(inner: memory::MemoryTransport, seed: u64, lose: u32, swallow: u32) -> Self {
        let mut rng = Rng(seed);
        Chaos::with_rule(inner, move |_| {
            let roll = rng.below(1000) as u32;
            if roll < lose {
                Fate::Lose
            } else if roll < lose + swallow {
                Fate::Swallow
            } else {
                Fate::Deliver
            }
        })
    }
}

/// The sending half of a [`Chaos`] transport.
pub struct ChaosSink {
    inner: memory::MemorySink,
    lost: mpsc::UnboundedSender<Inbound>,
    rule: Rule,
}

/// The receiving half of a [`Chaos`] transport.
pub struct ChaosStream {
    inner: memory::MemoryStream,
    lost: mpsc::UnboundedReceiver<Inbound>,
}

impl Transport for Chaos {
    type Sink = ChaosSink;
    type Stream = ChaosStream;
    async fn connect(self) -> io::Result<(ChaosSink, ChaosStream)> {
        let (sink, stream) = self.inner.connect().await?;
        let (tx, rx) = mpsc::unbounded_channel();
        Ok((
            ChaosSink {
                inner: sink,
                lost: tx,
                rule: self.rule,
            },
            ChaosStream {
                inner: stream,
                lost: rx,
            },
        ))
    }
}

impl MessageSink for ChaosSink {
    async fn send(&mut self, m: Outbound) -> io::Result<()> {
        let Some(id) = m.id.clone() else {
            return self.inner.send(m).await;
        };
        match (self.rule)(&m) {
            Fate::Deliver => self.inner.send(m).await,
            Fate::Lose => {
                let _ = self.lost.send(Inbound::Lost {
                    id,
                    reason: "the connection was reset".into(),
                });
                Ok(())
            }
            Fate::Swallow => Ok(()),
        }
    }
    async fn close(&mut self) -> io::Result<Closed> {
        self.inner.close().await
    }
}

impl MessageStream for ChaosStream {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        tokio::select! {
            Some(lost) = self.lost.recv() => Ok(Some(lost)),
            m = self.inner.recv() => m,
        }
    }
}

/// A small deterministic generator (xorshift64*), so runs replay exactly.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
