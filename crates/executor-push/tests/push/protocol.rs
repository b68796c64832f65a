//! The embedded server's WebSocket protocol and HTTP events API, as clients rely on them.

use std::time::Duration;

use executor_push::{
    channel_auth, sign_request, AppCredentials, EmbeddedServer, Publisher, PushEvent, ServerConfig,
};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::harness::test_credentials;
use crate::wsclient::{Next, WsClient};

async fn server() -> (EmbeddedServer, AppCredentials) {
    let creds = test_credentials();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    (
        EmbeddedServer::start(listener, creds.clone()).unwrap(),
        creds,
    )
}

fn auth(creds: &AppCredentials, socket_id: &str, channel: &str) -> String {
    channel_auth(&creds.key, creds.secret.expose(), socket_id, channel)
}

async fn subscribed(client: &mut WsClient, creds: &AppCredentials, channel: &str) {
    let a = auth(creds, &client.socket_id, channel);
    client.subscribe(channel, Some(&a)).await;
    let f = client.event().await;
    assert_eq!(f.event, "pusher_internal:subscription_succeeded");
    assert_eq!(f.channel.as_deref(), Some(channel));
}

#[tokio::test]
async fn handshake_gives_socket_id_and_activity_timeout() {
    let (server, creds) = server().await;
    let client = WsClient::connect(server.local_addr(), &creds.key).await;
    assert!(
        executor_push::is_valid_socket_id(&client.socket_id),
        "{}",
        client.socket_id
    );
    assert_eq!(client.activity_timeout, 120);
    server.shutdown().await;
}

