//! The worker: claims jobs from `jobs:queue`, waits for the start handshake without holding an
//! execution slot, prepares a fresh workspace, runs the manifest's compile and run stages in
//! the sandbox with every limit, streams `stage`/`compile_output`/`stdout`/`stderr`/`artifact`
//! events and `result` last, and stores the RunResult when asked.
//!
//! Nothing is lost if a worker dies: a job is moved atomically from the queue to this worker's
//! processing list (`worker:<id>:processing`, additive) and the worker keeps a lease
//! (`worker:<id>:alive`). A reaper in every worker finds processing lists whose lease expired
//! and requeues their jobs that had not started running, or ends those that had as `error`
//! with a reason (re-running a program that may have had side effects is not safe to do
//! silently).

mod job;
mod stage;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use executor_broker::jobs::JobStore;
use executor_broker::Broker;
use executor_languages::Registry;
use executor_push::Publisher;
use executor_sandbox::{CgroupConfig, Slot, SlotConfig};
use executor_types::{keys, Artifact, JobState, SchemaValidator};
use tokio::sync::Semaphore;

/// The worker's configuration.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Jobs run at once (default: the number of cores).
    pub slots: usize,
    /// Jobs claimed beyond the running ones (waiting for their start handshake, or for a slot).
    /// Kept small (default: `slots`) so one worker does not hoard the queue while others idle.
    pub max_waiting: usize,
    /// How long a claimed job waits for `start` before running anyway.
    pub start_wait: Duration,
    /// Directory for the slots' mount points.
    pub state_dir: PathBuf,
    /// First slot number (so several workers on one host use distinct slots).
    pub first_slot: u32,
    /// Cgroup hierarchy to use.
    pub cgroup: CgroupConfig,
    /// Lease of this worker; the reaper acts when it expires.
    pub lease: Duration,
    /// Output is coalesced for this long before an event is sent.
    pub coalesce: Duration,
    /// Largest output chunk per event, in bytes (fits Pusher's 10 KB with JSON overhead).
    pub max_chunk_bytes: usize,
    /// Size and inode cap of the workspace tmpfs.
    pub workspace_bytes: u64,
    pub workspace_inodes: u64,
    /// On shutdown, how long running jobs may take to finish.
    pub drain: Duration,
    /// How long a collected RunResult is kept.
    pub output_ttl: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        Self {
            slots: cores,
            max_waiting: cores,
            start_wait: Duration::from_secs(10),
            state_dir: PathBuf::from("/run/executor"),
            first_slot: 0,
            cgroup: CgroupConfig::Auto,
            lease: Duration::from_secs(15),
            coalesce: Duration::from_millis(5),
            max_chunk_bytes: 8 * 1024,
            workspace_bytes: 256 * 1024 * 1024,
            workspace_inodes: 16 * 1024,
            drain: Duration::from_secs(60),
            output_ttl: keys::OUTPUT_TTL,
        }
    }
}

/// Access to the blob store (inputs by ref, artifacts out); absent without a store.
#[async_trait]
pub trait BlobAccess: Send + Sync {
    /// Streams blob `hex` into `dest`, verifying its sha256; at most `max_bytes`.
    async fn fetch(
        &self,
        hex: &str,
        dest: &mut tokio::fs::File,
        max_bytes: u64,
    ) -> Result<u64, String>;
    /// Uploads an artifact (streamed from `file`, `bytes` long) and returns it with a signed
    /// download URL.
    async fn upload_artifact(
        &self,
        job_id: &str,
        name: &str,
        file: std::fs::File,
        bytes: u64,
    ) -> Result<Artifact, String>;
}

/// A running worker's shared parts.
pub struct Worker {
    pub id: String,
    pub config: WorkerConfig,
    pub jobs: JobStore,
    pub languages: Arc<Registry>,
    pub publisher: Arc<dyn Publisher>,
    pub blobs: Option<Arc<dyn BlobAccess>>,
    pub validator: Arc<SchemaValidator>,
    slots: Mutex<Vec<Slot>>,
    run_permits: Semaphore,
    claim_permits: Arc<Semaphore>,
    stopping: std::sync::atomic::AtomicBool,
    stop: tokio::sync::Notify,
}

fn processing(id: &str) -> String {
    format!("worker:{id}:processing")
}
fn alive(id: &str) -> String {
    format!("worker:{id}:alive")
}
const WORKERS: &str = "workers";

impl Worker {
    /// Creates the slots (cgroups and mount points, once) and registers the worker.
    pub fn new(
        config: WorkerConfig,
        broker: Arc<dyn Broker>,
        languages: Arc<Registry>,
        publisher: Arc<dyn Publisher>,
        blobs: Option<Arc<dyn BlobAccess>>,
    ) -> anyhow::Result<Arc<Self>> {
        let mut slots = Vec::new();
        for i in 0..config.slots {
            let n = config.first_slot + i as u32;
            let mut sc = SlotConfig::new(n, config.state_dir.join("slots"));
            sc.cgroup = config.cgroup.clone();
            let hint = if effective_uid_is_root() {
                ""
            } else {
                " (the worker must run as root, or with CAP_SYS_ADMIN and a delegated cgroup v2 subtree)"
            };
            let slot = Slot::new(sc).map_err(|e| {
                anyhow::Error::new(e).context(format!("cannot set up sandbox slot {n}{hint}"))
            })?;
            slots.push(slot);
        }
        Ok(Arc::new(Self {
            id: uuid::Uuid::new_v4().to_string(),
            run_permits: Semaphore::new(config.slots),
            claim_permits: Arc::new(Semaphore::new(config.slots + config.max_waiting)),
            stopping: std::sync::atomic::AtomicBool::new(false),
            stop: tokio::sync::Notify::new(),
            config,
            jobs: JobStore::new(broker),
            languages,
            publisher,
            blobs,
            validator: Arc::new(SchemaValidator::new()),
            slots: Mutex::new(slots),
        }))
    }

