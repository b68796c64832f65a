//! Names shared by every component: broker keys (the spec's), channel names and expiries.

use std::time::Duration;

/// The job queue list.
pub const QUEUE: &str = "jobs:queue";
/// Membership set of known blobs.
pub const BLOBS_INDEX: &str = "blobs:index";

pub fn spec(id: &str) -> String {
    format!("job:{id}:spec")
}
pub fn status(id: &str) -> String {
    format!("job:{id}:status")
}
pub fn output(id: &str) -> String {
    format!("job:{id}:output")
}
/// Durable start flag.
pub fn start(id: &str) -> String {
    format!("start:{id}")
}
/// Pub/sub channel carrying [`crate::StdinMessage`]s.
pub fn stdin_channel(id: &str) -> String {
    format!("stdin:{id}")
}
/// Pub/sub channel carrying [`crate::ControlMessage`]s.
pub fn ctrl_channel(id: &str) -> String {
    format!("ctrl:{id}")
}
/// Additive: the durable, ordered log of stdin chunks and controls sent for a job, replayed by
/// the worker so nothing sent before it subscribed is lost. Entries are JSON
/// `{"chunk": ...}` or `{"type": ...}`.
pub fn input_log(id: &str) -> String {
    format!("job:{id}:input")
}
/// Additive: bytes accepted by the API and not yet written to the program (the 64 KiB cap).
pub fn stdin_pending(id: &str) -> String {
    format!("job:{id}:stdin_pending")
}
/// Additive: per-second stdin frame counter (the 30 frames/s cap).
pub fn stdin_rate(id: &str, second: u64) -> String {
    format!("job:{id}:stdin_rate:{second}")
}
/// Additive: the kill flag, so a kill before claim is honoured.
pub fn killed(id: &str) -> String {
    format!("job:{id}:kill")
}
pub fn blob_meta(hash: &str) -> String {
    format!("blob:meta:{hash}")
}
/// The realtime channel of a job.
pub fn channel(id: &str) -> String {
    format!("private-run-{id}")
}
/// The cache channel on which `result` is also published, for late joiners.
pub fn cache_channel(id: &str) -> String {
    format!("private-cache-run-{id}")
}

/// Expiry of the start flag.
pub const START_TTL: Duration = Duration::from_secs(10 * 60);
/// Expiry of job records (spec, status, input log).
pub const JOB_TTL: Duration = Duration::from_secs(24 * 3600);
/// Expiry of collected output.
pub const OUTPUT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Idle expiry of a blob.
pub const BLOB_IDLE_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
