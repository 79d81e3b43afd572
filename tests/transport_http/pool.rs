//! The bound on POSTs in flight ([`Http::max_in_flight`]), against a
//! loopback server that holds every reply until the test opens its gate,
//! so that all the requests the transport lets through are open at once.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_tasks::protocol::RequestId;
use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};
use serde_json::Value;
use tokio::sync::{Notify, watch};

use super::*;

/// What the held server saw.
#[derive(Default)]
struct Counts {
    arrived: AtomicUsize,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    connections: AtomicUsize,
    /// Woken at each arrival.
    came: Notify,
}

/// A server that answers every POST with an empty result, once `open` is
/// true. Its URL, what it saw, and the gate.
async fn held_server() -> (String, Arc<Counts>, watch::Sender<bool>) {
    let seen = Arc::new(Counts::default());
    let (gate, opened) = watch::channel(false);
    let counts = seen.clone();
    let (addr, _accept) = crate::loopback::accept(move |stream| {
        counts.connections.fetch_add(1, Ordering::SeqCst);
        let (counts, opened) = (counts.clone(), opened.clone());
        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let (seen, mut opened) = (counts.clone(), opened.clone());
            async move {
                let body = req.into_body().collect().await.unwrap().to_bytes();
                let id = serde_json::from_slice::<Value>(&body).unwrap()["id"].clone();
                let now = seen.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                seen.peak.fetch_max(now, Ordering::SeqCst);
                seen.arrived.fetch_add(1, Ordering::SeqCst);
                seen.came.notify_waiters();
                let _ = opened.wait_for(|open| *open).await;
                seen.in_flight.fetch_sub(1, Ordering::SeqCst);
                let reply = json!({"jsonrpc": "2.0", "id": id, "result": {}});
                Ok::<_, Infallible>(
                    hyper::Response::builder()
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from(reply.to_string())))
                        .unwrap(),
                )
            }
        });
        async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        }
    })
    .await;
    let url = format!("http://{addr}/mcp");
    (url, seen, gate)
}

/// Waits until `n` requests have arrived.
async fn arrivals(seen: &Counts, n: usize) {
    loop {
        let came = seen.came.notified();
        if seen.arrived.load(Ordering::SeqCst) >= n {
            return;
        }
        came.await;
    }
}

/// Sends `n` pings at once on `http`; returns the stream their replies come on.
async fn ping_all(http: Http, n: i64) -> (impl MessageSink, impl MessageStream) {
    let (mut sink, stream) = http.connect().await.unwrap();
    for id in 1..=n {
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        let message = Outbound::request(ping.to_string(), "ping", RequestId::Number(id));
        sink.send(message).await.unwrap();
    }
    (sink, stream)
}

/// Reads `n` replies, and checks each is a response.
async fn replies(stream: &mut impl MessageStream, n: usize) {
    for _ in 0..n {
        match stream.recv().await.unwrap() {
            Some(Inbound::Message(text)) => assert!(text.contains("\"result\""), "{text}"),
            other => panic!("expected a reply, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn no_more_posts_are_in_flight_than_max_in_flight() {
    bounded(async {
        let (url, seen, gate) = held_server().await;
        let (_sink, mut stream) = ping_all(Http::new(url).max_in_flight(3), 10).await;
        arrivals(&seen, 3).await;
        // The other seven are held back by the client, not on their way:
        // a while later still only three have reached the server.
        tokio::time::sleep(ms(200)).await;
        assert_eq!(seen.arrived.load(Ordering::SeqCst), 3);
        gate.send_replace(true);
        replies(&mut stream, 10).await;
        assert_eq!(seen.arrived.load(Ordering::SeqCst), 10);
        assert_eq!(seen.peak.load(Ordering::SeqCst), 3);
        // Each in-flight POST is on a connection of its own. How many more
        // are opened depends on timing: the pool may open one for a
        // request that then takes another coming back to it.
        let connections = seen.connections.load(Ordering::SeqCst);
        assert!(connections >= 3, "{connections} connections");
    })
    .await;
}

#[tokio::test]
async fn without_a_limit_every_request_opens_a_connection_of_its_own() {
    bounded(async {
        let (url, seen, gate) = held_server().await;
        let (_sink, mut stream) = ping_all(Http::new(url), 10).await;
        arrivals(&seen, 10).await;
        assert_eq!(seen.peak.load(Ordering::SeqCst), 10);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 10);
        gate.send_replace(true);
        replies(&mut stream, 10).await;
    })
    .await;
}
