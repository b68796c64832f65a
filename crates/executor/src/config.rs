//! Flags and environment variables of the binary (each declared once, in `env.rs`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use executor_types::Limits;

use crate::env;

#[derive(Args, Clone)]
pub struct CommonArgs {
    /// Directory of language manifests.
    #[arg(long = "languages", env = env::LANGUAGES_DIR, default_value = "./languages")]
    pub languages: PathBuf,
    /// Where embedded data (blob store, workspaces' state) lives.
    #[arg(long = "data-dir", env = env::DATA_DIR, default_value = "./data")]
    pub data_dir: PathBuf,
    /// Use Redis instead of the in-process broker.
    #[arg(long = "redis-url", env = env::REDIS_URL)]
    pub redis_url: Option<String>,
    /// How long collected output (RunResult) is kept, in seconds.
    #[arg(long, env = env::OUTPUT_TTL_SECS, default_value_t = 24 * 3600)]
    pub output_ttl_secs: u64,
    /// Prefix for every Redis key and channel (empty: the spec's names).
    #[arg(long = "redis-prefix", env = env::REDIS_PREFIX, default_value = "")]
    pub redis_prefix: String,
}

#[derive(Args, Clone)]
pub struct ApiArgs {
    /// Address of the HTTP API.
    #[arg(long = "listen", env = env::LISTEN, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Bearer token of every /v1 route (generated and printed when unset).
    #[arg(long = "token", env = env::API_TOKEN, hide_env_values = true)]
    pub token: Option<String>,
    /// Sum of decoded file sizes per job.
    #[arg(long, env = env::MAX_FILES_BYTES, default_value_t = 8 * 1024 * 1024)]
    pub max_files_bytes: u64,
    /// Queue length at which submissions get 429.
    #[arg(long, env = env::MAX_QUEUE_DEPTH, default_value_t = 1000)]
    pub max_queue_depth: u64,
    /// Register POST /v1/channel-auth (local demos).
    #[arg(long, env = env::ENABLE_CHANNEL_AUTH, default_value = "false", value_parser = clap::builder::BoolishValueParser::new())]
    pub enable_channel_auth: bool,
    #[arg(long, env = env::MAX_WALL_TIME_MS, default_value_t = 60_000)]
    pub max_wall_time_ms: u64,
    #[arg(long, env = env::MAX_IDLE_MS, default_value_t = 60_000)]
    pub max_idle_ms: u64,
    #[arg(long, env = env::MAX_CPU_MS, default_value_t = 60_000)]
    pub max_cpu_ms: u64,
    #[arg(long, env = env::MAX_MEMORY_MB, default_value_t = 2048)]
    pub max_memory_mb: u64,
    #[arg(long, env = env::MAX_PIDS, default_value_t = 512)]
    pub max_pids: u64,
    #[arg(long, env = env::MAX_OUTPUT_KB, default_value_t = 16 * 1024)]
    pub max_output_kb: u64,
    #[arg(long, env = env::MAX_ARTIFACTS, default_value_t = 64)]
    pub max_artifacts: u64,
    #[arg(long, env = env::MAX_ARTIFACT_BYTES, default_value_t = 100 * 1024 * 1024)]
    pub max_artifact_bytes: u64,
}

impl ApiArgs {
    pub fn max_limits(&self) -> Limits {
        let nz = |v: u64| std::num::NonZeroU64::new(v.max(1)).unwrap();
        Limits {
            wall_time_ms: nz(self.max_wall_time_ms),
            idle_ms: nz(self.max_idle_ms),
            cpu_ms: nz(self.max_cpu_ms),
            memory_mb: nz(self.max_memory_mb),
            pids: nz(self.max_pids),
            output_kb: nz(self.max_output_kb),
            max_artifacts: self.max_artifacts,
            max_artifact_bytes: self.max_artifact_bytes,
        }
    }
}

