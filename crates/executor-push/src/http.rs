//! The Pusher HTTP API publisher: what the worker uses against Sockudo, Soketi, hosted Pusher
//! or the embedded server's own HTTP API.
//!
//! `publish` only enqueues, so a slow or dead push server never holds up a job. Events go to
//! one of a few *lanes*, picked by the channel's ordering key (the name without its
//! `private-`/`cache-` prefixes, so `private-run-<id>` and `private-cache-run-<id>` share a
//! lane). Each lane is one task with at most one request in flight: it takes up to
//! `batch_size` queued events, sends them (`/events` for one, `/batch_events` for more),
//! retries a failed request with exponential backoff a bounded number of times, then moves on.
//! A job's events therefore never overtake each other. A lane's queue is bounded; when it is
//! full (the server has been down for a while) new events are dropped and counted.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use crate::chunk::DEFAULT_MAX_EVENT_BYTES;
use crate::sign::{sign_request, AppCredentials};
use crate::stats::{PushStats, PushStatsSnapshot};
use crate::{Publisher, PushError, PushEvent};

/// Configuration of an [`HttpPublisher`].
#[derive(Debug, Clone)]
pub struct HttpPublisherConfig {
    /// App id, key and secret of the push server's app.
    pub credentials: AppCredentials,
    /// Push server host name or address.
    pub host: String,
    /// Push server HTTP port.
    pub port: u16,
    /// Use `https`.
    pub tls: bool,
    /// Largest serialized `data` of one event; larger events are refused (default 10 000).
    pub max_event_bytes: usize,
    /// Events per request (Pusher allows 10 per batch).
    pub batch_size: usize,
    /// Largest request body a batch may grow to, in bytes (default 100 000).
    pub max_batch_bytes: usize,
    /// Re-sends of a failed request before its events are given up (default 3).
    pub retries: u32,
    /// First backoff; doubled at each retry (default 100 ms).
    pub backoff_base: Duration,
    /// Longest backoff, also the cap on a server's `Retry-After` (default 2 s).
    pub backoff_max: Duration,
    /// Timeout of one request (default 5 s).
    pub request_timeout: Duration,
    /// Queued events per lane before new ones are dropped (default 10 000).
    pub queue_capacity: usize,
    /// Independent ordering lanes, i.e. requests in flight at most (default 4).
    pub lanes: usize,
}

impl HttpPublisherConfig {
    /// Defaults for a server at `host:port`.
    pub fn new(credentials: AppCredentials, host: impl Into<String>, port: u16, tls: bool) -> Self {
        Self {
            credentials,
            host: host.into(),
            port,
            tls,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            batch_size: 10,
            max_batch_bytes: 100_000,
            retries: 3,
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_secs(2),
            request_timeout: Duration::from_secs(5),
            queue_capacity: 10_000,
            lanes: 4,
        }
    }

    /// `http(s)://host:port`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}:{}", self.host, self.port)
    }
}

/// An event ready for the wire: `data` already serialized.
struct WireEvent {
    channel: String,
    name: String,
    data: String,
}

enum LaneMsg {
    Event(WireEvent),
    Flush(oneshot::Sender<()>),
}

/// Publishes through a Pusher-compatible HTTP events API. Cheap to clone; clones share the
/// queues and counters. Must be created inside a Tokio runtime (it spawns its lane tasks),
/// which end once every clone is dropped and the queues are drained.
#[derive(Clone)]
pub struct HttpPublisher {
    lanes: Arc<Vec<mpsc::Sender<LaneMsg>>>,
    stats: Arc<PushStats>,
    max_event_bytes: usize,
}

impl std::fmt::Debug for HttpPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPublisher")
            .field("lanes", &self.lanes.len())
            .field("stats", &self.stats.snapshot())
            .finish()
    }
}

/// The key that decides a channel's lane: its name without Pusher's type prefixes.
fn ordering_key(channel: &str) -> &str {
    let mut key = channel;
    for prefix in ["private-encrypted-", "private-", "presence-", "cache-"] {
        key = key.strip_prefix(prefix).unwrap_or(key);
    }
    key
}

