//! One WebSocket connection speaking Pusher protocol 7.
//!
//! Handshake `pusher:connection_established`, then client messages: `pusher:subscribe`
//! (signature checked for `private-*`), `pusher:unsubscribe`, `pusher:ping`/`pusher:pong`;
//! `client-*` events are refused with `pusher:error`. A refused subscription gets both
//! `pusher:subscription_error` on the channel (what Soketi sends and what pusher-js emits for
//! a failed authorization, so one handler covers both) and `pusher:error` code 4009 (what
//! Sockudo sends). Close codes: 4001 unknown app key, 4007 unsupported protocol, 4008 no
//! protocol, 4100 over capacity (slow consumer), 4200 server shutting down, 4201 pong not
//! received.

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};
use tokio::time::{sleep_until, Instant};

use super::hub::{channel_frame, is_cache_channel, Subscriber};
use super::AppState;
use crate::auth::is_valid_channel_name;
use crate::sign::verify_channel_auth;

/// Protocol versions accepted in `?protocol=`.
const PROTOCOLS: std::ops::RangeInclusive<u32> = 5..=7;

#[derive(Deserialize)]
struct ClientMessage {
    event: String,
    #[serde(default)]
    data: Value,
}

/// `data` may be an object or (some clients) a JSON string of one.
fn data_object(data: Value) -> Value {
    match data {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::Null),
        other => other,
    }
}

fn event_frame(event: &str, data: &Value) -> Utf8Bytes {
    Utf8Bytes::from(json!({ "event": event, "data": data.to_string() }).to_string())
}

fn error_frame(code: Option<u16>, message: &str) -> Utf8Bytes {
    Utf8Bytes::from(
        json!({ "event": "pusher:error", "data": { "code": code, "message": message } })
            .to_string(),
    )
}

async fn close(socket: &mut WebSocket, code: u16, reason: &'static str) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        })))
        .await;
}

/// Refuses the connection during the handshake: `pusher:error` then a close with `code`.
async fn refuse(mut socket: WebSocket, code: u16, reason: &'static str) {
    let _ = socket
        .send(Message::Text(error_frame(Some(code), reason)))
        .await;
    close(&mut socket, code, reason).await;
}

pub(crate) async fn serve_connection(
    socket: WebSocket,
    state: Arc<AppState>,
    key: String,
    protocol: Option<String>,
) {
    let _guard = state.conn_guard.clone();
    match protocol.as_deref().map(str::parse::<u32>) {
        None => return refuse(socket, 4008, "No protocol version supplied").await,
        Some(Ok(p)) if PROTOCOLS.contains(&p) => {}
        Some(_) => return refuse(socket, 4007, "Unsupported protocol version").await,
    }
    if key != state.creds.key {
        return refuse(socket, 4001, "App key not known to this server").await;
    }
    let conn = state.hub.next_conn_id();
    let socket_id: Arc<str> = format!("{}.{}", state.socket_prefix, conn).into();
    let (tx, rx) = mpsc::channel(state.config.client_queue.max(1));
    let overflow = Arc::new(Notify::new());
    let sub = Subscriber {
        socket_id: socket_id.clone(),
        tx,
        overflow: overflow.clone(),
    };
    let mut c = Connection {
        socket,
        state,
        conn,
        sub,
        channels: HashSet::new(),
    };
    c.run(rx, overflow).await;
    for channel in &c.channels {
        c.state.hub.unsubscribe(channel, conn);
    }
}

struct Connection {
    socket: WebSocket,
    state: Arc<AppState>,
    conn: u64,
    sub: Subscriber,
    channels: HashSet<String>,
}

impl Connection {
    async fn send(&mut self, frame: Utf8Bytes) -> bool {
        self.socket.send(Message::Text(frame)).await.is_ok()
    }