#[derive(Args, Clone)]
pub struct PushArgs {
    /// Address of the embedded Pusher-protocol server (serve only).
    #[arg(long = "push-listen", env = env::PUSH_LISTEN, default_value = "127.0.0.1:6001")]
    pub push_listen: SocketAddr,
    #[arg(long, env = env::PUSHER_APP_ID)]
    pub pusher_app_id: Option<String>,
    #[arg(long, env = env::PUSHER_APP_KEY)]
    pub pusher_app_key: Option<String>,
    #[arg(long, env = env::PUSHER_APP_SECRET, hide_env_values = true)]
    pub pusher_app_secret: Option<String>,
    /// An external Pusher-compatible server (Sockudo, Soketi, Pusher) to publish to over its
    /// HTTP API; when set, `serve` does not start the embedded one.
    #[arg(long, env = env::PUSHER_HOST)]
    pub pusher_host: Option<String>,
    #[arg(long, env = env::PUSHER_PORT, default_value_t = 6001)]
    pub pusher_port: u16,
    #[arg(long, env = env::PUSHER_USE_TLS, default_value = "false", value_parser = clap::builder::BoolishValueParser::new())]
    pub pusher_use_tls: bool,
}

pub struct Credentials {
    pub app_id: String,
    pub key: String,
    pub secret: String,
}

impl PushArgs {
    /// The credentials, generated once per process when not configured (so the API's signer
    /// and the push server agree).
    pub fn credentials_fixed(&self) -> Credentials {
        static GENERATED: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
        let (k, s) = GENERATED.get_or_init(|| {
            let c = self.credentials();
            (c.key, c.secret)
        });
        Credentials {
            app_id: self
                .pusher_app_id
                .clone()
                .unwrap_or_else(|| "executor".into()),
            key: self.pusher_app_key.clone().unwrap_or_else(|| k.clone()),
            secret: self.pusher_app_secret.clone().unwrap_or_else(|| s.clone()),
        }
    }

    /// The configured app credentials, or fresh random ones for the embedded server.
    pub fn credentials(&self) -> Credentials {
        Credentials {
            app_id: self
                .pusher_app_id
                .clone()
                .unwrap_or_else(|| "executor".into()),
            key: self
                .pusher_app_key
                .clone()
                .unwrap_or_else(|| hex::encode(rand::random::<[u8; 10]>())),
            secret: self
                .pusher_app_secret
                .clone()
                .unwrap_or_else(|| hex::encode(rand::random::<[u8; 16]>())),
        }
    }
}

#[derive(Args, Clone)]
pub struct WorkerArgs {
    /// Jobs run at once (default: the number of cores).
    #[arg(long, env = env::WORKER_SLOTS)]
    pub slots: Option<usize>,
    /// Jobs a worker claims beyond the running ones (default: as many as slots): waiting for
    /// their start handshake they hold no slot, but a large value lets one worker hoard the queue.
    #[arg(long, env = env::MAX_WAITING)]
    pub max_waiting: Option<usize>,
    /// How long a claimed job waits for its start handshake before running anyway.
    #[arg(long, env = env::START_WAIT_MS, default_value_t = 10_000)]
    pub start_wait_ms: u64,
    /// First sandbox slot number: several workers on one host need disjoint ranges (slots name
    /// cgroups and map to host uid 200000+slot).
    #[arg(long, env = env::FIRST_SLOT, default_value_t = 0)]
    pub first_slot: u32,
    /// Cgroup hierarchy: auto, v1 or v2 (v2 needs a delegated cgroup directory).
    #[arg(long, env = env::CGROUP, default_value = "auto")]
    pub cgroup: String,
}

/// Where a client command (`run`, `upload`) finds the API.
#[derive(Args, Clone)]
pub struct ClientArgs {
    /// Base URL of the API.
    #[arg(long, env = env::API_URL, default_value = "http://127.0.0.1:8080")]
    pub api: String,
    /// The API token.
    #[arg(long, env = env::API_TOKEN, hide_env_values = true)]
    pub token: String,
}
