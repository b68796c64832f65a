//! A minimal Pusher protocol client (the streaming path a browser uses), over tokio-tungstenite.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{connect_async, MaybeTlsStream, WebSocketStream};

use crate::server::{Server, APP_KEY};

pub struct Subscription {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

/// An event on the job's channel, `data` decoded (Pusher sends it as a JSON string).
#[derive(Debug)]
pub struct Event {
    pub name: String,
    pub data: Value,
}

impl Subscription {
    /// Connects, authorizes `channel` through `POST /v1/channel-auth` and subscribes; returns
    /// once the server confirmed the subscription.
    pub async fn open(s: &Server, channel: &str) -> Result<Self, String> {
        let url = format!("ws://127.0.0.1:{}/app/{APP_KEY}?protocol=7", s.push_port);
        let (ws, _) = connect_async(url.as_str())
            .await
            .map_err(|e| format!("websocket connect: {e}"))?;
        let mut sub = Subscription { ws };
        let hello = sub.next().await?;
        if hello.name != "pusher:connection_established" {
            return Err(format!("expected connection_established, got {hello:?}"));
        }
        let socket_id = hello.data["socket_id"].as_str().unwrap_or_default();
        let (st, auth) = s
            .post(
                "/v1/channel-auth",
                json!({"socket_id": socket_id, "channel_name": channel}),
            )
            .await;
        if st != 200 {
            return Err(format!("channel-auth answered {st}: {auth}"));
        }
        let frame = json!({"event": "pusher:subscribe",
            "data": {"channel": channel, "auth": auth["auth"]}});
        sub.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .map_err(|e| format!("subscribe: {e}"))?;
        loop {
            let e = sub.next().await?;
            match e.name.as_str() {
                "pusher_internal:subscription_succeeded" => return Ok(sub),
                "pusher:error" => return Err(format!("subscription refused: {:?}", e.data)),
                _ => {}
            }
        }
    }

    /// The next event (pings skipped). The timeout only turns a hang into a failure.
    pub async fn next(&mut self) -> Result<Event, String> {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(60), self.ws.next())
                .await
                .map_err(|_| "no push event within 60 s (a hang)".to_string())?;
            let text = match msg {
                Some(Ok(Message::Text(t))) => t,
                Some(Ok(Message::Close(_))) | None => return Err("push connection closed".into()),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("push connection: {e}")),
            };
            let v: Value = serde_json::from_str(text.as_str()).map_err(|e| e.to_string())?;
            let data = match &v["data"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
                other => other.clone(),
            };
            let name = v["event"].as_str().unwrap_or_default().to_owned();
            if name == "pusher:ping" {
                let pong = json!({"event": "pusher:pong", "data": {}}).to_string();
                let _ = self.ws.send(Message::Text(pong.into())).await;
                continue;
            }
            return Ok(Event { name, data });
        }
    }
}
