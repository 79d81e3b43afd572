//! The lifecycle over Streamable HTTP, and its floor: the same POSTs, byte
//! for byte and header for header as the client sent them (captured in the
//! same run), sent by a bare `reqwest` loop whose only other work is
//! parsing each reply with `serde_json`.
//!
//! Both talk to a replay server in a child process (this binary with
//! `--replay-http`): a bare hyper server on 127.0.0.1 answering each POST
//! from the same canned JSON as the stdio replay. Being another process,
//! its CPU is in neither figure, and `valgrind --tool=callgrind` (which
//! does not follow children by default) counts the client's instructions
//! only:
//!
//! ```text
//! valgrind --tool=callgrind target/release/deps/lifecycle-HASH --profile http_lifecycle 2000
//! valgrind --tool=callgrind target/release/deps/lifecycle-HASH --profile http_floor 2000
//! ```
//!
//! `--cpu-http N ROUNDS` measures the CPU time of the client process (all
//! its threads) per lifecycle, unpaced and paced (10 ms before each read),
//! for the client and the floor, and the cost of a bare wake-up.

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_tasks::Client;
use mcp_tasks::transport::Http;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::{answer, lifecycle, lifecycle_every, runtime};

/// The interval of a paced lifecycle.
const PACE: Duration = Duration::from_millis(10);

/// One POST as the server received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Posted {
    /// Name and value of each header, in the order they came.
    headers: Vec<(String, String)>,
    body: Bytes,
}

type Log = Arc<Mutex<Vec<Posted>>>;

/// The child process: serves until its stdin closes, then (with
/// `--report`) says on stderr how many POSTs it answered.
pub fn replay_server() {
    let served = Arc::new(AtomicUsize::new(0));
    let counted = served.clone();
    let report = std::env::args().any(|a| a == "--report");
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        if report {
            eprintln!(
                "replay-http: {} POSTs answered",
                counted.load(Ordering::SeqCst)
            );
        }
        std::process::exit(0);
    });
    let rt = runtime();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut out = std::io::stdout();
        writeln!(out, "{}", listener.local_addr().unwrap().port()).unwrap();
        out.flush().unwrap();
        serve(listener, None, served).await;
    });
}

/// Answers every POST on `listener`; logs each one first, when asked.
async fn serve(listener: tokio::net::TcpListener, log: Option<Log>, served: Arc<AtomicUsize>) {
    let gets = Arc::new(Mutex::new(0));
    while let Ok((stream, _)) = listener.accept().await {
        let (log, gets, served) = (log.clone(), gets.clone(), served.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                handle(request, log.clone(), gets.clone(), served.clone())
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    request: Request<Incoming>,
    log: Option<Log>,
    gets: Arc<Mutex<usize>>,
    served: Arc<AtomicUsize>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let headers = request
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect();
    let body = request.into_body().collect().await.unwrap().to_bytes();
    served.fetch_add(1, Ordering::Relaxed);
    if let Some(log) = log {
        log.lock().unwrap().push(Posted {
            headers,
            body: body.clone(),
        });
    }
    let message: Value = serde_json::from_slice(&body).unwrap();
    let reply = answer(&message, &mut gets.lock().unwrap());
    Ok(match reply {
        Some(json) => Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(json)))
            .unwrap(),
        // A notification (or a response): accepted, nothing to say.
        None => Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Full::new(Bytes::new()))
            .unwrap(),
    })
}

/// A replay server in a child process; killed when dropped.
pub struct Child {
    process: std::process::Child,
    url: String,
}

impl Child {
    pub fn spawn() -> Child {
        Child::start(false)
    }

    /// A server that reports its count of POSTs when it ends (not under
    /// divan, whose table it would cut).
    pub fn reporting() -> Child {
        Child::start(true)
    }