    /// Runs until `shutdown` resolves: the claim loop, the lease and the reaper.
    pub async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        let b = self.jobs.broker.clone();
        let _ = b.sadd(WORKERS, &self.id).await;
        let lease = {
            let w = self.clone();
            tokio::spawn(async move {
                loop {
                    let _ = w
                        .jobs
                        .broker
                        .set(&alive(&w.id), "1", Some(w.config.lease))
                        .await;
                    tokio::time::sleep(w.config.lease / 3).await;
                }
            })
        };
        let reaper = {
            let w = self.clone();
            tokio::spawn(async move {
                loop {
                    if let Err(e) = w.reap_once().await {
                        tracing::warn!(error = %e, "reaper pass failed");
                    }
                    tokio::time::sleep(w.config.lease).await;
                }
            })
        };
        tracing::info!(worker = %self.id, slots = self.config.slots, "worker ready");
        tokio::select! {
            _ = self.clone().claim_loop() => {},
            _ = shutdown => {},
        }
        // Graceful stop: claim nothing more, hand jobs still waiting for their start back to
        // the queue, let running ones finish (bounded by `drain`).
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.stop.notify_waiters();
        let total = (self.config.slots + self.config.max_waiting) as u32;
        let drained =
            tokio::time::timeout(self.config.drain, self.claim_permits.acquire_many(total)).await;
        lease.abort();
        reaper.abort();
        match drained {
            Ok(_) => {
                let _ = b.del(&alive(&self.id)).await;
                let _ = b.srem(WORKERS, &self.id).await;
                tracing::info!(worker = %self.id, "worker drained and stopped");
            }
            Err(_) => tracing::warn!(
                worker = %self.id,
                "jobs still running at shutdown; the reaper of another worker will end them"
            ),
        }
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Puts a claimed job that has not started back at the head of the queue.
    pub(crate) async fn requeue(&self, id: &str) -> anyhow::Result<()> {
        self.jobs.set_state(id, JobState::Queued, None).await?;
        self.jobs
            .broker
            .lmove_value(&processing(&self.id), keys::QUEUE, id)
            .await?;
        tracing::info!(job = id, "worker stopping: job requeued");
        Ok(())
    }

    async fn claim_loop(self: Arc<Self>) {
        let mut backoff = Duration::from_millis(100);
        loop {
            let permit = self
                .claim_permits
                .clone()
                .acquire_owned()
                .await
                .expect("semaphore open");
            let claimed = self
                .jobs
                .broker
                .blmove(keys::QUEUE, &processing(&self.id), Duration::from_secs(1))
                .await;
            match claimed {
                Ok(Some(job_id)) => {
                    backoff = Duration::from_millis(100);
                    let w = self.clone();
                    tokio::spawn(async move {
                        w.clone().handle(&job_id).await;
                        let _ = w.jobs.broker.lrem(&processing(&w.id), 1, &job_id).await;
                        drop(permit);
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "cannot claim from the queue; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    /// Claims and runs at most one job, waiting up to `timeout` for one (tests drain the
    /// queue deterministically with this). Returns the job id.
    pub async fn step(self: &Arc<Self>, timeout: Duration) -> Option<String> {
        let id = self
            .jobs
            .broker
            .blmove(keys::QUEUE, &processing(&self.id), timeout)
            .await
            .ok()??;
        self.clone().handle(&id).await;
        let _ = self.jobs.broker.lrem(&processing(&self.id), 1, &id).await;
        Some(id)
    }

    /// One reaper pass: jobs held by workers whose lease expired are requeued (not yet
    /// running) or ended as `error` (were running).
    pub async fn reap_once(&self) -> anyhow::Result<usize> {
        let b = &self.jobs.broker;
        let mut n = 0;
        for w in b.smembers(WORKERS).await? {
            if w == self.id || b.get(&alive(&w)).await?.is_some() {
                continue;
            }
            for job in b.lrange(&processing(&w), 0, -1).await? {
                n += 1;
                match self.jobs.status(&job).await?.map(|s| s.state) {
                    Some(JobState::Queued) | Some(JobState::Starting) => {
                        self.jobs.set_state(&job, JobState::Queued, None).await?;
                        b.lmove_value(&processing(&w), keys::QUEUE, &job).await?;
                        tracing::warn!(job, dead_worker = w, "requeued a job of a dead worker");
                    }
                    Some(JobState::Running) => {
                        let reason =
                            "the worker running this job stopped; it was not re-run".to_string();
                        job::finish_error(self, &job, &reason).await;
                        b.lrem(&processing(&w), 0, &job).await?;
                    }
                    _ => {
                        b.lrem(&processing(&w), 0, &job).await?;
                    }
                }
            }
            if b.llen(&processing(&w)).await? == 0 {
                b.srem(WORKERS, &w).await?;
            }
        }
        Ok(n)
    }

    fn take_slot(&self) -> Slot {
        self.slots
            .lock()
            .unwrap()
            .pop()
            .expect("a run permit guarantees a free slot")
    }

    fn return_slot(&self, slot: Slot) {
        self.slots.lock().unwrap().push(slot);
    }
}

/// Whether this process runs as root (read from /proc: this crate makes no libc calls).
fn effective_uid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}
