//! Realtime push for Executor over the Pusher protocol.
//!
//! Why this crate exists: a job's output is streamed to clients as events on the channel
//! `private-run-<jobId>` of a Pusher-compatible push server. In production that server is
//! Sockudo, Soketi or hosted Pusher, reached through its signed HTTP events API; in the
//! one-command start (`executor serve`) it is the [`EmbeddedServer`] in this crate, which
//! speaks the same WebSocket protocol to clients and serves the same HTTP API, so one code
//! path is exercised against both. A push server that is down must never block or fail a
//! job: publishing is fire-and-forget behind a bounded queue, and failures are logged and
//! counted in [`PushStats`].
//!
//! # What it exposes
//!
//! - [`PushEvent`] `{ channel, name, data }`: `name` is `stage`, `stdout`, `stderr`,
//!   `compile_output`, `artifact` or `result`; `data` is a JSON value sent as a JSON string
//!   (Pusher's convention).
//! - [`Publisher`]: `async fn publish(&self, Vec<PushEvent>) -> Result<(), PushError>` keeps
//!   per-channel order and never waits on the network; `flush` waits for what is queued;
//!   `stats` reads the counters. Implementations:
//!   - [`HttpPublisher`]: the Pusher HTTP API client (`/apps/<id>/events` and
//!     `/batch_events`, signed), batching up to 10 events, bounded retries with exponential
//!     backoff, one in-flight request per ordering lane (a job's channels always share one
//!     lane, so its events never reorder), oversize events refused.
//!   - [`InProcessPublisher`] (from [`EmbeddedServer::publisher`]): straight to the embedded
//!     server's subscribers, for the one-command start.
//!   - [`MemoryPublisher`]: records events for tests (`events`, `subscribe`, `set_failing`).
//! - [`EmbeddedServer`]: `start(TcpListener, AppCredentials)` serves `ws /app/<key>` (protocol
//!   7: connection_established, subscribe with signature check for `private-*`, cache
//!   channels, ping/pong, unsubscribe, 4000–4299 close codes) and the signed
//!   `POST /apps/<id>/events` and `/batch_events`; `shutdown()` stops it gracefully.
//! - Signing: [`sign_channel`], [`channel_auth`] (`<key>:<hex hmac-sha256 of
//!   "socket_id:channel">`), [`sign_request`]/[`verify_request`] for the HTTP API, and
//!   [`authorize_run_channel`] with the spec's 400/403 texts for `POST /v1/channel-auth`.
//! - [`split_chunk`]: cut output into pieces whose event data stays under `max_event_bytes`
//!   after JSON escaping, on UTF-8 boundaries.
//!
//! # Late join
//!
//! Events published before a client subscribes are lost (Pusher semantics). A late client
//! reads the authoritative state from `GET /v1/jobs/:id/status`; to also get a finished job's
//! `result` event, the worker publishes `result` a second time on
//! `private-cache-run-<jobId>` ([`cache_run_channel`]): Pusher, Sockudo and the embedded
//! server replay a cache channel's last event to each new subscriber (or send
//! `pusher:cache_miss`).
//!
//! ```
//! use executor_push::{channel_auth, split_chunk, PushEvent, DEFAULT_MAX_EVENT_BYTES};
//! use serde_json::json;
//!
//! let auth = channel_auth("278d425bdf160c739803", "7ad3773142a6692b25b8", "1234.1234", "private-foobar");
//! assert_eq!(auth, "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4");
//!
//! let output = "x".repeat(25_000);
//! let events: Vec<PushEvent> = split_chunk(&output, DEFAULT_MAX_EVENT_BYTES)
//!     .into_iter()
//!     .enumerate()
//!     .map(|(seq, chunk)| PushEvent::new("private-run-42", "stdout", json!({ "chunk": chunk, "seq": seq })))
//!     .collect();
//! assert_eq!(events.len(), 3);
//! assert!(events.iter().all(|e| e.data_string().len() <= DEFAULT_MAX_EVENT_BYTES));
//! ```