    async fn run(&mut self, mut rx: mpsc::Receiver<Utf8Bytes>, overflow: Arc<Notify>) {
        let activity = self.state.config.activity_timeout;
        let established = json!({
            "socket_id": &*self.sub.socket_id,
            "activity_timeout": activity.as_secs().max(1),
        });
        if !self
            .send(event_frame("pusher:connection_established", &established))
            .await
        {
            return;
        }
        let mut shutdown = self.state.shutdown.clone();
        let mut idle_deadline = Instant::now() + activity;
        let mut pong_deadline: Option<Instant> = None;
        loop {
            let deadline = pong_deadline.unwrap_or(idle_deadline);
            tokio::select! {
                _ = shutdown.changed() => {
                    close(&mut self.socket, 4200, "Server shutting down").await;
                    return;
                }
                _ = overflow.notified() => {
                    tracing::warn!(socket_id = %self.sub.socket_id, "push client too slow, closing (4100)");
                    close(&mut self.socket, 4100, "Over capacity").await;
                    return;
                }
                frame = rx.recv() => {
                    let Some(frame) = frame else { return };
                    if !self.send(frame).await {
                        return;
                    }
                }
                _ = sleep_until(deadline) => {
                    if pong_deadline.is_some() {
                        close(&mut self.socket, 4201, "Pong reply not received").await;
                        return;
                    }
                    if !self.send(event_frame("pusher:ping", &json!({}))).await {
                        return;
                    }
                    pong_deadline = Some(Instant::now() + self.state.config.pong_timeout);
                }
                msg = self.socket.recv() => {
                    let text = match msg {
                        Some(Ok(Message::Text(text))) => text,
                        Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                        Some(Ok(_)) => {
                            idle_deadline = Instant::now() + activity;
                            pong_deadline = None;
                            continue;
                        }
                    };
                    idle_deadline = Instant::now() + activity;
                    pong_deadline = None;
                    if !self.handle(text.as_str()).await {
                        return;
                    }
                }
            }
        }
    }

    /// Handles one client message; false when the connection is gone.
    async fn handle(&mut self, text: &str) -> bool {
        let Ok(msg) = serde_json::from_str::<ClientMessage>(text) else {
            return self.send(error_frame(None, "Invalid JSON message")).await;
        };
        match msg.event.as_str() {
            "pusher:ping" => self.send(event_frame("pusher:pong", &json!({}))).await,
            "pusher:pong" => true,
            "pusher:subscribe" => self.subscribe(data_object(msg.data)).await,
            "pusher:unsubscribe" => {
                if let Some(channel) = data_object(msg.data).get("channel").and_then(Value::as_str)
                {
                    if self.channels.remove(channel) {
                        self.state.hub.unsubscribe(channel, self.conn);
                    }
                }
                true
            }
            e if e.starts_with("client-") => {
                self.send(error_frame(
                    None,
                    "Client events are not enabled on this server",
                ))
                .await
            }
            _ => true,
        }
    }

    async fn subscription_error(&mut self, channel: &str, message: &str, status: u16) -> bool {
        let data = json!({ "type": "AuthError", "error": message, "status": status });
        self.send(channel_frame(
            "pusher:subscription_error",
            channel,
            &data.to_string(),
        ))
        .await
            && self.send(error_frame(Some(4009), message)).await
    }

    async fn subscribe(&mut self, data: Value) -> bool {
        let channel = data
            .get("channel")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let auth = data.get("auth").and_then(Value::as_str).unwrap_or_default();
        if !is_valid_channel_name(&channel) {
            return self.send(error_frame(None, "Invalid channel name")).await;
        }
        if channel.starts_with("presence-") || channel.starts_with("private-encrypted-") {
            return self
                .subscription_error(
                    &channel,
                    "Presence and encrypted channels are not supported",
                    400,
                )
                .await;
        }
        if channel.starts_with("private-")
            && !verify_channel_auth(&self.state.creds, &self.sub.socket_id, &channel, auth)
        {
            tracing::debug!(socket_id = %self.sub.socket_id, %channel, "push subscription refused: bad signature");
            return self
                .subscription_error(
                    &channel,
                    "Invalid signature for this socket and channel",
                    401,
                )
                .await;
        }
        let cached = self
            .state
            .hub
            .subscribe(&channel, self.conn, self.sub.clone());
        self.channels.insert(channel.clone());
        if !self
            .send(channel_frame(
                "pusher_internal:subscription_succeeded",
                &channel,
                "{}",
            ))
            .await
        {
            return false;
        }
        if is_cache_channel(&channel) {
            let frame =
                cached.unwrap_or_else(|| channel_frame("pusher:cache_miss", &channel, "{}"));
            return self.send(frame).await;
        }
        true
    }
}
