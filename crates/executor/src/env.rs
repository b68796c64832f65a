//! Every environment variable Executor reads, declared once (the README's configuration table
//! is this list).

pub const API_TOKEN: &str = "EXECUTOR_API_TOKEN";
/// The API a client command (`run`, `upload`) talks to.
pub const API_URL: &str = "EXECUTOR_API_URL";
pub const LISTEN: &str = "EXECUTOR_LISTEN";
pub const LANGUAGES_DIR: &str = "EXECUTOR_LANGUAGES_DIR";
pub const DATA_DIR: &str = "EXECUTOR_DATA_DIR";
pub const REDIS_URL: &str = "REDIS_URL";
pub const REDIS_PREFIX: &str = "EXECUTOR_REDIS_PREFIX";
pub const MAX_FILES_BYTES: &str = "MAX_FILES_BYTES";
pub const MAX_QUEUE_DEPTH: &str = "MAX_QUEUE_DEPTH";
pub const ENABLE_CHANNEL_AUTH: &str = "ENABLE_CHANNEL_AUTH";
pub const MAX_WALL_TIME_MS: &str = "EXECUTOR_MAX_WALL_TIME_MS";
pub const MAX_IDLE_MS: &str = "EXECUTOR_MAX_IDLE_MS";
pub const MAX_CPU_MS: &str = "EXECUTOR_MAX_CPU_MS";
pub const MAX_MEMORY_MB: &str = "EXECUTOR_MAX_MEMORY_MB";
pub const MAX_PIDS: &str = "EXECUTOR_MAX_PIDS";
pub const MAX_OUTPUT_KB: &str = "EXECUTOR_MAX_OUTPUT_KB";
pub const MAX_ARTIFACTS: &str = "EXECUTOR_MAX_ARTIFACTS";
pub const MAX_ARTIFACT_BYTES: &str = "EXECUTOR_MAX_ARTIFACT_BYTES";
pub const PUSH_LISTEN: &str = "EXECUTOR_PUSH_LISTEN";
pub const PUSHER_APP_ID: &str = "PUSHER_APP_ID";
pub const PUSHER_APP_KEY: &str = "PUSHER_APP_KEY";
pub const PUSHER_APP_SECRET: &str = "PUSHER_APP_SECRET";
pub const LOG: &str = "RUST_LOG";
pub const PUSHER_HOST: &str = "PUSHER_HOST";
pub const PUSHER_PORT: &str = "PUSHER_PORT";
pub const PUSHER_USE_TLS: &str = "PUSHER_USE_TLS";
pub const WORKER_SLOTS: &str = "EXECUTOR_WORKER_SLOTS";
pub const START_WAIT_MS: &str = "EXECUTOR_START_WAIT_MS";
pub const CGROUP: &str = "EXECUTOR_CGROUP";
pub const OUTPUT_TTL_SECS: &str = "EXECUTOR_OUTPUT_TTL_SECS";
pub const MAX_WAITING: &str = "EXECUTOR_MAX_WAITING";
pub const FIRST_SLOT: &str = "EXECUTOR_FIRST_SLOT";
