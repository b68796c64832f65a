//! HttpPublisher against the embedded server's HTTP API, and against a server that is down.

use std::time::Duration;

use executor_push::{
    channel_auth, AppCredentials, EmbeddedServer, HttpPublisher, HttpPublisherConfig, Publisher,
    PushError, PushEvent,
};
use serde_json::json;
use tokio::net::TcpListener;

use crate::harness::test_credentials;
use crate::wsclient::WsClient;

fn config(creds: AppCredentials, port: u16) -> HttpPublisherConfig {
    let mut c = HttpPublisherConfig::new(creds, "127.0.0.1", port, false);
    c.backoff_base = Duration::from_millis(5);
    c.backoff_max = Duration::from_millis(20);
    c
}

/// A port with nothing listening on it.
async fn dead_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn http_publisher_keeps_per_channel_order() {
    let creds = test_credentials();
    let server = EmbeddedServer::start(
        TcpListener::bind("127.0.0.1:0").await.unwrap(),
        creds.clone(),
    )
    .unwrap();
    let mut client = WsClient::connect(server.local_addr(), &creds.key).await;
    let channels = [
        "private-run-a",
        "private-run-b",
        "private-run-c",
        "private-cache-run-c",
    ];
    for ch in channels {
        let a = channel_auth(&creds.key, creds.secret.expose(), &client.socket_id, ch);
        client.subscribe(ch, Some(&a)).await;
        let first = client.event().await.event;
        assert_eq!(first, "pusher_internal:subscription_succeeded");
        if ch.contains("cache") {
            assert_eq!(client.event().await.event, "pusher:cache_miss");
        }
    }
    let publisher = HttpPublisher::new(config(creds.clone(), server.local_addr().port())).unwrap();
    let per_channel = 200;
    for seq in 0..per_channel {
        // Interleaved channels, several publish calls, as a worker running three jobs would.
        let events = channels[..3]
            .iter()
            .map(|ch| PushEvent::new(*ch, "stdout", json!({ "chunk": "é\"\n", "seq": seq })))
            .collect();
        publisher.publish(events).await.unwrap();
    }
    publisher
        .publish(vec![
            PushEvent::new("private-run-c", "result", json!({ "exitCode": 0 })),
            PushEvent::new("private-cache-run-c", "result", json!({ "exitCode": 0 })),
        ])
        .await
        .unwrap();
    publisher.flush().await;
    let stats = publisher.stats();
    assert_eq!(stats.published, 3 * per_channel + 2);
    assert_eq!((stats.failed, stats.dropped), (0, 0));

    let mut next = std::collections::HashMap::new();
    let mut results = 0;
    while results < 2 || next.values().any(|n| *n < per_channel) {
        let f = client.event().await;
        let ch = f.channel.clone().unwrap();
        if f.event == "result" {
            results += 1;
            if ch == "private-run-c" {
                assert_eq!(
                    next.get(&ch),
                    Some(&per_channel),
                    "result must come after all output"
                );
            }
            continue;
        }
        let n = next.entry(ch).or_insert(0);
        assert_eq!(f.data["seq"], *n);
        assert_eq!(f.data["chunk"], "é\"\n");
        *n += 1;
    }
    server.shutdown().await;
}

#[tokio::test]
async fn down_server_never_blocks_and_is_counted() {
    let mut c = config(test_credentials(), dead_port().await);
    c.retries = 2;
    let publisher = HttpPublisher::new(c).unwrap();
    let events: Vec<PushEvent> = (0..25)
        .map(|seq| PushEvent::new("private-run-a", "stdout", json!({ "seq": seq })))
        .collect();
    // publish only enqueues: it returns Ok although nothing can be delivered.
    publisher.publish(events).await.unwrap();
    publisher.flush().await;
    let stats = publisher.stats();
    assert_eq!((stats.published, stats.failed), (0, 25));
    assert!(stats.retried >= 2, "{stats:?}");
}

#[tokio::test]
async fn full_queue_drops_and_counts_instead_of_blocking() {
    let mut c = config(test_credentials(), dead_port().await);
    c.queue_capacity = 5;
    c.lanes = 1;
    c.retries = 0;
    let publisher = HttpPublisher::new(c).unwrap();
    let events: Vec<PushEvent> = (0..100)
        .map(|seq| PushEvent::new("private-run-a", "stdout", json!({ "seq": seq })))
        .collect();
    let err = publisher.publish(events).await.unwrap_err();
    assert!(matches!(err, PushError::QueueFull(n) if n > 0), "{err}");
    publisher.flush().await;
    let stats = publisher.stats();
    assert!(stats.dropped > 0);
    assert_eq!(stats.dropped + stats.failed, 100);
}

#[tokio::test]
async fn refused_signature_is_not_retried_and_oversize_is_refused() {
    let creds = test_credentials();
    let server = EmbeddedServer::start(
        TcpListener::bind("127.0.0.1:0").await.unwrap(),
        creds.clone(),
    )
    .unwrap();
    let wrong = AppCredentials::new(creds.app_id.clone(), creds.key.clone(), "wrong-secret");
    let publisher = HttpPublisher::new(config(wrong, server.local_addr().port())).unwrap();
    publisher
        .publish(vec![PushEvent::new(
            "private-run-a",
            "stdout",
            json!({ "seq": 0 }),
        )])
        .await
        .unwrap();
    publisher.flush().await;
    let stats = publisher.stats();
    assert_eq!((stats.failed, stats.retried, stats.requests), (1, 0, 1));

    let publisher = HttpPublisher::new(config(creds, server.local_addr().port())).unwrap();
    let big = PushEvent::new(
        "private-run-a",
        "stdout",
        json!({ "chunk": "x".repeat(20_000), "seq": 0 }),
    );
    let ok = PushEvent::new("private-run-a", "stdout", json!({ "seq": 1 }));
    let err = publisher.publish(vec![big, ok]).await.unwrap_err();
    assert!(matches!(err, PushError::EventTooLarge { .. }), "{err}");
    publisher.flush().await;
    let stats = publisher.stats();
    assert_eq!((stats.oversize, stats.published), (1, 1));
    server.shutdown().await;
}