mod auth;
mod chunk;
mod http;
mod memory;
mod server;
mod sign;
mod stats;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use auth::{
    authorize_run_channel, cache_run_channel, is_valid_channel_name, is_valid_socket_id,
    parse_channel_auth_request, run_channel, ChannelAuthError, ChannelAuthRequest,
    CACHE_RUN_CHANNEL_PREFIX, RUN_CHANNEL_PREFIX,
};
pub use chunk::{
    json_escaped_len, json_escaped_str_len, split_chunk, split_with_budget, CHUNK_EVENT_OVERHEAD,
    DEFAULT_MAX_EVENT_BYTES,
};
pub use http::{HttpPublisher, HttpPublisherConfig};
pub use memory::MemoryPublisher;
pub use server::{EmbeddedServer, InProcessPublisher, ServerConfig, ServerError};
pub use sign::{
    body_md5, channel_auth, hmac_sha256_hex, sign_channel, sign_request, string_to_sign,
    verify_channel_auth, verify_request, AppCredentials, RequestAuthError, Secret,
};
pub use stats::{PushStats, PushStatsSnapshot};

/// One event to push: `name` on `channel`, with `data` sent as its JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushEvent {
    /// The channel, e.g. `private-run-<jobId>`.
    pub channel: String,
    /// The event name: `stage`, `stdout`, `stderr`, `compile_output`, `artifact`, `result`.
    pub name: String,
    /// The payload; serialized to a JSON string on the wire.
    pub data: serde_json::Value,
}

impl PushEvent {
    /// An event from its parts.
    pub fn new(
        channel: impl Into<String>,
        name: impl Into<String>,
        data: serde_json::Value,
    ) -> Self {
        Self {
            channel: channel.into(),
            name: name.into(),
            data,
        }
    }

    /// The `data` field as sent on the wire: the JSON text of the payload.
    pub fn data_string(&self) -> String {
        // Serializing a `Value` cannot fail.
        serde_json::to_string(&self.data).unwrap_or_default()
    }
}

/// Why an event could not be published. Publishing failures are reported for logging and
/// counting; they must never fail the job.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The event's serialized data exceeds the configured limit (use [`split_chunk`]).
    #[error("event {name} on {channel} is {bytes} bytes, over the {max}-byte limit")]
    EventTooLarge {
        /// Channel of the refused event.
        channel: String,
        /// Name of the refused event.
        name: String,
        /// Serialized data size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The publisher's queue is full (the push server has been unreachable for a while);
    /// the events were dropped and counted.
    #[error("push queue full: {0} events dropped")]
    QueueFull(usize),
    /// The publisher or server was shut down.
    #[error("publisher closed")]
    Closed,
    /// The push server is unavailable (used by [`MemoryPublisher::set_failing`]).
    #[error("push server unavailable: {0}")]
    Unavailable(String),
    /// Sending the HTTP request failed (connection, timeout).
    #[error("request to push server failed")]
    Request(#[source] reqwest::Error),
    /// The push server answered with an error status.
    #[error("push server answered {status}: {body}")]
    Status {
        /// HTTP status code.
        status: u16,
        /// Response body (truncated).
        body: String,
    },
    /// Building the HTTP client failed.
    #[error("building the HTTP client failed")]
    ClientBuild(#[source] reqwest::Error),
}

/// Something that pushes events to subscribers.
///
/// Contract: `publish` returns without waiting on the network (it may enqueue), events of one
/// channel reach subscribers in the order they were passed to `publish`, and an error is for
/// logging only: the caller carries on with the job.
#[async_trait]
pub trait Publisher: Send + Sync {
    /// Publishes `events` in order.
    async fn publish(&self, events: Vec<PushEvent>) -> Result<(), PushError>;

    /// Waits until every event published before this call was sent or given up on.
    async fn flush(&self) {}

    /// The publisher's counters.
    fn stats(&self) -> PushStatsSnapshot;
}

#[async_trait]
impl<P: Publisher + ?Sized> Publisher for std::sync::Arc<P> {
    async fn publish(&self, events: Vec<PushEvent>) -> Result<(), PushError> {
        (**self).publish(events).await
    }

    async fn flush(&self) {
        (**self).flush().await
    }

    fn stats(&self) -> PushStatsSnapshot {
        (**self).stats()
    }
}
