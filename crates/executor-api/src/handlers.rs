//! One function per route; each maps every failure to its spec status through [`ApiError`].

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use executor_broker::jobs::InputEntry;
use executor_types::{
    files, keys, now_ms, ExecuteRequest, ExecuteResponse, JobSpec, JobState, JobStatus, RunResult,
};
use serde_json::{json, Value};

use crate::{ApiError, AppState};

type Shared = State<Arc<AppState>>;

fn ok() -> Json<Value> {
    Json(json!({ "ok": true }))
}

/// Reads a JSON body: an oversized body is 413, anything that is not JSON is 400.
fn parse_json(body: Result<Bytes, BytesRejection>) -> Result<Value, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "request body is too large")
        } else {
            ApiError::invalid(format!("cannot read the request body: {e}"), vec![])
        }
    })?;
    if bytes.is_empty() {
        return Err(ApiError::invalid(
            "request body is empty; a JSON object is required",
            vec![executor_types::detail("/", "expected a JSON object")],
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::invalid(
            "request body is not valid JSON",
            vec![executor_types::detail("/", e.to_string())],
        )
    })
}

fn validate<T: serde::de::DeserializeOwned>(
    state: &AppState,
    ty: &str,
    v: Value,
) -> Result<T, ApiError> {
    state
        .validator
        .parse(ty, v)
        .map_err(|d| ApiError::invalid("invalid request body", d))
}

/// A job id in a path: anything that is not a known job is 404 with the spec's text.
async fn known_job(state: &AppState, id: &str) -> Result<JobStatus, ApiError> {
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(ApiError::job_not_found(id));
    }
    state
        .jobs
        .status(id)
        .await?
        .ok_or_else(|| ApiError::job_not_found(id))
}

pub async fn health(State(state): Shared) -> Response {
    match state.jobs.broker.ping().await {
        Ok(()) => Json(json!({ "status": "ok" })).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "health: broker unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable", "error": "broker unreachable" })),
            )
                .into_response()
        }
    }
}

pub async fn openapi() -> Json<Value> {
    static DOC: OnceLock<Value> = OnceLock::new();
    Json(DOC.get_or_init(crate::openapi_document).clone())
}

pub async fn schema() -> Response {
    (
        [(header::CONTENT_TYPE, "application/schema+json")],
        executor_types::SCHEMA_JSON,
    )
        .into_response()
}

pub async fn execute(
    State(state): Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let value = parse_json(body)?;
    let req: ExecuteRequest = validate(&state, "ExecuteRequest", value)?;
    files::check_files(&req.files).map_err(|d| ApiError::invalid("invalid files", d))?;
    let lang = state
        .languages
        .resolve(&req.language, req.version.as_deref().map(|v| v.as_str()))
        .map_err(|d| ApiError::invalid("unknown language or version", vec![d]))?;
    let limits = executor_types::limits::resolve(
        &lang.manifest.default_limits,
        req.limits.as_ref(),
        &state.config.max_limits,
    )
    .map_err(|d| ApiError::invalid("limits exceed the server maxima", d))?;
    let total: u64 = req.files.iter().map(files::inline_size).sum();
    if total > state.config.max_files_bytes {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "files total {total} bytes (decoded), more than MAX_FILES_BYTES ({}); upload large inputs as blobs",
                state.config.max_files_bytes
            ),
        ));
    }
    let id = uuid::Uuid::new_v4();
    let spec = JobSpec {
        job_id: id.to_string(),
        language: lang.name().to_owned(),
        version: lang.version.clone(),
        files: req.files,
        limits,
        collect_output: req.collect_output,
        created_at_ms: now_ms(),
    };
    if !state
        .jobs
        .submit(&spec, state.config.max_queue_depth)
        .await?
    {
        return Err(ApiError::too_many(
            format!(
                "the job queue is full ({} jobs); retry later",
                state.config.max_queue_depth
            ),
            1000,
        ));
    }
    tracing::info!(job = %id, language = %spec.language, version = %spec.version, "job queued");
    let resp = ExecuteResponse {
        job_id: id,
        channel: keys::channel(&spec.job_id),
        status: JobState::Queued,
    };
    Ok((StatusCode::ACCEPTED, Json(resp)).into_response())
}

