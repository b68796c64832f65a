//! A minimal Pusher protocol client over tokio-tungstenite, for the tests.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{connect_async, MaybeTlsStream, WebSocketStream};

pub struct WsClient {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    pub socket_id: String,
    pub activity_timeout: u64,
}

/// A frame from the server, `data` decoded when it is a JSON string.
#[derive(Debug, Clone)]
pub struct Frame {
    pub event: String,
    pub channel: Option<String>,
    pub data: Value,
}

pub enum Next {
    Frame(Frame),
    Closed(Option<u16>),
}

fn decode(text: &str) -> Frame {
    let v: Value = serde_json::from_str(text).expect("server sends JSON");
    let data = match &v["data"] {
        Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        other => other.clone(),
    };
    Frame {
        event: v["event"].as_str().unwrap_or_default().to_owned(),
        channel: v["channel"].as_str().map(str::to_owned),
        data,
    }
}

impl WsClient {
    /// Connects with a raw URL; returns the first frame or the close code.
    pub async fn raw(url: &str) -> (WebSocketStream<MaybeTlsStream<TcpStream>>, Next) {
        let (mut ws, _) = connect_async(url).await.expect("websocket connects");
        let next = next_of(&mut ws).await;
        (ws, next)
    }

    pub async fn connect(addr: std::net::SocketAddr, key: &str) -> Self {
        let url = format!("ws://{addr}/app/{key}?protocol=7&client=rust-test&version=0.1");
        let (ws, next) = Self::raw(&url).await;
        let Next::Frame(frame) = next else {
            panic!("closed during handshake")
        };
        assert_eq!(frame.event, "pusher:connection_established");
        Self {
            ws,
            socket_id: frame.data["socket_id"].as_str().unwrap().to_owned(),
            activity_timeout: frame.data["activity_timeout"].as_u64().unwrap(),
        }
    }

    pub async fn send(&mut self, event: &str, data: Value) {
        self.ws
            .send(Message::Text(
                json!({ "event": event, "data": data }).to_string().into(),
            ))
            .await
            .unwrap();
    }

    pub async fn subscribe(&mut self, channel: &str, auth: Option<&str>) {
        let mut data = json!({ "channel": channel });
        if let Some(auth) = auth {
            data["auth"] = json!(auth);
        }
        self.send("pusher:subscribe", data).await;
    }

    pub async fn next(&mut self) -> Next {
        next_of(&mut self.ws).await
    }

    pub async fn frame(&mut self) -> Frame {
        match self.next().await {
            Next::Frame(f) => f,
            Next::Closed(code) => panic!("connection closed ({code:?}) while a frame was expected"),
        }
    }

    /// The next frame that is not a ping.
    pub async fn event(&mut self) -> Frame {
        loop {
            let f = self.frame().await;
            if f.event != "pusher:ping" {
                return f;
            }
        }
    }
}

async fn next_of(ws: &mut WebSocketStream<MaybeTlsStream<TcpStream>>) -> Next {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a frame within 20 s (a hang, not a timing check)");
        match msg {
            Some(Ok(Message::Text(t))) => return Next::Frame(decode(t.as_str())),
            Some(Ok(Message::Close(frame))) => {
                return Next::Closed(frame.map(|f| u16::from(f.code)))
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return Next::Closed(None),
        }
    }
}