#[tokio::test]
async fn wrong_key_and_protocol_are_closed_with_pusher_codes() {
    let (server, _) = server().await;
    let addr = server.local_addr();
    for (url, code) in [
        (format!("ws://{addr}/app/nope?protocol=7"), 4001),
        (format!("ws://{addr}/app/executor-test-key"), 4008),
        (
            format!("ws://{addr}/app/executor-test-key?protocol=99"),
            4007,
        ),
    ] {
        let (mut ws, first) = WsClient::raw(&url).await;
        let Next::Frame(f) = first else {
            panic!("expected pusher:error first")
        };
        assert_eq!(f.event, "pusher:error");
        assert_eq!(f.data["code"], code);
        use futures::StreamExt;
        let close = ws.next().await.unwrap().unwrap();
        let tokio_tungstenite::tungstenite::Message::Close(Some(frame)) = close else {
            panic!("expected a close frame, got {close:?}")
        };
        assert_eq!(u16::from(frame.code), code, "{url}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn private_channel_needs_the_right_signature() {
    let (server, creds) = server().await;
    let mut client = WsClient::connect(server.local_addr(), &creds.key).await;
    // Signed for another socket: refused with subscription_error and pusher:error 4009.
    let wrong = auth(&creds, "1.1", "private-run-a");
    for a in [Some(wrong.as_str()), None] {
        client.subscribe("private-run-a", a).await;
        let f = client.event().await;
        assert_eq!(f.event, "pusher:subscription_error");
        assert_eq!(f.channel.as_deref(), Some("private-run-a"));
        assert_eq!(f.data["status"], 401);
        let f = client.event().await;
        assert_eq!(f.event, "pusher:error");
        assert_eq!(f.data["code"], 4009);
    }
    // Nothing is delivered on a refused channel.
    server
        .publisher()
        .publish(vec![PushEvent::new(
            "private-run-a",
            "stdout",
            json!({"seq": 0}),
        )])
        .await
        .unwrap();
    subscribed(&mut client, &creds, "private-run-a").await;
    server
        .publisher()
        .publish(vec![PushEvent::new(
            "private-run-a",
            "stdout",
            json!({"seq": 1}),
        )])
        .await
        .unwrap();
    assert_eq!(client.event().await.data["seq"], 1);
    server.shutdown().await;
}

#[tokio::test]
async fn events_arrive_in_order_and_unsubscribe_stops_them() {
    let (server, creds) = server().await;
    let publisher = server.publisher();
    let mut client = WsClient::connect(server.local_addr(), &creds.key).await;
    subscribed(&mut client, &creds, "private-run-a").await;
    subscribed(&mut client, &creds, "private-run-b").await;
    let events: Vec<PushEvent> = (0..500)
        .map(|seq| {
            PushEvent::new(
                "private-run-a",
                "stdout",
                json!({ "chunk": format!("{seq}\n"), "seq": seq }),
            )
        })
        .collect();
    publisher.publish(events).await.unwrap();
    for seq in 0..500 {
        let f = client.event().await;
        assert_eq!(
            (f.event.as_str(), f.channel.as_deref()),
            ("stdout", Some("private-run-a"))
        );
        assert_eq!(f.data["seq"], seq);
    }
    client
        .send("pusher:unsubscribe", json!({ "channel": "private-run-a" }))
        .await;
    client.send("pusher:ping", json!({})).await;
    assert_eq!(client.event().await.event, "pusher:pong");
    publisher
        .publish(vec![
            PushEvent::new("private-run-a", "stdout", json!({"seq": 500})),
            PushEvent::new("private-run-b", "result", json!({"exitCode": 0})),
        ])
        .await
        .unwrap();
    let f = client.event().await;
    assert_eq!(
        (f.event.as_str(), f.channel.as_deref()),
        ("result", Some("private-run-b"))
    );
    assert_eq!(publisher.stats().published, 502);
    server.shutdown().await;
}

#[tokio::test]
async fn cache_channel_replays_last_event_or_says_miss() {
    let (server, creds) = server().await;
    let publisher = server.publisher();
    publisher
        .publish(vec![
            PushEvent::new("private-cache-run-a", "result", json!({"exitCode": 1})),
            PushEvent::new("private-cache-run-a", "result", json!({"exitCode": 0})),
        ])
        .await
        .unwrap();
    let mut client = WsClient::connect(server.local_addr(), &creds.key).await;
    subscribed(&mut client, &creds, "private-cache-run-a").await;
    let f = client.event().await;
    assert_eq!(
        (f.event.as_str(), f.data["exitCode"].clone()),
        ("result", json!(0))
    );
    subscribed(&mut client, &creds, "private-cache-run-b").await;
    let f = client.event().await;
    assert_eq!(
        (f.event.as_str(), f.channel.as_deref()),
        ("pusher:cache_miss", Some("private-cache-run-b"))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn client_events_and_bad_messages_get_pusher_error() {
    let (server, creds) = server().await;
    let mut client = WsClient::connect(server.local_addr(), &creds.key).await;
    client.send("client-typing", json!({})).await;
    assert_eq!(client.event().await.event, "pusher:error");
    client.subscribe("presence-room", Some("x")).await;
    assert_eq!(client.event().await.event, "pusher:subscription_error");
    server.shutdown().await;
}

#[tokio::test]
async fn idle_client_is_pinged_then_closed_4201() {
    let creds = test_credentials();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ServerConfig {
        activity_timeout: Duration::from_secs(1),
        pong_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    };
    let server = EmbeddedServer::start_with_config(listener, creds.clone(), config).unwrap();
    let mut client = WsClient::connect(server.local_addr(), &creds.key).await;
    assert_eq!(client.activity_timeout, 1);
    assert_eq!(client.frame().await.event, "pusher:ping");
    client.send("pusher:pong", json!({})).await;
    assert_eq!(client.frame().await.event, "pusher:ping");
    assert!(matches!(client.next().await, Next::Closed(Some(4201))));
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_clients_with_4200() {
    let (server, creds) = server().await;
    let mut client = WsClient::connect(server.local_addr(), &creds.key).await;
    server.shutdown().await;
    assert!(matches!(client.next().await, Next::Closed(Some(4200))));
}

async fn post_signed(
    creds: &AppCredentials,
    addr: std::net::SocketAddr,
    path: &str,
    body: &Value,
) -> (u16, String) {
    let body = serde_json::to_vec(body).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let params = sign_request(creds, "POST", path, &body, now);
    let res = reqwest::Client::new()
        .post(format!("http://{addr}{path}"))
        .query(&params)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

#[tokio::test]
async fn http_api_checks_signature_size_and_batch() {
    let (server, creds) = server().await;
    let addr = server.local_addr();
    let mut client = WsClient::connect(addr, &creds.key).await;
    subscribed(&mut client, &creds, "private-run-a").await;
    let events = format!("/apps/{}/events", creds.app_id);
    let batch = format!("/apps/{}/batch_events", creds.app_id);

    let wrong = AppCredentials::new(creds.app_id.clone(), creds.key.clone(), "wrong");
    let one = json!({"name": "stdout", "channels": ["private-run-a"], "data": "{\"seq\":0}"});
    assert_eq!(post_signed(&wrong, addr, &events, &one).await.0, 401);
    assert_eq!(
        post_signed(&creds, addr, "/apps/other/events", &one)
            .await
            .0,
        404
    );
    let big = json!({"name": "stdout", "channel": "private-run-a", "data": "x".repeat(10_241)});
    assert_eq!(post_signed(&creds, addr, &events, &big).await.0, 413);
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({"name": "stdout", "channel": "private-run-a", "data": json!({"seq": i}).to_string()}))
        .collect();
    assert_eq!(
        post_signed(&creds, addr, &batch, &json!({ "batch": eleven }))
            .await
            .0,
        400
    );

    assert_eq!(
        post_signed(&creds, addr, &events, &one).await,
        (200, "{}".to_owned())
    );
    let ten = json!({ "batch": eleven[1..].to_vec() });
    assert_eq!(post_signed(&creds, addr, &batch, &ten).await.0, 200);
    // Excluding the sender's own socket, as Pusher does with socket_id.
    let excluded = json!({"name": "stdout", "channel": "private-run-a", "data": "{\"seq\":99}", "socket_id": client.socket_id});
    assert_eq!(post_signed(&creds, addr, &events, &excluded).await.0, 200);
    let last = json!({"name": "result", "channel": "private-run-a", "data": "{}"});
    assert_eq!(post_signed(&creds, addr, &events, &last).await.0, 200);
    for seq in 0..11 {
        assert_eq!(client.event().await.data["seq"], seq);
    }
    assert_eq!(client.event().await.event, "result");
    server.shutdown().await;
}
