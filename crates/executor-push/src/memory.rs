//! A publisher that records events in memory, for tests of the code that publishes (the
//! worker's): read what was published, wait for it as it comes, or make publishing fail to
//! check that a broken push path does not break a job.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::stats::{PushStats, PushStatsSnapshot};
use crate::{Publisher, PushError, PushEvent};

#[derive(Default)]
struct Inner {
    events: Vec<PushEvent>,
    subscribers: HashMap<String, Vec<mpsc::UnboundedSender<PushEvent>>>,
}

/// Records every published event. Cheap to clone; clones share the record.
#[derive(Clone, Default)]
pub struct MemoryPublisher {
    inner: Arc<Mutex<Inner>>,
    failing: Arc<AtomicBool>,
    stats: Arc<PushStats>,
}

impl MemoryPublisher {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every event published so far, in publish order.
    pub fn all(&self) -> Vec<PushEvent> {
        self.lock().events.clone()
    }

    /// The events published so far on `channel`, in publish order.
    pub fn events(&self, channel: &str) -> Vec<PushEvent> {
        self.lock()
            .events
            .iter()
            .filter(|e| e.channel == channel)
            .cloned()
            .collect()
    }

    /// A receiver of `channel`'s events: first those already published, then each new one as
    /// it is published, so a test can await events without racing the publisher.
    pub fn subscribe(&self, channel: &str) -> mpsc::UnboundedReceiver<PushEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut inner = self.lock();
        for e in inner.events.iter().filter(|e| e.channel == channel) {
            let _ = tx.send(e.clone());
        }
        inner
            .subscribers
            .entry(channel.to_owned())
            .or_default()
            .push(tx);
        rx
    }

    /// While `failing` is true, `publish` records nothing and returns
    /// [`PushError::Unavailable`], as a push server that is down would.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// Forgets the recorded events (subscribers stay).
    pub fn clear(&self) {
        self.lock().events.clear();
    }
}

#[async_trait]
impl Publisher for MemoryPublisher {
    async fn publish(&self, events: Vec<PushEvent>) -> Result<(), PushError> {
        if self.failing.load(Ordering::SeqCst) {
            PushStats::add(&self.stats.failed, events.len());
            return Err(PushError::Unavailable(
                "memory publisher set to fail".into(),
            ));
        }
        let mut inner = self.lock();
        for e in events {
            if let Some(subs) = inner.subscribers.get_mut(&e.channel) {
                subs.retain(|tx| tx.send(e.clone()).is_ok());
            }
            inner.events.push(e);
            PushStats::add(&self.stats.published, 1);
        }
        Ok(())
    }

    fn stats(&self) -> PushStatsSnapshot {
        self.stats.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn records_and_streams() {
        let p = MemoryPublisher::new();
        p.publish(vec![PushEvent::new(
            "private-run-a",
            "stage",
            json!({"phase": "queued"}),
        )])
        .await
        .unwrap();
        let mut rx = p.subscribe("private-run-a");
        p.publish(vec![
            PushEvent::new("private-run-a", "stdout", json!({"chunk": "hi", "seq": 0})),
            PushEvent::new(
                "private-run-b",
                "stdout",
                json!({"chunk": "other", "seq": 0}),
            ),
        ])
        .await
        .unwrap();
        assert_eq!(rx.recv().await.unwrap().name, "stage");
        assert_eq!(rx.recv().await.unwrap().name, "stdout");
        assert_eq!(p.events("private-run-a").len(), 2);
        assert_eq!(p.all().len(), 3);

        p.set_failing(true);
        assert!(p
            .publish(vec![PushEvent::new("private-run-a", "result", json!({}))])
            .await
            .is_err());
        assert_eq!(p.events("private-run-a").len(), 2);
        assert_eq!(p.stats().failed, 1);
        assert_eq!(p.stats().published, 3);
    }
}
