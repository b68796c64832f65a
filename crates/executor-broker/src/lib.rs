//! The broker: the job queue, per-job records with expiry, sets, counters and pub/sub.
//!
//! One small trait, [`Broker`], with two implementations that keep the same semantics:
//! [`RedisBroker`] for deployments (any number of API and worker processes) and
//! [`MemoryBroker`] for the one-command start. The integration suite
//! (`tests/broker`) runs one contract against both, Redis real, so the embedded default cannot
//! drift. Key names are the spec's (`jobs:queue`, `job:<id>:status`, …, see
//! `executor_types::keys`); every key can carry a prefix so tests and tenants can share a Redis.

pub mod jobs;
mod memory;
mod redis_impl;

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

pub use memory::MemoryBroker;
pub use redis_impl::RedisBroker;

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("redis command failed: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("key {key} holds another type of value")]
    WrongType { key: String },
    #[error("broker is shutting down")]
    Closed,
}

pub type Result<T> = std::result::Result<T, BrokerError>;

/// A pub/sub message: the channel (without prefix) and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub channel: String,
    pub payload: String,
}

/// A live subscription. Dropping it unsubscribes. Messages published while the broker
/// connection was down are lost (pub/sub semantics); callers that must not lose anything keep
/// a durable log and use messages only as wake-ups, as the worker does.
pub struct Subscription {
    pub(crate) rx: mpsc::Receiver<Message>,
    pub(crate) _guard: Option<tokio::task::JoinHandle<()>>,
}

impl Subscription {
    /// The next message, or `None` once the broker is gone.
    pub async fn recv(&mut self) -> Option<Message> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(h) = &self._guard {
            h.abort();
        }
    }
}

/// Everything Executor needs from a broker. Values are strings (JSON documents).
#[async_trait]
pub trait Broker: Send + Sync + 'static {
    /// Sets a value, with an expiry when `ttl` is given.
    async fn set(&self, key: &str, value: &str, ttl: Option<Duration>) -> Result<()>;
    /// Sets only if absent; true when set.
    async fn set_nx(&self, key: &str, value: &str, ttl: Option<Duration>) -> Result<bool>;
    async fn get(&self, key: &str) -> Result<Option<String>>;
    async fn del(&self, key: &str) -> Result<()>;
    /// Sets an expiry on an existing key; false when the key does not exist.
    async fn expire(&self, key: &str, ttl: Duration) -> Result<bool>;
    /// Remaining time to live; `None` for a missing key or a key without expiry.
    async fn ttl(&self, key: &str) -> Result<Option<Duration>>;
    /// Adds `delta` to an integer (0 when absent) and returns the result; a new key gets `ttl`.
    async fn incr_by(&self, key: &str, delta: i64, ttl: Option<Duration>) -> Result<i64>;

    /// Appends to a list; returns its new length.
    async fn rpush(&self, key: &str, value: &str) -> Result<u64>;
    /// Appends only while the list is shorter than `max`; `None` when full (atomic).
    async fn rpush_bounded(&self, key: &str, value: &str, max: u64) -> Result<Option<u64>>;
    async fn llen(&self, key: &str) -> Result<u64>;
    /// Elements `start..=stop` (negative indexes count from the end, like Redis).
    async fn lrange(&self, key: &str, start: i64, stop: i64) -> Result<Vec<String>>;
    /// Keeps only elements `start..=stop` (negative indexes count from the end, like Redis).
    async fn ltrim(&self, key: &str, start: i64, stop: i64) -> Result<()>;
    /// Removes up to `count` occurrences of `value` (0: all); returns how many.
    async fn lrem(&self, key: &str, count: i64, value: &str) -> Result<u64>;
    /// Atomically moves the head of `src` to the tail of `dst`, waiting up to `timeout` for one.
    async fn blmove(&self, src: &str, dst: &str, timeout: Duration) -> Result<Option<String>>;
    /// Atomically moves one occurrence of `value` from list `src` to the head of `dst`.
    async fn lmove_value(&self, src: &str, dst: &str, value: &str) -> Result<bool>;

    async fn sadd(&self, key: &str, member: &str) -> Result<bool>;
    async fn srem(&self, key: &str, member: &str) -> Result<bool>;
    async fn smembers(&self, key: &str) -> Result<Vec<String>>;

    async fn publish(&self, channel: &str, payload: &str) -> Result<()>;
    /// Subscribes to the given channels.
    async fn subscribe(&self, channels: &[String]) -> Result<Subscription>;

    /// True when the broker answers (used by `/health`).
    async fn ping(&self) -> Result<()>;
}
