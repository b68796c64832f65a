//! Counters of what the publishers did, readable at any time for logs and metrics.
//!
//! A push failure never fails a job, so these counters (and the log) are where a broken push
//! path shows up.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Live counters (atomics), shared by a publisher and its background tasks.
#[derive(Debug, Default)]
pub struct PushStats {
    /// Events accepted by the push server (HTTP 2xx) or delivered in-process.
    pub published: AtomicU64,
    /// Events given up on after the retries, or refused by the server.
    pub failed: AtomicU64,
    /// Retry attempts (one per re-sent request).
    pub retried: AtomicU64,
    /// Events dropped because the publisher's queue was full (push server down for long).
    pub dropped: AtomicU64,
    /// Events refused before sending because their data exceeds `max_event_bytes`.
    pub oversize: AtomicU64,
    /// HTTP requests sent (first attempts and retries).
    pub requests: AtomicU64,
}

/// A point-in-time copy of [`PushStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PushStatsSnapshot {
    /// See [`PushStats::published`].
    pub published: u64,
    /// See [`PushStats::failed`].
    pub failed: u64,
    /// See [`PushStats::retried`].
    pub retried: u64,
    /// See [`PushStats::dropped`].
    pub dropped: u64,
    /// See [`PushStats::oversize`].
    pub oversize: u64,
    /// See [`PushStats::requests`].
    pub requests: u64,
}

impl PushStats {
    /// Reads all counters.
    pub fn snapshot(&self) -> PushStatsSnapshot {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        PushStatsSnapshot {
            published: r(&self.published),
            failed: r(&self.failed),
            retried: r(&self.retried),
            dropped: r(&self.dropped),
            oversize: r(&self.oversize),
            requests: r(&self.requests),
        }
    }

    pub(crate) fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }
}