pub async fn job_status(
    State(state): Shared,
    Path(id): Path<String>,
) -> Result<Json<JobStatus>, ApiError> {
    Ok(Json(known_job(&state, &id).await?))
}

pub async fn start(State(state): Shared, Path(id): Path<String>) -> Result<Response, ApiError> {
    let st = known_job(&state, &id).await?;
    // `stage{queued}` goes out before the flag: a worker that claimed the job waits for the
    // flag, so its own stage events cannot overtake this one.
    if matches!(st.state, JobState::Queued | JobState::Starting) {
        if let Some(ev) = &state.events {
            ev.publish(&keys::channel(&id), "stage", json!({ "phase": "queued" }))
                .await;
        }
    }
    state.jobs.start(&id).await?;
    Ok((StatusCode::ACCEPTED, ok()).into_response())
}

fn ended(id: &str, st: &JobStatus) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        format!(
            "job {id} has ended ({}); it takes no more input",
            serde_json::to_value(st.state)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("")
        ),
    )
}

pub async fn stdin(
    State(state): Shared,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let value = parse_json(body)?;
    let msg: executor_types::StdinMessage = validate(&state, "StdinMessage", value)?;
    let st = known_job(&state, &id).await?;
    if st.state.is_terminal() {
        return Err(ended(&id, &st));
    }
    let b = &state.jobs.broker;
    let now = now_ms();
    let frames = b
        .incr_by(
            &keys::stdin_rate(&id, now / 1000),
            1,
            Some(std::time::Duration::from_secs(2)),
        )
        .await?;
    if frames as u64 > state.config.stdin_frames_per_sec {
        return Err(ApiError::too_many(
            format!(
                "stdin frame rate cap exceeded ({} frames per second)",
                state.config.stdin_frames_per_sec
            ),
            1000 - now % 1000,
        ));
    }
    let len = msg.chunk.len() as i64;
    let pending = b
        .incr_by(&keys::stdin_pending(&id), len, Some(keys::JOB_TTL))
        .await?;
    if pending as u64 > state.config.stdin_pending_cap {
        b.incr_by(&keys::stdin_pending(&id), -len, None).await?;
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "stdin pending-byte cap exceeded: at most {} bytes may wait for the program",
                state.config.stdin_pending_cap
            ),
        );
        e.body.cap_bytes = Some(state.config.stdin_pending_cap);
        return Err(e);
    }
    state
        .jobs
        .send_input(&id, InputEntry::Chunk(msg.chunk))
        .await?;
    Ok(ok())
}

pub async fn stdin_close(
    State(state): Shared,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let st = known_job(&state, &id).await?;
    if st.state.is_terminal() {
        return Err(ended(&id, &st));
    }
    state.jobs.send_input(&id, InputEntry::Close).await?;
    Ok(ok())
}

pub async fn kill(State(state): Shared, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let st = known_job(&state, &id).await?;
    if st.state.is_terminal() {
        return Ok(ok());
    }
    let b = &state.jobs.broker;
    b.set(&keys::killed(&id), "1", Some(keys::JOB_TTL)).await?;
    state.jobs.send_input(&id, InputEntry::Kill).await?;
    // Still in the queue: no worker will see it, so the API ends it here.
    if b.lrem(keys::QUEUE, 1, &id).await? > 0 {
        state
            .jobs
            .set_state(
                &id,
                JobState::Killed,
                Some("killed before it started".into()),
            )
            .await?;
        let result = RunResult::killed();
        if let Some(spec) = state.jobs.spec(&id).await? {
            if spec.collect_output {
                state
                    .jobs
                    .store_output(&id, &result, state.config.output_ttl)
                    .await?;
            }
        }
        if let Some(ev) = &state.events {
            let data = serde_json::to_value(result.event()).unwrap_or_default();
            ev.publish(&keys::channel(&id), "result", data.clone())
                .await;
            ev.publish(&keys::cache_channel(&id), "result", data).await;
        }
    }
    Ok(ok())
}

