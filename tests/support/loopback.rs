//! The hyper plumbing the loopback HTTP test servers share: the one
//! listener on 127.0.0.1 (each connection handed to the server, or served
//! with one handler), and a response body fed by a channel.
#![allow(dead_code, reason = "each server uses a different part")]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Listens on a free port of 127.0.0.1 and hands each connection to
/// `serve`, on a task of its own. Returns the address and the accepting
/// task, to abort when the server goes.
pub async fn accept<S, F>(serve: S) -> (SocketAddr, JoinHandle<()>)
where
    S: Fn(TcpStream) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accept = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    });
    (addr, accept)
}

/// A server's accepting task, stopped when this is dropped (with the
/// server that holds it).
pub struct Accepting(JoinHandle<()>);

impl Drop for Accepting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Listens on a free port of 127.0.0.1 and serves each connection (HTTP/1,
/// keep-alive) with `handler`. Returns the MCP endpoint's URL and the
/// accepting task, which stops when dropped.
pub async fn listen<H, F, B>(handler: H) -> (String, Accepting)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (addr, accept) = accept(move |stream| {
        let handler = handler.clone();
        async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(handler))
                .await;
        }
    })
    .await;
    (format!("http://{addr}/mcp"), Accepting(accept))
}

/// What a server reads of a request: its verb, its headers and its whole
/// body (empty if reading it failed), as bytes and as JSON (null where it
/// is not JSON).
pub struct Received {
    pub verb: String,
    pub headers: Vec<(String, String)>,
    pub bytes: Bytes,
    pub body: serde_json::Value,
}

impl Received {
    pub async fn read(req: Request<Incoming>) -> Received {
        use http_body_util::BodyExt as _;
        let verb = req.method().as_str().to_owned();
        let headers = header_pairs(req.headers());
        let bytes = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let body = serde_json::from_slice(&bytes).unwrap_or_default();
        Received {
            verb,
            headers,
            bytes,
            body,
        }
    }
}

/// A request's headers as (name, value) pairs, values read lossily.
pub fn header_pairs(headers: &hyper::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// The value of the header `name` (in any case) among `headers`.
pub fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A response body fed by a channel; it ends when the sender goes.
pub struct Body {
    rx: mpsc::UnboundedReceiver<String>,
    /// Called when the body is dropped, with whether it had ended first:
    /// how a server sees a stream the client let go.
    on_drop: Option<Box<dyn FnOnce(bool) + Send + Sync>>,
    ended: bool,
}

impl Body {
    /// A body of what `rx` receives.
    pub fn new(rx: mpsc::UnboundedReceiver<String>) -> Body {
        Body {
            rx,
            on_drop: None,
            ended: false,
        }
    }

    /// A body of `text` alone.
    pub fn text(text: String) -> Body {
        let (tx, rx) = mpsc::unbounded_channel();
        if !text.is_empty() {
            let _ = tx.send(text);
        }
        Body::new(rx)
    }

    /// A body of what `rx` receives, which drops `guard` when the client
    /// lets the stream go.
    pub fn with_guard(
        rx: mpsc::UnboundedReceiver<String>,
        guard: impl Send + Sync + 'static,
    ) -> Body {
        Body::on_drop(rx, move |_| drop(guard))
    }

    /// A body of what `rx` receives, which tells `f` when it is dropped
    /// whether it had ended (the sender gone) before the client let it go.
    pub fn on_drop(
        rx: mpsc::UnboundedReceiver<String>,
        f: impl FnOnce(bool) + Send + Sync + 'static,
    ) -> Body {
        Body {
            rx,
            on_drop: Some(Box::new(f)),
            ended: false,
        }
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.rx.poll_recv(cx);
        if let Poll::Ready(None) = next {
            self.ended = true;
        }
        next.map(|m| m.map(|text| Ok(Frame::data(Bytes::from(text)))))
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Some(f) = self.on_drop.take() {
            f(self.ended);
        }
    }
}
