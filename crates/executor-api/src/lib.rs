//! The HTTP API of Executor (`spec/http-interface.md`): a stateless axum router over the
//! broker. It validates and enqueues jobs, records start flags and input, answers status and
//! output reads, signs blob uploads (through a [`BlobService`]) and channel auth. It never runs
//! code; any number of replicas can serve the same Redis.

mod error;
mod handlers;
mod openapi;

use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use executor_broker::jobs::JobStore;
use executor_languages::Registry;
use executor_types::{BlobCheckResponse, BlobFinalizeResponse, Limits, SchemaValidator};
use futures::FutureExt;
use subtle::ConstantTimeEq;

pub use error::ApiError;
pub use openapi::openapi_document;

/// A secret that never prints.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(****)")
    }
}

/// The API's configuration (the binary fills it from flags and environment).
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// `EXECUTOR_API_TOKEN`: the bearer token of every `/v1/*` route.
    pub token: Secret,
    /// `MAX_FILES_BYTES`: sum of decoded file sizes per job (413 above).
    pub max_files_bytes: u64,
    /// `MAX_QUEUE_DEPTH`: 429 when the queue holds this many jobs.
    pub max_queue_depth: u64,
    /// `ENABLE_CHANNEL_AUTH`: registers `POST /v1/channel-auth`.
    pub enable_channel_auth: bool,
    /// The largest limits a request may ask for.
    pub max_limits: Limits,
    /// Stdin frames per second per job (spec: 30).
    pub stdin_frames_per_sec: u64,
    /// Stdin bytes accepted and not yet written to the program (spec: 64 KiB).
    pub stdin_pending_cap: u64,
    /// How long a collected RunResult is kept (jobs killed while queued).
    pub output_ttl: std::time::Duration,
}

impl ApiConfig {
    pub fn new(token: Secret) -> Self {
        Self {
            token,
            max_files_bytes: 8 * 1024 * 1024,
            max_queue_depth: 1000,
            enable_channel_auth: false,
            max_limits: executor_types::limits::builtin_maxima(),
            stdin_frames_per_sec: 30,
            stdin_pending_cap: 64 * 1024,
            output_ttl: executor_types::keys::OUTPUT_TTL,
        }
    }
}

/// The blob routes' backend (the S3 signer); absent when no store is configured (501).
#[async_trait]
pub trait BlobService: Send + Sync {
    async fn check(&self, hashes: Vec<String>) -> anyhow::Result<BlobCheckResponse>;
    async fn finalize(&self, hashes: Vec<String>) -> anyhow::Result<BlobFinalizeResponse>;
}

/// Where the API publishes the `stage{queued}` event of the start call.
#[async_trait]
pub trait EventSink: Send + Sync {
    async fn publish(&self, channel: &str, event: &str, data: serde_json::Value);
}

/// Signs `socket_id:channel_name` into Pusher's `<key>:<hex hmac>`.
pub type ChannelSigner = Arc<dyn Fn(&str, &str) -> String + Send + Sync>;

/// Everything a handler needs.
pub struct AppState {
    pub config: ApiConfig,
    pub jobs: JobStore,
    pub languages: Arc<Registry>,
    pub validator: Arc<SchemaValidator>,
    pub blobs: Option<Arc<dyn BlobService>>,
    pub events: Option<Arc<dyn EventSink>>,
    pub signer: Option<ChannelSigner>,
}

/// Builds the whole router.
pub fn router(state: Arc<AppState>) -> Router {
    let max_body = (state.config.max_files_bytes * 4 / 3 + 1024 * 1024) as usize;
    let mut v1 = Router::new()
        .route("/execute", post(handlers::execute))
        .route("/jobs/{id}", get(handlers::job_status))
        .route("/jobs/{id}/status", get(handlers::job_status))
        .route("/jobs/{id}/start", post(handlers::start))
        .route("/jobs/{id}/stdin", post(handlers::stdin))
        .route("/jobs/{id}/stdin/close", post(handlers::stdin_close))
        .route("/jobs/{id}/kill", post(handlers::kill))
        .route("/jobs/{id}/output", get(handlers::output))
        .route("/languages", get(handlers::languages))
        .route("/blobs/check", post(handlers::blob_check))
        .route("/blobs/finalize", post(handlers::blob_finalize));
    if state.config.enable_channel_auth {
        v1 = v1.route("/channel-auth", post(handlers::channel_auth));
    }
    let v1 = v1.method_not_allowed_fallback(method_not_allowed).layer(
        axum::middleware::from_fn_with_state(state.clone(), require_token),
    );
    Router::new()
        .route("/health", get(handlers::health))
        .route("/openapi.json", get(handlers::openapi))
        .route("/schema.json", get(handlers::schema))
        .nest("/v1", v1)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn(catch_panic))
        .with_state(state)
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route for {} {}",
        req.method(),
        req.uri().path()
    ))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "method {} is not allowed on {}",
            req.method(),
            req.uri().path()
        ),
    )
}

/// Bearer auth on `/v1/*`, compared in constant time.
async fn require_token(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let given = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let expected = state.config.token.expose().as_bytes();
    let ok: bool = given.as_bytes().ct_eq(expected).into();
    if !ok || expected.is_empty() {
        return (
            StatusCode::UNAUTHORIZED,
            Json(serde_json::json!({"error": "unauthorized"})),
        )
            .into_response();
    }
    next.run(req).await
}

/// A handler that panics answers a JSON 500 instead of dropping the connection.
async fn catch_panic(req: Request, next: Next) -> Response {
    match std::panic::AssertUnwindSafe(next.run(req))
        .catch_unwind()
        .await
    {
        Ok(r) => r,
        Err(_) => {
            tracing::error!("handler panicked");
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
        }
    }
}