pub async fn output(
    State(state): Shared,
    Path(id): Path<String>,
) -> Result<Json<RunResult>, ApiError> {
    let st = known_job(&state, &id).await?;
    if let Some(r) = state.jobs.output(&id).await? {
        return Ok(Json(r));
    }
    let collected = state.jobs.spec(&id).await?.map(|s| s.collect_output);
    Err(ApiError::not_found(match collected {
        Some(false) => {
            format!("output of job {id} was not collected; submit with collectOutput: true")
        }
        _ if !st.state.is_terminal() => {
            format!("output of job {id} is not available yet: the job has not ended")
        }
        _ => format!("output of job {id} has expired"),
    }))
}

pub async fn languages(State(state): Shared) -> Json<Value> {
    Json(serde_json::to_value(state.languages.infos()).unwrap_or_default())
}

fn blobs_off() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "the blob store is not configured on this server; send files inline",
    )
}

fn check_hashes(hashes: &[String]) -> Result<(), ApiError> {
    let details: Vec<_> = hashes
        .iter()
        .enumerate()
        .filter_map(|(i, h)| {
            files::parse_ref(h)
                .err()
                .map(|m| executor_types::detail(format!("/hashes/{i}"), m))
        })
        .collect();
    if details.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("malformed hash", details))
    }
}

/// The blob routes: 501 without a store, then the body checked against the schema (each hash
/// `sha256:<64 lowercase hex>`, 400 with a detail per bad one). Returns the hashes.
fn blob_request(
    state: &AppState,
    ty: &str,
    body: Result<Bytes, BytesRejection>,
) -> Result<(Arc<dyn crate::BlobService>, Vec<String>), ApiError> {
    let Some(blobs) = state.blobs.clone() else {
        return Err(blobs_off());
    };
    let value = parse_json(body)?;
    state
        .validator
        .validate(ty, &value)
        .map_err(|d| ApiError::invalid("malformed hash", d))?;
    let hashes: Vec<String> = value["hashes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|h| h.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    check_hashes(&hashes)?;
    Ok((blobs, hashes))
}

fn store_down(e: anyhow::Error) -> ApiError {
    ApiError::internal("the blob store is unavailable", e)
}

pub async fn blob_check(
    State(state): Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let (blobs, hashes) = blob_request(&state, "BlobCheckRequest", body)?;
    Ok(Json(blobs.check(hashes).await.map_err(store_down)?).into_response())
}

pub async fn blob_finalize(
    State(state): Shared,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let (blobs, hashes) = blob_request(&state, "BlobFinalizeRequest", body)?;
    Ok(Json(blobs.finalize(hashes).await.map_err(store_down)?).into_response())
}

/// Accepts JSON and the form encoding pusher-js sends.
pub async fn channel_auth(
    State(state): Shared,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let missing = || ApiError::invalid("Missing required fields: socket_id, channel_name", vec![]);
    let bytes = body.map_err(|_| missing())?;
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let fields: HashMap<String, Value> = if form {
        serde_urlencoded::from_bytes::<HashMap<String, String>>(&bytes)
            .map(|m| m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
            .unwrap_or_default()
    } else {
        serde_json::from_slice(&bytes).unwrap_or_default()
    };
    let get = |k: &str| {
        fields
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let (Some(socket_id), Some(channel)) = (get("socket_id"), get("channel_name")) else {
        return Err(missing());
    };
    if !channel.starts_with("private-run-") {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Only private-run-<jobId> channels can be authorized here",
        ));
    }
    let Some(signer) = &state.signer else {
        return Err(ApiError::internal(
            "channel auth",
            "no push credentials configured",
        ));
    };
    Ok(Json(json!({ "auth": signer(&socket_id, &channel) })))
}
