//! Glue between the blob crate and the rest: liveness records over the broker, the API's blob
//! routes, and the worker's blob access.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use executor_blob::{BlobHash, BlobService, BlobStore, LivenessError, LivenessStore};
use executor_broker::Broker;
use executor_types::{keys, Artifact, BlobCheckResponse, BlobFinalizeResponse, BlobUpload};

fn sweep_mark(h: &BlobHash) -> String {
    format!("blob:sweep:{h}")
}
fn pins(h: &BlobHash) -> String {
    format!("blob:pins:{h}")
}
fn err(e: executor_broker::BrokerError) -> LivenessError {
    LivenessError(Box::new(e))
}

/// [`LivenessStore`] over any broker (Redis or in-process). Each use writes its record first
/// and then looks for a sweep mark; the sweeper sets its mark first and then looks for uses.
/// On one sequentially consistent store, one of the two always sees the other, so a blob in
/// use is never deleted and a blob being deleted is reported missing, never half there.
pub struct BrokerLiveness(pub Arc<dyn Broker>);

#[async_trait]
impl LivenessStore for BrokerLiveness {
    async fn touch(&self, hash: &BlobHash, idle_ttl: Duration) -> Result<bool, LivenessError> {
        let b = &self.0;
        let meta = serde_json::json!({ "lastUsedMs": executor_types::now_ms() }).to_string();
        b.set(&keys::blob_meta(&hash.to_string()), &meta, Some(idle_ttl))
            .await
            .map_err(err)?;
        if b.get(&sweep_mark(hash)).await.map_err(err)?.is_some() {
            return Ok(false);
        }
        b.sadd(keys::BLOBS_INDEX, &hash.to_string())
            .await
            .map_err(err)?;
        Ok(true)
    }

    async fn is_live(&self, hash: &BlobHash) -> Result<bool, LivenessError> {
        Ok(self
            .0
            .get(&keys::blob_meta(&hash.to_string()))
            .await
            .map_err(err)?
            .is_some())
    }

    async fn pin(
        &self,
        hash: &BlobHash,
        _holder: &str,
        lease: Duration,
    ) -> Result<bool, LivenessError> {
        let b = &self.0;
        b.incr_by(&pins(hash), 1, Some(lease)).await.map_err(err)?;
        b.expire(&pins(hash), lease).await.map_err(err)?;
        if b.get(&sweep_mark(hash)).await.map_err(err)?.is_some() {
            b.incr_by(&pins(hash), -1, None).await.map_err(err)?;
            return Ok(false);
        }
        Ok(true)
    }

    async fn unpin(&self, hash: &BlobHash, _holder: &str) -> Result<(), LivenessError> {
        if self.0.incr_by(&pins(hash), -1, None).await.map_err(err)? <= 0 {
            self.0.del(&pins(hash)).await.map_err(err)?;
        }
        Ok(())
    }

    async fn index_members(&self) -> Result<Vec<BlobHash>, LivenessError> {
        Ok(self
            .0
            .smembers(keys::BLOBS_INDEX)
            .await
            .map_err(err)?
            .iter()
            .filter_map(|h| BlobHash::parse(h).ok())
            .collect())
    }

    async fn begin_sweep(&self, hash: &BlobHash, guard: Duration) -> Result<bool, LivenessError> {
        let b = &self.0;
        if !b
            .set_nx(&sweep_mark(hash), "1", Some(guard))
            .await
            .map_err(err)?
        {
            return Ok(false);
        }
        let live = b
            .get(&keys::blob_meta(&hash.to_string()))
            .await
            .map_err(err)?
            .is_some();
        let pinned = b
            .get(&pins(hash))
            .await
            .map_err(err)?
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|n| n > 0);
        if live || pinned {
            b.del(&sweep_mark(hash)).await.map_err(err)?;
            return Ok(false);
        }
        Ok(true)
    }

    async fn finish_sweep(&self, hash: &BlobHash) -> Result<(), LivenessError> {
        self.0
            .srem(keys::BLOBS_INDEX, &hash.to_string())
            .await
            .map_err(err)?;
        self.0.del(&sweep_mark(hash)).await.map_err(err)?;
        Ok(())
    }
}

/// The API's blob routes over [`BlobService`].
pub struct ApiBlobs(pub Arc<BlobService>);

fn parse_all(hashes: &[String]) -> anyhow::Result<Vec<BlobHash>> {
    hashes
        .iter()
        .map(|h| BlobHash::parse(h).map_err(|e| anyhow::anyhow!("{e}")))
        .collect()
}

