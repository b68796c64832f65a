//! [`BlobService`]: the blob operations of the API and the worker, on top of the object store
//! ([`BlobStore`]) and the liveness records ([`LivenessStore`]).
//!
//! Ordering matters for the sweeper's safety: liveness is recorded *before* the object is looked
//! at, so a blob reported present (or finalized, or fetched) cannot be swept afterwards; and a
//! blob the sweeper has started deleting is reported missing rather than present.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::io::AsyncWrite;

use crate::error::BlobError;
use crate::hash::BlobHash;
use crate::liveness::LivenessStore;
use crate::store::BlobStore;
use crate::wire::{BlobCheckResponse, BlobUpload};

/// How long a job's pin keeps a blob from being swept if the job never unpins (crash).
pub const PIN_LEASE: Duration = Duration::from_secs(3600);

/// Store requests made at once by `check` and `finalize`.
const CONCURRENCY: usize = 8;

/// Blob operations for the API handlers and the worker. Cheap to clone.
#[derive(Clone)]
pub struct BlobService {
    store: BlobStore,
    liveness: Arc<dyn LivenessStore>,
}

impl BlobService {
    /// Combines the object store and the liveness records.
    pub fn new(store: BlobStore, liveness: Arc<dyn LivenessStore>) -> Self {
        Self { store, liveness }
    }

    /// The object store.
    pub fn store(&self) -> &BlobStore {
        &self.store
    }

    /// The liveness records.
    pub fn liveness(&self) -> &Arc<dyn LivenessStore> {
        &self.liveness
    }

    /// `/v1/blobs/check`: each distinct hash is answered once, in request order. A present blob
    /// has its idle expiry refreshed; a missing one gets a presigned upload URL.
    pub async fn check(&self, hashes: &[BlobHash]) -> Result<BlobCheckResponse, BlobError> {
        let hashes = dedup(hashes);
        let results: Vec<Result<(BlobHash, bool), BlobError>> =
            futures::stream::iter(hashes.into_iter().map(|h| async move {
                let present = self.record_use_then_exists(&h).await?;
                Ok((h, present))
            }))
            .buffered(CONCURRENCY)
            .collect()
            .await;
        let mut out = BlobCheckResponse::default();
        for r in results {
            let (h, present) = r?;
            if present {
                out.present.push(h.to_string());
            } else {
                out.missing.push(BlobUpload {
                    upload_url: self.store.presign_put(&h).to_string(),
                    hash: h.to_string(),
                });
            }
        }
        Ok(out)
    }

    /// `/v1/blobs/finalize`: records liveness (idle expiry and index membership) of each distinct
    /// hash and returns those found in the store. Reads no bytes (a `HEAD` per blob).
    pub async fn finalize(&self, hashes: &[BlobHash]) -> Result<Vec<BlobHash>, BlobError> {
        let hashes = dedup(hashes);
        let results: Vec<Result<Option<BlobHash>, BlobError>> = futures::stream::iter(
            hashes
                .into_iter()
                .map(|h| async move { Ok(self.record_use_then_exists(&h).await?.then_some(h)) }),
        )
        .buffered(CONCURRENCY)
        .collect()
        .await;
        results.into_iter().filter_map(Result::transpose).collect()
    }

    async fn record_use_then_exists(&self, h: &BlobHash) -> Result<bool, BlobError> {
        // Liveness first: once touched, the sweeper leaves the blob alone for `idle_ttl`.
        // `false` means a sweep has begun: the object is going away, call it missing.
        if !self.liveness.touch(h, self.store.config().idle_ttl).await? {
            return Ok(false);
        }
        self.store.exists(h).await
    }

    /// The worker's fetch: pins the blob for `job_id`, refreshes its liveness, streams it into
    /// `dest` through [`BlobStore::fetch_verified`], and unpins it. A blob being swept is
    /// [`BlobError::Missing`]. Same contract on `dest`: a temporary file, renamed into the
    /// workspace only on `Ok`.
    pub async fn fetch_for_job<W>(
        &self,
        hash: &BlobHash,
        job_id: &str,
        dest: &mut W,
        max_bytes: u64,
    ) -> Result<u64, BlobError>
    where
        W: AsyncWrite + Unpin + ?Sized,
    {
        let missing = || BlobError::Missing { hash: hash.clone() };
        if !self.liveness.pin(hash, job_id, PIN_LEASE).await? {
            return Err(missing());
        }
        let result = async {
            if !self
                .liveness
                .touch(hash, self.store.config().idle_ttl)
                .await?
            {
                return Err(missing());
            }
            self.store.fetch_verified(hash, dest, max_bytes).await
        }
        .await;
        if let Err(err) = self.liveness.unpin(hash, job_id).await {
            tracing::warn!(error = %err, %hash, job_id, "could not unpin blob; its lease will expire");
        }
        result
    }
}

fn dedup(hashes: &[BlobHash]) -> Vec<BlobHash> {
    let mut seen = std::collections::HashSet::new();
    hashes.iter().filter(|h| seen.insert(*h)).cloned().collect()
}
