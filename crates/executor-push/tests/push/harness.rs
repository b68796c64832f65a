//! A stand-in for the Executor API around a push server, for the Node end-to-end test and the
//! `push_test_server` example: a channel-auth route shaped like `POST /v1/channel-auth` and a
//! route that makes the Rust [`HttpPublisher`] publish a numbered run of events.
//!
//! The push server is the [`EmbeddedServer`] (started here), or an external one (Sockudo) given
//! by host and port.

#![allow(dead_code)]

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use executor_push::{
    channel_auth, is_valid_socket_id, parse_channel_auth_request, AppCredentials, EmbeddedServer,
    HttpPublisher, HttpPublisherConfig, Publisher, PushEvent, CACHE_RUN_CHANNEL_PREFIX,
    RUN_CHANNEL_PREFIX,
};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::net::TcpListener;

pub const TOKEN: &str = "test-token";

pub fn test_credentials() -> AppCredentials {
    AppCredentials::new("executor-test", "executor-test-key", "executor-test-secret")
}

pub struct Harness {
    pub server: Option<EmbeddedServer>,
    pub api_addr: SocketAddr,
    pub push_host: String,
    pub push_port: u16,
    pub creds: AppCredentials,
    api_task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct ApiState {
    creds: AppCredentials,
    publisher: HttpPublisher,
}

impl Harness {
    /// Starts the embedded server on port 0 and the stand-in API on port 0.
    pub async fn embedded() -> Self {
        let creds = test_credentials();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = EmbeddedServer::start(listener, creds.clone()).unwrap();
        let port = server.local_addr().port();
        Self::around(Some(server), "127.0.0.1".into(), port, creds).await
    }

    /// The stand-in API around an external push server.
    pub async fn external(host: String, port: u16, creds: AppCredentials) -> Self {
        Self::around(None, host, port, creds).await
    }

    async fn around(
        server: Option<EmbeddedServer>,
        host: String,
        port: u16,
        creds: AppCredentials,
    ) -> Self {
        let publisher = HttpPublisher::new(HttpPublisherConfig::new(
            creds.clone(),
            host.clone(),
            port,
            false,
        ))
        .unwrap();
        let state = ApiState {
            creds: creds.clone(),
            publisher,
        };
        let app = Router::new()
            .route("/v1/channel-auth", post(auth_route))
            .route("/test/publish", post(publish_route))
            .with_state(state);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api_addr = listener.local_addr().unwrap();
        let api_task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            server,
            api_addr,
            push_host: host,
            push_port: port,
            creds,
            api_task,
        }
    }

    /// What the Node script reads from its environment.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("MODE", "harness".into()),
            ("EXECUTOR_API_URL", format!("http://{}", self.api_addr)),
            ("EXECUTOR_API_TOKEN", TOKEN.into()),
            ("PUSHER_HOST", self.push_host.clone()),
            ("PUSHER_PORT", self.push_port.to_string()),
            ("PUSHER_TLS", "false".into()),
            ("PUSHER_APP_ID", self.creds.app_id.clone()),
            ("PUSHER_KEY", self.creds.key.clone()),
            ("PUSHER_SECRET", self.creds.secret.expose().to_owned()),
        ]
    }

    pub fn env_json(&self) -> Value {
        Value::Object(
            self.env()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), Value::String(v)))
                .collect(),
        )
    }

    pub async fn stop(self) {
        self.api_task.abort();
        if let Some(server) = self.server {
            server.shutdown().await;
        }
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// Like the API's route: Bearer token, JSON or form body, the spec's 400/403 texts. It also
/// signs `private-cache-run-*` (the late-join cache channel) and, to test a refusal by the
/// push server itself, returns a wrong signature for channels ending in `-forged`.
async fn auth_route(
    axum::extract::State(state): axum::extract::State<ApiState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    if bearer != Some(&format!("Bearer {TOKEN}")) {
        return error(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok());
    let req = match parse_channel_auth_request(content_type, &body) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let (Some(socket_id), Some(channel)) = (req.socket_id.clone(), req.channel_name.clone()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "Missing required fields: socket_id, channel_name",
        );
    };
    if channel.starts_with(CACHE_RUN_CHANNEL_PREFIX) && is_valid_socket_id(&socket_id) {
        let auth = channel_auth(
            &state.creds.key,
            state.creds.secret.expose(),
            &socket_id,
            &channel,
        );
        return Json(json!({ "auth": auth })).into_response();
    }
    if channel.starts_with(RUN_CHANNEL_PREFIX) && channel.ends_with("-forged") {
        let auth = channel_auth(&state.creds.key, "not-the-secret", &socket_id, &channel);
        return Json(json!({ "auth": auth })).into_response();
    }
    match executor_push::authorize_run_channel(&state.creds, &req) {
        Ok(auth) => Json(json!({ "auth": auth })).into_response(),
        Err(e) if e.is_forbidden() => error(StatusCode::FORBIDDEN, &e.to_string()),
        Err(e) => error(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

#[derive(Deserialize)]
struct PublishRequest {
    channel: String,
    count: usize,
    #[serde(default)]
    first_seq: usize,
    /// Size of each chunk in characters (multi-byte and escaped characters included).
    #[serde(default)]
    chunk_chars: usize,
}

/// Publishes `count` `stdout` events `{chunk, seq}` through the Rust HttpPublisher and
/// returns once they were sent, with the publisher's counters.
async fn publish_route(
    axum::extract::State(state): axum::extract::State<ApiState>,
    Json(req): Json<PublishRequest>,
) -> Response {
    let unit = "é\"\\\n€x";
    let chunk: String = unit.chars().cycle().take(req.chunk_chars.max(1)).collect();
    for seq in req.first_seq..req.first_seq + req.count {
        let event = PushEvent::new(
            req.channel.clone(),
            "stdout",
            json!({ "chunk": chunk, "seq": seq }),
        );
        if let Err(e) = state.publisher.publish(vec![event]).await {
            return error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string());
        }
    }
    state.publisher.flush().await;
    Json(json!({ "stats": state.publisher.stats() })).into_response()
}
