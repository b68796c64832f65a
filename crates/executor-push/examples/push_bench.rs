//! Push throughput and latency through the embedded server.
//!
//! ```text
//! cargo run -p executor-push --release --example push_bench [EVENTS] [CHUNK_BYTES]
//! ```
//! One Rust WebSocket client (tokio-tungstenite, the tests' Pusher client) subscribes to a
//! private channel; events are published (1) in-process through `EmbeddedServer::publisher()`
//! and (2) through `HttpPublisher` over the embedded server's signed HTTP API. For each path:
//! - throughput: EVENTS events published back to back, events/s from the first publish to the
//!   last receive, with the publish-to-receive latency of each event (median, p99);
//! - latency: one event at a time (publish, wait for it, next), median and p99.
//!
//! Server, publisher and client share the machine (loopback); figures are for comparison.

#[allow(dead_code)]
#[path = "../tests/push/wsclient.rs"]
mod wsclient;

use std::time::{Duration, Instant};

use executor_push::{
    channel_auth, AppCredentials, EmbeddedServer, HttpPublisher, HttpPublisherConfig, Publisher,
    PushEvent, ServerConfig,
};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const CHANNEL: &str = "private-run-bench";

struct Stats {
    events_per_sec: Option<f64>,
    median_us: f64,
    p99_us: f64,
}

fn percentiles(mut lat: Vec<Duration>) -> (f64, f64) {
    lat.sort();
    let at = |q: f64| lat[((lat.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

/// Receives frames and reports (seq, receive time).
fn spawn_receiver(mut client: wsclient::WsClient) -> mpsc::UnboundedReceiver<(u64, Instant)> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        // Until the server closes the connection (4200 at shutdown).
        while let wsclient::Next::Frame(f) = client.next().await {
            if let Some(seq) = f.data["seq"].as_u64() {
                if tx.send((seq, Instant::now())).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

fn event(seq: u64, chunk: &str) -> PushEvent {
    PushEvent::new(CHANNEL, "stdout", json!({ "chunk": chunk, "seq": seq }))
}

async fn throughput(
    publisher: &dyn Publisher,
    rx: &mut mpsc::UnboundedReceiver<(u64, Instant)>,
    first: u64,
    n: u64,
    chunk: &str,
) -> Stats {
    let mut sent = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for seq in first..first + n {
        sent.push(Instant::now());
        publisher
            .publish(vec![event(seq, chunk)])
            .await
            .expect("publish");
    }
    let mut lat = Vec::with_capacity(n as usize);
    let mut last = start;
    for expected in first..first + n {
        let (seq, at) = rx.recv().await.expect("receiver alive");
        assert_eq!(seq, expected, "events out of order");
        lat.push(at - sent[(seq - first) as usize]);
        last = at;
    }
    let (median_us, p99_us) = percentiles(lat);
    Stats {
        events_per_sec: Some(n as f64 / (last - start).as_secs_f64()),
        median_us,
        p99_us,
    }
}

async fn latency(
    publisher: &dyn Publisher,
    rx: &mut mpsc::UnboundedReceiver<(u64, Instant)>,
    first: u64,
    n: u64,
    chunk: &str,
) -> Stats {
    let mut lat = Vec::with_capacity(n as usize);
    for seq in first..first + n {
        let t = Instant::now();
        publisher
            .publish(vec![event(seq, chunk)])
            .await
            .expect("publish");
        let (got, at) = rx.recv().await.expect("receiver alive");
        assert_eq!(got, seq);
        lat.push(at - t);
    }
    let (median_us, p99_us) = percentiles(lat);
    Stats {
        events_per_sec: None,
        median_us,
        p99_us,
    }
}

fn row(path: &str, mode: &str, n: u64, s: &Stats) {
    let rate = s
        .events_per_sec
        .map_or("-".to_owned(), |r| format!("{r:.0}"));
    println!(
        "| {path:<11} | {mode:<25} | {n:>6} | {rate:>9} | {:>9.0} | {:>9.0} |",
        s.median_us, s.p99_us
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(20_000);
    let chunk_bytes = args.get(1).copied().unwrap_or(100) as usize;
    let chunk = "x".repeat(chunk_bytes);
    let latency_n = (n / 10).clamp(100, 2_000);

    let creds = AppCredentials::new("bench", "bench-key", "bench-secret");
    // A back-to-back burst of EVENTS must fit the client's queue (default 10 000 frames, past
    // which a slow client is closed with 4100).
    let config = ServerConfig {
        client_queue: n as usize + 1_000,
        ..ServerConfig::default()
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = EmbeddedServer::start_with_config(listener, creds.clone(), config).unwrap();
    let addr = server.local_addr();
    let mut client = wsclient::WsClient::connect(addr, &creds.key).await;
    let auth = channel_auth(
        &creds.key,
        creds.secret.expose(),
        &client.socket_id,
        CHANNEL,
    );
    client.subscribe(CHANNEL, Some(&auth)).await;
    assert_eq!(
        client.event().await.event,
        "pusher_internal:subscription_succeeded"
    );
    let mut rx = spawn_receiver(client);

    let in_process = server.publisher();
    let mut http_config = HttpPublisherConfig::new(creds.clone(), "127.0.0.1", addr.port(), false);
    http_config.queue_capacity = n as usize + 10;
    let http = HttpPublisher::new(http_config).unwrap();

    println!(
        "events of {chunk_bytes}-byte chunks, one subscriber, loopback, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "| path        | mode                      | events |  events/s | median µs |    p99 µs |"
    );
    println!(
        "|-------------|---------------------------|-------:|----------:|----------:|----------:|"
    );
    let mut seq = 0;
    // Warm up both paths (connections, allocations).
    let _ = latency(&in_process, &mut rx, seq, 100, &chunk).await;
    seq += 100;
    let _ = latency(&http, &mut rx, seq, 100, &chunk).await;
    seq += 100;

    let s = throughput(&in_process, &mut rx, seq, n, &chunk).await;
    row("in-process", "throughput (back to back)", n, &s);
    seq += n;
    let s = latency(&in_process, &mut rx, seq, latency_n, &chunk).await;
    row("in-process", "latency (one at a time)", latency_n, &s);
    seq += latency_n;
    let s = throughput(&http, &mut rx, seq, n, &chunk).await;
    row("HTTP API", "throughput (back to back)", n, &s);
    seq += n;
    let s = latency(&http, &mut rx, seq, latency_n, &chunk).await;
    row("HTTP API", "latency (one at a time)", latency_n, &s);
    http.flush().await;
    let st = http.stats();
    println!(
        "HttpPublisher: {} events in {} requests ({:.1} events/request), {} failed",
        st.published,
        st.requests,
        st.published as f64 / st.requests.max(1) as f64,
        st.failed
    );
    server.shutdown().await;
}