impl HttpPublisher {
    /// Starts the lane tasks.
    pub fn new(config: HttpPublisherConfig) -> Result<Self, PushError> {
        let client = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .build()
            .map_err(PushError::ClientBuild)?;
        let stats = Arc::new(PushStats::default());
        let sender = Arc::new(Sender {
            client,
            base_url: config.base_url(),
            config: config.clone(),
            stats: stats.clone(),
        });
        let lanes = (0..config.lanes.max(1))
            .map(|_| {
                let (tx, rx) = mpsc::channel(config.queue_capacity.max(1));
                tokio::spawn(run_lane(sender.clone(), rx));
                tx
            })
            .collect();
        Ok(Self {
            lanes: Arc::new(lanes),
            stats,
            max_event_bytes: config.max_event_bytes,
        })
    }

    /// The live counters.
    pub fn counters(&self) -> &Arc<PushStats> {
        &self.stats
    }

    fn lane_of(&self, channel: &str) -> &mpsc::Sender<LaneMsg> {
        let mut h = DefaultHasher::new();
        ordering_key(channel).hash(&mut h);
        &self.lanes[(h.finish() % self.lanes.len() as u64) as usize]
    }
}

#[async_trait]
impl Publisher for HttpPublisher {
    async fn publish(&self, events: Vec<PushEvent>) -> Result<(), PushError> {
        let mut first_err = None;
        let mut dropped = 0;
        for event in events {
            let data = event.data_string();
            if data.len() > self.max_event_bytes {
                PushStats::add(&self.stats.oversize, 1);
                tracing::warn!(channel = %event.channel, name = %event.name, bytes = data.len(), "push event over the size limit, not sent");
                first_err.get_or_insert(PushError::EventTooLarge {
                    channel: event.channel,
                    name: event.name,
                    bytes: data.len(),
                    max: self.max_event_bytes,
                });
                continue;
            }
            let lane = self.lane_of(&event.channel);
            let msg = LaneMsg::Event(WireEvent {
                channel: event.channel,
                name: event.name,
                data,
            });
            match lane.try_send(msg) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => dropped += 1,
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    first_err.get_or_insert(PushError::Closed);
                }
            }
        }
        if dropped > 0 {
            PushStats::add(&self.stats.dropped, dropped);
            tracing::warn!(dropped, "push queue full, events dropped");
            first_err.get_or_insert(PushError::QueueFull(dropped));
        }
        first_err.map_or(Ok(()), Err)
    }

    async fn flush(&self) {
        let mut waits = Vec::new();
        for lane in self.lanes.iter() {
            let (tx, rx) = oneshot::channel();
            if lane.send(LaneMsg::Flush(tx)).await.is_ok() {
                waits.push(rx);
            }
        }
        for rx in waits {
            let _ = rx.await;
        }
    }

    fn stats(&self) -> PushStatsSnapshot {
        self.stats.snapshot()
    }
}

/// What the lane tasks share: the client and the config.
struct Sender {
    client: reqwest::Client,
    base_url: String,
    config: HttpPublisherConfig,
    stats: Arc<PushStats>,
}

#[derive(Serialize)]
struct BatchItem<'a> {
    channel: &'a str,
    name: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
struct SingleBody<'a> {
    name: &'a str,
    channels: [&'a str; 1],
    data: &'a str,
}

#[derive(Serialize)]
struct BatchBody<'a> {
    batch: Vec<BatchItem<'a>>,
}

/// Rough size of an event inside a batch body (data is escaped once more on the wire).
fn wire_size(e: &WireEvent) -> usize {
    e.channel.len() + e.name.len() + e.data.len() + e.data.len() / 8 + 40
}

