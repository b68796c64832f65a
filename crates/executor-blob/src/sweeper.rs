//! The sweeper: deletes blobs nobody used for `idle_ttl`, blobs uploaded but never finalized,
//! and artifacts older than `artifact_ttl`. S3 lifecycle rules expire objects by age; blobs must
//! expire by last use, which only the liveness records know.
//!
//! Safety against a job using a blob right now: a blob is deleted only after
//! [`LivenessStore::begin_sweep`] has atomically found it neither live nor pinned and marked it
//! as being swept. From then until [`LivenessStore::finish_sweep`], `touch` and `pin` refuse, so
//! `check` reports the blob missing (the client uploads it again) and a job's fetch fails with
//! `Missing` instead of racing the delete. Every user records its use *before* looking at the
//! object, so a user that got in first keeps the blob.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use crate::error::BlobError;
use crate::hash::{BlobHash, ARTIFACT_PREFIX, BLOB_PREFIX};
use crate::liveness::LivenessStore;
use crate::store::BlobStore;

/// How long a sweep mark holds if the sweeper dies between marking and deleting.
pub const SWEEP_GUARD: Duration = Duration::from_secs(10 * 60);
/// An object under `blobs/` that is not in the index is deleted once it is this much older than
/// the upload window (an upload whose client never finalized).
pub const ORPHAN_GRACE: Duration = Duration::from_secs(3600);

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// Blobs deleted (idle, or orphaned uploads).
    pub blobs_deleted: Vec<BlobHash>,
    /// Candidates kept because they were live or in use.
    pub blobs_spared: usize,
    /// Artifact keys deleted.
    pub artifacts_deleted: Vec<String>,
    /// Deletions that failed (logged; retried next pass).
    pub failures: usize,
}

/// Deletes expired blobs and artifacts.
#[derive(Clone)]
pub struct Sweeper {
    store: BlobStore,
    liveness: Arc<dyn LivenessStore>,
}

impl Sweeper {
    /// A sweeper over this store and these liveness records.
    pub fn new(store: BlobStore, liveness: Arc<dyn LivenessStore>) -> Self {
        Self { store, liveness }
    }

    /// One pass, now.
    pub async fn sweep_once(&self) -> Result<SweepReport, BlobError> {
        self.sweep_once_at(Timestamp::now()).await
    }

    /// One pass, judging object ages (orphaned uploads, artifacts) as of `now`. Blob liveness
    /// is the liveness store's own clock.
    pub async fn sweep_once_at(&self, now: Timestamp) -> Result<SweepReport, BlobError> {
        let mut report = SweepReport::default();
        let config = self.store.config();

        let mut candidates: Vec<BlobHash> = self.liveness.index_members().await?;
        let indexed: std::collections::HashSet<BlobHash> = candidates.iter().cloned().collect();
        let orphan_age = config.url_ttl + ORPHAN_GRACE;
        for obj in self.store.list(BLOB_PREFIX).await? {
            let Some(hash) = BlobHash::from_key(&obj.key) else {
                continue;
            };
            if !indexed.contains(&hash) && older_than(obj.last_modified, now, orphan_age) {
                candidates.push(hash);
            }
        }

        for hash in candidates {
            if !self.liveness.begin_sweep(&hash, SWEEP_GUARD).await? {
                report.blobs_spared += 1;
                continue;
            }
            match self.store.delete(&hash.key()).await {
                Ok(()) => {
                    self.liveness.finish_sweep(&hash).await?;
                    tracing::info!(%hash, "swept idle blob");
                    report.blobs_deleted.push(hash);
                }
                Err(err) => {
                    // The mark expires after SWEEP_GUARD; the hash stays indexed, so the next
                    // pass tries again.
                    tracing::warn!(error = %err, %hash, "could not delete idle blob");
                    report.failures += 1;
                }
            }
        }

        for obj in self.store.list(ARTIFACT_PREFIX).await? {
            if !older_than(obj.last_modified, now, config.artifact_ttl) {
                continue;
            }
            match self.store.delete(&obj.key).await {
                Ok(()) => report.artifacts_deleted.push(obj.key),
                Err(err) => {
                    tracing::warn!(error = %err, key = %obj.key, "could not delete expired artifact");
                    report.failures += 1;
                }
            }
        }
        Ok(report)
    }

    /// Sweeps every `sweep_interval` until `shutdown` completes. Errors are logged, not fatal.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        let mut tick = tokio::time::interval(self.store.config().sweep_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => return,
                _ = tick.tick() => match self.sweep_once().await {
                    Ok(r) => tracing::debug!(
                        blobs = r.blobs_deleted.len(),
                        artifacts = r.artifacts_deleted.len(),
                        spared = r.blobs_spared,
                        failures = r.failures,
                        "blob sweep done"
                    ),
                    Err(err) => tracing::warn!(error = %err, "blob sweep failed"),
                },
            }
        }
    }
}

fn older_than(modified: Option<Timestamp>, now: Timestamp, age: Duration) -> bool {
    let Some(modified) = modified else {
        return false;
    };
    let Ok(age) = jiff::SignedDuration::try_from(age) else {
        return false;
    };
    now.duration_since(modified) >= age
}
