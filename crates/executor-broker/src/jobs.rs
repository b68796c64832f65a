//! Job records over any [`Broker`]: the one place that knows how a job's spec, status, input
//! log and output are stored, so the API and the worker cannot disagree.

use std::sync::Arc;
use std::time::Duration;

use executor_types::{keys, now_ms, JobSpec, JobState, JobStatus, RunResult};
use serde_json::Value;

use crate::{Broker, Result};

/// An entry of the durable input log (`job:<id>:input`): a stdin chunk or a control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputEntry {
    Chunk(String),
    Close,
    Kill,
    Start,
}

impl InputEntry {
    pub fn to_json(&self) -> String {
        match self {
            InputEntry::Chunk(c) => serde_json::json!({ "chunk": c }).to_string(),
            InputEntry::Close => r#"{"type":"stdin_close"}"#.into(),
            InputEntry::Kill => r#"{"type":"kill"}"#.into(),
            InputEntry::Start => r#"{"type":"start"}"#.into(),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(s).ok()?;
        if let Some(c) = v.get("chunk").and_then(Value::as_str) {
            return Some(InputEntry::Chunk(c.to_owned()));
        }
        match v.get("type").and_then(Value::as_str)? {
            "stdin_close" => Some(InputEntry::Close),
            "kill" => Some(InputEntry::Kill),
            "start" => Some(InputEntry::Start),
            _ => None,
        }
    }
}

/// Typed access to job records.
#[derive(Clone)]
pub struct JobStore {
    pub broker: Arc<dyn Broker>,
}

impl JobStore {
    pub fn new(broker: Arc<dyn Broker>) -> Self {
        Self { broker }
    }

    /// Writes the spec and the `queued` status, then enqueues the id unless the queue holds
    /// `max_depth` jobs already. Returns false (and leaves nothing behind) when full.
    pub async fn submit(&self, spec: &JobSpec, max_depth: u64) -> Result<bool> {
        let id = &spec.job_id;
        let status = JobStatus {
            job_id: id.parse().expect("job ids are UUIDs"),
            channel: keys::channel(id),
            language: spec.language.clone(),
            version: spec.version.clone(),
            state: JobState::Queued,
            updated_at_ms: now_ms(),
            reason: None,
        };
        let b = &self.broker;
        b.set(
            &keys::spec(id),
            &serde_json::to_string(spec).unwrap(),
            Some(keys::JOB_TTL),
        )
        .await?;
        b.set(
            &keys::status(id),
            &serde_json::to_string(&status).unwrap(),
            Some(keys::JOB_TTL),
        )
        .await?;
        if b.rpush_bounded(keys::QUEUE, id, max_depth).await?.is_none() {
            b.del(&keys::spec(id)).await?;
            b.del(&keys::status(id)).await?;
            return Ok(false);
        }
        Ok(true)
    }

    pub async fn spec(&self, id: &str) -> Result<Option<JobSpec>> {
        Ok(self
            .broker
            .get(&keys::spec(id))
            .await?
            .and_then(|s| serde_json::from_str(&s).ok()))
    }

    pub async fn status(&self, id: &str) -> Result<Option<JobStatus>> {
        Ok(self
            .broker
            .get(&keys::status(id))
            .await?
            .and_then(|s| serde_json::from_str(&s).ok()))
    }

    /// Moves a job to `state` (with an optional reason), stamping `updatedAtMs`. A terminal
    /// state is never left: returns false when the job already ended (or is unknown).
    pub async fn set_state(
        &self,
        id: &str,
        state: JobState,
        reason: Option<String>,
    ) -> Result<bool> {
        let Some(mut st) = self.status(id).await? else {
            return Ok(false);
        };
        if st.state.is_terminal() {
            return Ok(false);
        }
        st.state = state;
        st.updated_at_ms = now_ms();
        st.reason = reason;
        self.broker
            .set(
                &keys::status(id),
                &serde_json::to_string(&st).unwrap(),
                Some(keys::JOB_TTL),
            )
            .await?;
        Ok(true)
    }

    /// Appends to the durable input log, then publishes on the spec's pub/sub channel.
    pub async fn send_input(&self, id: &str, entry: InputEntry) -> Result<()> {
        let log = keys::input_log(id);
        self.broker.rpush(&log, &entry.to_json()).await?;
        self.broker.expire(&log, keys::JOB_TTL).await?;
        match &entry {
            InputEntry::Chunk(c) => {
                let msg = serde_json::json!({ "chunk": c }).to_string();
                self.broker.publish(&keys::stdin_channel(id), &msg).await
            }
            other => {
                self.broker
                    .publish(&keys::ctrl_channel(id), &other.to_json())
                    .await
            }
        }
    }

    /// Input log entries from `cursor` on, and how many log positions they span (an entry
    /// that does not parse is skipped but still counted).
    pub async fn input_since(&self, id: &str, cursor: usize) -> Result<(usize, Vec<InputEntry>)> {
        let raw = self
            .broker
            .lrange(&keys::input_log(id), cursor as i64, -1)
            .await?;
        Ok((
            raw.len(),
            raw.iter().filter_map(|s| InputEntry::parse(s)).collect(),
        ))
    }

    /// Drops the first `consumed` entries of the input log (the worker has delivered them), so
    /// a long interactive session does not grow the log without bound.
    pub async fn trim_input(&self, id: &str, consumed: usize) -> Result<()> {
        self.broker
            .ltrim(&keys::input_log(id), consumed as i64, -1)
            .await
    }

    /// Records the start flag (durable, with expiry) and publishes `start`.
    pub async fn start(&self, id: &str) -> Result<()> {
        self.broker
            .set(&keys::start(id), "1", Some(keys::START_TTL))
            .await?;
        self.broker
            .publish(&keys::ctrl_channel(id), &InputEntry::Start.to_json())
            .await
    }

    pub async fn started(&self, id: &str) -> Result<bool> {
        Ok(self.broker.get(&keys::start(id)).await?.is_some())
    }

    pub async fn store_output(&self, id: &str, result: &RunResult, ttl: Duration) -> Result<()> {
        self.broker
            .set(
                &keys::output(id),
                &serde_json::to_string(result).unwrap(),
                Some(ttl),
            )
            .await
    }

    pub async fn output(&self, id: &str) -> Result<Option<RunResult>> {
        Ok(self
            .broker
            .get(&keys::output(id))
            .await?
            .and_then(|s| serde_json::from_str(&s).ok()))
    }
}