#[async_trait]
impl executor_api::BlobService for ApiBlobs {
    async fn check(&self, hashes: Vec<String>) -> anyhow::Result<BlobCheckResponse> {
        let r = self.0.check(&parse_all(&hashes)?).await?;
        Ok(BlobCheckResponse {
            missing: r
                .missing
                .into_iter()
                .map(|m| BlobUpload {
                    hash: m.hash,
                    upload_url: m.upload_url,
                })
                .collect(),
            present: r.present,
        })
    }

    async fn finalize(&self, hashes: Vec<String>) -> anyhow::Result<BlobFinalizeResponse> {
        let r = self.0.finalize(&parse_all(&hashes)?).await?;
        Ok(BlobFinalizeResponse {
            finalized: r.iter().map(|h| h.to_string()).collect(),
        })
    }
}

/// The worker's blob access over [`BlobService`] and [`BlobStore`].
pub struct WorkerBlobs {
    pub service: Arc<BlobService>,
    pub store: BlobStore,
}

#[async_trait]
impl executor_worker::BlobAccess for WorkerBlobs {
    async fn fetch(
        &self,
        hex: &str,
        dest: &mut tokio::fs::File,
        max_bytes: u64,
    ) -> Result<u64, String> {
        let hash = BlobHash::parse(&format!("sha256:{hex}")).map_err(|e| e.to_string())?;
        self.service
            .fetch_for_job(&hash, "worker", dest, max_bytes)
            .await
            .map_err(|e| e.to_string())
    }

    async fn upload_artifact(
        &self,
        job_id: &str,
        name: &str,
        file: std::fs::File,
        bytes: u64,
    ) -> Result<Artifact, String> {
        use std::os::unix::fs::FileExt;
        let mut head = vec![0u8; executor_blob::SNIFF_LEN.min(bytes as usize)];
        let n = file.read_at(&mut head, 0).map_err(|e| e.to_string())?;
        let mime = executor_blob::guess_mime(name, &head[..n]);
        let a = self
            .store
            .upload_artifact(job_id, name, tokio::fs::File::from_std(file), bytes, &mime)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Artifact {
            name: a.name,
            mime_type: a.mime_type,
            bytes: a.bytes,
            url: a.url,
        })
    }
}

#[cfg(test)]
mod tests {
    //! The liveness contract over both brokers (Redis real, fresh prefix).
    use super::*;
    use executor_broker::{MemoryBroker, RedisBroker};

    async fn contract(b: Arc<dyn Broker>) {
        let l = BrokerLiveness(b.clone());
        let h = BlobHash::parse(&format!("sha256:{}", "c".repeat(64))).unwrap();
        assert!(!l.is_live(&h).await.unwrap());
        assert!(l.touch(&h, Duration::from_secs(60)).await.unwrap());
        assert!(l.is_live(&h).await.unwrap());
        assert!(
            b.ttl(&keys::blob_meta(&h.to_string()))
                .await
                .unwrap()
                .is_some(),
            "liveness expires"
        );
        assert_eq!(l.index_members().await.unwrap(), vec![h.clone()]);
        assert!(
            !l.begin_sweep(&h, Duration::from_secs(60)).await.unwrap(),
            "a live blob is not swept"
        );
        b.del(&keys::blob_meta(&h.to_string())).await.unwrap();
        assert!(l.pin(&h, "job", Duration::from_secs(60)).await.unwrap());
        assert!(
            !l.begin_sweep(&h, Duration::from_secs(60)).await.unwrap(),
            "a pinned blob is not swept"
        );
        l.unpin(&h, "job").await.unwrap();
        assert!(l.begin_sweep(&h, Duration::from_secs(60)).await.unwrap());
        assert!(
            !l.touch(&h, Duration::from_secs(60)).await.unwrap(),
            "a use during a sweep sees the blob missing"
        );
        assert!(!l.pin(&h, "job2", Duration::from_secs(60)).await.unwrap());
        l.finish_sweep(&h).await.unwrap();
        assert!(l.index_members().await.unwrap().is_empty());
        assert!(
            l.touch(&h, Duration::from_secs(60)).await.unwrap(),
            "usable again after the sweep"
        );
    }

    #[tokio::test]
    async fn liveness_in_process() {
        contract(Arc::new(MemoryBroker::new())).await;
    }

    #[tokio::test]
    async fn liveness_redis() {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        let prefix = format!("livetest:{}:", uuid::Uuid::new_v4());
        contract(Arc::new(
            RedisBroker::connect(&url, &prefix)
                .await
                .expect("Redis running"),
        ))
        .await;
    }
}
