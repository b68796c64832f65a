//! Liveness of blobs: which blobs were used recently enough to keep, and which are in use right
//! now. S3 lifecycle rules expire objects by age; a blob must instead expire by *last use*, so
//! those records live beside the job records in the broker (`blob:meta:<hash>` with an idle
//! expiry, `blobs:index`), behind [`LivenessStore`]. The broker crate implements it over Redis
//! and over its in-process store; [`MemoryLiveness`] is the reference implementation here.
//!
//! The sweeper and the users of a blob exclude each other through these records alone:
//! [`LivenessStore::begin_sweep`] succeeds only while a blob is neither live nor pinned, and once
//! it has, [`LivenessStore::touch`] and [`LivenessStore::pin`] answer `false` until
//! [`LivenessStore::finish_sweep`] (or the sweep guard's expiry). See the crate README.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::hash::BlobHash;

/// The backing store of liveness records failed.
#[derive(Debug, thiserror::Error)]
#[error("liveness store operation failed")]
pub struct LivenessError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Liveness records of blobs. All operations on one hash must be atomic with respect to each other
/// (a Lua script or MULTI/WATCH in Redis, a mutex in process).
#[async_trait]
pub trait LivenessStore: Send + Sync + 'static {
    /// Records a use: `blob:meta:<hash>` expires `idle_ttl` from now, and the hash is in
    /// `blobs:index`. Returns `false`, changing nothing, while the blob is being swept.
    async fn touch(&self, hash: &BlobHash, idle_ttl: Duration) -> Result<bool, LivenessError>;

    /// Whether `blob:meta:<hash>` exists (has not expired).
    async fn is_live(&self, hash: &BlobHash) -> Result<bool, LivenessError>;

    /// Marks the blob in use by `holder` (a job id) for at most `lease`. Returns `false`,
    /// changing nothing, while the blob is being swept.
    async fn pin(
        &self,
        hash: &BlobHash,
        holder: &str,
        lease: Duration,
    ) -> Result<bool, LivenessError>;

    /// Ends `holder`'s use of the blob (a no-op if it holds no pin).
    async fn unpin(&self, hash: &BlobHash, holder: &str) -> Result<(), LivenessError>;

    /// The members of `blobs:index`.
    async fn index_members(&self) -> Result<Vec<BlobHash>, LivenessError>;

    /// Atomically: if the blob is not live and has no unexpired pin, marks it as being swept for
    /// at most `guard` (so a crashed sweeper does not block the blob forever) and returns `true`.
    async fn begin_sweep(&self, hash: &BlobHash, guard: Duration) -> Result<bool, LivenessError>;

    /// After the object is deleted: removes the hash from `blobs:index` and drops the sweep mark.
    async fn finish_sweep(&self, hash: &BlobHash) -> Result<(), LivenessError>;
}

#[derive(Default)]
struct State {
    meta: HashMap<BlobHash, Instant>,
    index: BTreeSet<BlobHash>,
    pins: HashMap<BlobHash, HashMap<String, Instant>>,
    sweeping: HashMap<BlobHash, Instant>,
}

impl State {
    fn sweeping(&self, hash: &BlobHash, now: Instant) -> bool {
        self.sweeping.get(hash).is_some_and(|until| *until > now)
    }
}

/// In-process [`LivenessStore`] (tests, and the reference for other implementations). Expiry
/// uses tokio's clock, so `tokio::time::pause` drives it.
#[derive(Default)]
pub struct MemoryLiveness {
    state: Mutex<State>,
}

impl MemoryLiveness {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl LivenessStore for MemoryLiveness {
    async fn touch(&self, hash: &BlobHash, idle_ttl: Duration) -> Result<bool, LivenessError> {
        let now = Instant::now();
        let mut s = self.lock();
        if s.sweeping(hash, now) {
            return Ok(false);
        }
        s.meta.insert(hash.clone(), now + idle_ttl);
        s.index.insert(hash.clone());
        Ok(true)
    }

    async fn is_live(&self, hash: &BlobHash) -> Result<bool, LivenessError> {
        let now = Instant::now();
        Ok(self.lock().meta.get(hash).is_some_and(|until| *until > now))
    }

    async fn pin(
        &self,
        hash: &BlobHash,
        holder: &str,
        lease: Duration,
    ) -> Result<bool, LivenessError> {
        let now = Instant::now();
        let mut s = self.lock();
        if s.sweeping(hash, now) {
            return Ok(false);
        }
        s.pins
            .entry(hash.clone())
            .or_default()
            .insert(holder.to_owned(), now + lease);
        Ok(true)
    }

    async fn unpin(&self, hash: &BlobHash, holder: &str) -> Result<(), LivenessError> {
        let mut s = self.lock();
        if let Some(pins) = s.pins.get_mut(hash) {
            pins.remove(holder);
            if pins.is_empty() {
                s.pins.remove(hash);
            }
        }
        Ok(())
    }

    async fn index_members(&self) -> Result<Vec<BlobHash>, LivenessError> {
        Ok(self.lock().index.iter().cloned().collect())
    }

    async fn begin_sweep(&self, hash: &BlobHash, guard: Duration) -> Result<bool, LivenessError> {
        let now = Instant::now();
        let mut s = self.lock();
        if s.meta.get(hash).is_some_and(|until| *until > now) || s.sweeping(hash, now) {
            return Ok(false);
        }
        if let Some(pins) = s.pins.get_mut(hash) {
            pins.retain(|_, until| *until > now);
            if !pins.is_empty() {
                return Ok(false);
            }
            s.pins.remove(hash);
        }
        s.meta.remove(hash);
        s.sweeping.insert(hash.clone(), now + guard);
        Ok(true)
    }

    async fn finish_sweep(&self, hash: &BlobHash) -> Result<(), LivenessError> {
        let mut s = self.lock();
        s.index.remove(hash);
        s.sweeping.remove(hash);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn sweep_excludes_use_and_use_excludes_sweep() {
        let l = MemoryLiveness::new();
        let h = BlobHash::of_bytes(b"x");
        let day = Duration::from_secs(86400);
        assert!(l.touch(&h, day).await.unwrap());
        assert!(!l.begin_sweep(&h, day).await.unwrap(), "live blob");
        tokio::time::advance(day * 2).await;
        assert!(!l.is_live(&h).await.unwrap());
        assert!(l.pin(&h, "job", day).await.unwrap());
        assert!(!l.begin_sweep(&h, day).await.unwrap(), "pinned blob");
        l.unpin(&h, "job").await.unwrap();
        assert!(l.begin_sweep(&h, day).await.unwrap());
        assert!(!l.touch(&h, day).await.unwrap(), "touch while sweeping");
        assert!(!l.pin(&h, "job2", day).await.unwrap(), "pin while sweeping");
        l.finish_sweep(&h).await.unwrap();
        assert!(l.index_members().await.unwrap().is_empty());
        assert!(l.touch(&h, day).await.unwrap());
    }
}