    fn start(report: bool) -> Child {
        let mut process = Command::new(std::env::current_exe().unwrap())
            .arg("--replay-http")
            .args(report.then_some("--report"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(process.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().unwrap();
        Child {
            process,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Closing its stdin ends it (after it prints its count).
        drop(self.process.stdin.take());
        let _ = self.process.wait();
    }
}

/// The bare loop: the captured POSTs, each reply read whole and parsed.
pub struct Floor {
    client: reqwest::Client,
    url: reqwest::Url,
    posts: Vec<(HeaderMap, Bytes)>,
}

impl Floor {
    pub fn new(url: &str, posted: &[Posted]) -> Floor {
        // reqwest is built without a TLS provider; the transport installs
        // ring the same way.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let posts = posted
            .iter()
            .map(|p| {
                let headers = p
                    .headers
                    .iter()
                    // reqwest writes these two itself, for its own URL and body.
                    .filter(|(n, _)| n != "host" && n != "content-length")
                    .map(|(n, v)| {
                        (
                            HeaderName::from_bytes(n.as_bytes()).unwrap(),
                            HeaderValue::from_str(v).unwrap(),
                        )
                    })
                    .collect();
                (headers, p.body.clone())
            })
            .collect();
        Floor {
            client: reqwest::Client::new(),
            url: url.parse().unwrap(),
            posts,
        }
    }

    /// One lifecycle's POSTs; `pace` is slept before each read (every POST
    /// after the first), as a paced wait does.
    pub async fn run(&self, pace: Duration) {
        for (i, (headers, body)) in self.posts.iter().enumerate() {
            if i > 0 && !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            let response = self
                .client
                .post(self.url.clone())
                .headers(headers.clone())
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success());
            let reply = response.bytes().await.unwrap();
            divan::black_box(serde_json::from_slice::<Value>(&reply).unwrap());
        }
    }
}

/// The POSTs of one lifecycle, as the client sends them; checks that the
/// floor sends the same ones (headers compared as sets: their order is
/// reqwest's).
pub fn captured_posts() -> Vec<Posted> {
    runtime().block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let url = format!("http://{addr}/mcp");
        let log = Log::default();
        tokio::spawn(serve(listener, Some(log.clone()), Arc::default()));
        let client = Client::connect(Http::new(&url)).await.unwrap();
        // The connect probe (`server/discover`) is not part of a lifecycle.
        log.lock().unwrap().clear();
        lifecycle(&client).await;
        let posted = std::mem::take(&mut *log.lock().unwrap());
        assert_eq!(posted.len(), 4, "1 tools/call + 3 tasks/get");
        Floor::new(&url, &posted).run(Duration::ZERO).await;
        let replayed = std::mem::take(&mut *log.lock().unwrap());
        let sorted = |p: &[Posted]| -> Vec<Posted> {
            p.iter()
                .map(|p| {
                    let mut headers = p.headers.clone();
                    headers.sort();
                    Posted {
                        headers,
                        body: p.body.clone(),
                    }
                })
                .collect()
        };
        assert_eq!(
            sorted(&posted),
            sorted(&replayed),
            "the floor posts what the client posts"
        );
        posted
    })
}

/// N lifecycles (or N floors) over HTTP without divan, for a profiler;
/// `_paced` sleeps 10 ms before each read (for `strace`, `perf`).
pub fn profile(what: &str, n: usize) {
    let posted = captured_posts();
    let server = Child::reporting();
    let rt = runtime();
    let pace = if what.ends_with("_paced") {
        PACE
    } else {
        Duration::ZERO
    };
    if what.starts_with("http_floor") {
        let floor = Floor::new(&server.url, &posted);
        for _ in 0..n {
            rt.block_on(floor.run(pace));
        }
    } else {
        let client = rt
            .block_on(Client::connect(Http::new(&server.url)))
            .unwrap();
        for _ in 0..n {
            rt.block_on(lifecycle_every(&client, pace));
        }
    }
}

#[divan::bench]
fn lifecycle_http(bencher: divan::Bencher<'_, '_>) {
    let server = Child::spawn();
    let rt = runtime();
    let client = rt
        .block_on(Client::connect(Http::new(&server.url)))
        .unwrap();
    bencher.bench_local(|| rt.block_on(lifecycle(&client)));
}

#[divan::bench]
fn floor_http(bencher: divan::Bencher<'_, '_>) {
    let posted = captured_posts();
    let server = Child::spawn();
    let rt = runtime();
    let floor = Floor::new(&server.url, &posted);
    bencher.bench_local(|| rt.block_on(floor.run(Duration::ZERO)));
}

/// CPU time of this process so far, every thread's: the sum of their
/// `schedstat` run times, in nanoseconds.
fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// One thing measured by `--cpu-http`: a name, and one iteration of it.
struct Variant<'a> {
    name: &'static str,
    /// Iterations per round, as a multiple of N (unpaced ones are short).
    scale: usize,
    run: Box<dyn Fn() + 'a>,
}