async fn run_lane(sender: Arc<Sender>, mut rx: mpsc::Receiver<LaneMsg>) {
    let mut carry: Option<WireEvent> = None;
    loop {
        let mut batch: Vec<WireEvent> = Vec::new();
        let mut flush = None;
        if let Some(e) = carry.take() {
            batch.push(e);
        } else {
            match rx.recv().await {
                None => return,
                Some(LaneMsg::Flush(ack)) => {
                    let _ = ack.send(());
                    continue;
                }
                Some(LaneMsg::Event(e)) => batch.push(e),
            }
        }
        let mut bytes = wire_size(&batch[0]);
        while batch.len() < sender.config.batch_size.max(1) {
            match rx.try_recv() {
                Ok(LaneMsg::Event(e)) => {
                    let size = wire_size(&e);
                    if bytes + size > sender.config.max_batch_bytes {
                        carry = Some(e);
                        break;
                    }
                    bytes += size;
                    batch.push(e);
                }
                Ok(LaneMsg::Flush(ack)) => {
                    flush = Some(ack);
                    break;
                }
                Err(_) => break,
            }
        }
        // Errors are counted and logged inside; the lane goes on with the next batch.
        let _ = sender.send_with_retries(&batch).await;
        if let Some(ack) = flush {
            let _ = ack.send(());
        }
    }
}

impl Sender {
    async fn send_with_retries(&self, batch: &[WireEvent]) -> Result<(), PushError> {
        let (path, body) = self.encode(batch);
        let mut attempt = 0;
        loop {
            PushStats::add(&self.stats.requests, 1);
            let (err, retry_after) = match self.send_once(&path, &body).await {
                Ok(()) => {
                    PushStats::add(&self.stats.published, batch.len());
                    return Ok(());
                }
                Err(e) => e,
            };
            let retryable = match &err {
                PushError::Request(_) => true,
                PushError::Status { status, .. } => {
                    *status >= 500 || *status == 429 || *status == 408
                }
                _ => false,
            };
            if !retryable || attempt >= self.config.retries {
                PushStats::add(&self.stats.failed, batch.len());
                tracing::warn!(
                    error = %err,
                    source = ?std::error::Error::source(&err),
                    events = batch.len(),
                    channel = %batch[0].channel,
                    attempts = attempt + 1,
                    "push publish failed, events given up"
                );
                return Err(err);
            }
            let backoff = self
                .config
                .backoff_base
                .saturating_mul(1 << attempt.min(16))
                .max(retry_after.unwrap_or_default())
                .min(self.config.backoff_max);
            tracing::debug!(error = %err, ?backoff, attempt, "push publish failed, retrying");
            PushStats::add(&self.stats.retried, 1);
            tokio::time::sleep(backoff).await;
            attempt += 1;
        }
    }

    fn encode(&self, batch: &[WireEvent]) -> (String, Vec<u8>) {
        let app = &self.config.credentials.app_id;
        // Serializing borrowed strings cannot fail.
        if let [e] = batch {
            let body = SingleBody {
                name: &e.name,
                channels: [&e.channel],
                data: &e.data,
            };
            (
                format!("/apps/{app}/events"),
                serde_json::to_vec(&body).unwrap_or_default(),
            )
        } else {
            let body = BatchBody {
                batch: batch
                    .iter()
                    .map(|e| BatchItem {
                        channel: &e.channel,
                        name: &e.name,
                        data: &e.data,
                    })
                    .collect(),
            };
            (
                format!("/apps/{app}/batch_events"),
                serde_json::to_vec(&body).unwrap_or_default(),
            )
        }
    }

    async fn send_once(
        &self,
        path: &str,
        body: &[u8],
    ) -> Result<(), (PushError, Option<Duration>)> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let params = sign_request(&self.config.credentials, "POST", path, body, now);
        let response = self
            .client
            .post(format!("{}{path}", self.base_url))
            .query(&params)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| (PushError::Request(e), None))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let mut text = response.text().await.unwrap_or_default();
        text.truncate(text.floor_char_boundary(300));
        Err((
            PushError::Status {
                status: status.as_u16(),
                body: text,
            },
            retry_after,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_channels_share_a_lane_key() {
        assert_eq!(ordering_key("private-run-abc"), "run-abc");
        assert_eq!(ordering_key("private-cache-run-abc"), "run-abc");
        assert_eq!(ordering_key("cache-run-abc"), "run-abc");
        assert_eq!(ordering_key("run-abc"), "run-abc");
    }
}