/// CPU per lifecycle, unpaced and paced, client and floor, and a bare
/// wake-up: `rounds` rounds of `n` iterations (10 × `n` unpaced),
/// alternating within each round; medians and ranges over the rounds.
pub fn cpu(n: usize, rounds: usize) {
    let posted = captured_posts();
    let (floor_server, client_server) = (Child::reporting(), Child::reporting());
    let floor_rt = runtime();
    let client_rt = runtime();
    let wake_rt = runtime();
    let floor = Floor::new(&floor_server.url, &posted);
    let client = client_rt
        .block_on(Client::connect(Http::new(&client_server.url)))
        .unwrap();
    let variants = [
        Variant {
            name: "floor",
            scale: 10,
            run: Box::new(|| floor_rt.block_on(floor.run(Duration::ZERO))),
        },
        Variant {
            name: "lifecycle",
            scale: 10,
            run: Box::new(|| client_rt.block_on(lifecycle(&client))),
        },
        Variant {
            name: "floor paced",
            scale: 1,
            run: Box::new(|| floor_rt.block_on(floor.run(PACE))),
        },
        Variant {
            name: "lifecycle paced",
            scale: 1,
            run: Box::new(|| client_rt.block_on(lifecycle_every(&client, PACE))),
        },
        Variant {
            // What a paced lifecycle sleeps, and nothing else: 3 × 10 ms.
            name: "3 bare wake-ups",
            scale: 1,
            run: Box::new(|| {
                wake_rt.block_on(async {
                    for _ in 0..3 {
                        tokio::time::sleep(PACE).await;
                    }
                })
            }),
        },
    ];
    for v in &variants {
        for _ in 0..(n * v.scale / 10).max(20) {
            (v.run)();
        }
    }
    // µs of CPU and of wall time per iteration, per round.
    let mut cpu = vec![Vec::new(); variants.len()];
    let mut wall = vec![Vec::new(); variants.len()];
    for _ in 0..rounds {
        for (i, v) in variants.iter().enumerate() {
            let iterations = n * v.scale;
            let (t0, c0) = (Instant::now(), cpu_ns());
            for _ in 0..iterations {
                (v.run)();
            }
            let (c1, t1) = (cpu_ns(), Instant::now());
            cpu[i].push((c1 - c0) as f64 / 1e3 / iterations as f64);
            wall[i].push((t1 - t0).as_secs_f64() * 1e6 / iterations as f64);
        }
    }
    println!("µs per iteration, {rounds} rounds (N = {n}; unpaced 10 × N)");
    println!("| variant | CPU median | CPU range | wall median |");
    println!("|---|---|---|---|");
    for (i, v) in variants.iter().enumerate() {
        let (m, lo, hi) = stats(&cpu[i]);
        let (w, _, _) = stats(&wall[i]);
        println!("| {} | {m:.1} | {lo:.1}–{hi:.1} | {w:.0} |", v.name);
    }
    let per_round = |f: &dyn Fn(usize) -> f64| stats(&(0..rounds).map(f).collect::<Vec<_>>());
    for (label, over, under) in [
        ("lifecycle / floor", 1, 0),
        ("paced lifecycle / paced floor", 3, 2),
        ("paced lifecycle / lifecycle", 3, 1),
        ("paced floor / floor", 2, 0),
    ] {
        let (m, lo, hi) = per_round(&|r| cpu[over][r] / cpu[under][r]);
        println!("{label}: {m:.2} ({lo:.2}–{hi:.2})");
    }
    for (name, paced, unpaced) in [("lifecycle", 3, 1), ("floor", 2, 0)] {
        let extra = per_round(&|r| (cpu[paced][r] - cpu[unpaced][r]) / 3.0);
        println!(
            "{name}: extra CPU per paced read {:.1} µs ({:.1}–{:.1})",
            extra.0, extra.1, extra.2
        );
    }
    let wake = per_round(&|r| cpu[4][r] / 3.0);
    println!(
        "one bare wake-up: {:.1} µs ({:.1}–{:.1})",
        wake.0, wake.1, wake.2
    );
}

/// Median, minimum and maximum.
fn stats(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}
