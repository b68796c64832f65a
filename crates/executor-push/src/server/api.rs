//! The signed HTTP events API of the embedded server: `POST /apps/<id>/events` and
//! `/apps/<id>/batch_events`, verified exactly as Pusher does (so the publisher used against
//! Sockudo or Pusher is tested against it), and `GET /up` for readiness.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use super::AppState;
use crate::auth::is_valid_channel_name;
use crate::sign::verify_request;

/// Most channels one `/events` call may name (Pusher's limit).
const MAX_CHANNELS_PER_EVENT: usize = 100;

#[derive(Deserialize)]
struct EventBody {
    name: String,
    #[serde(default)]
    data: Value,
    #[serde(default)]
    channels: Option<Vec<String>>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    socket_id: Option<String>,
}

#[derive(Deserialize)]
struct BatchBody {
    batch: Vec<EventBody>,
}

/// A refused request: status and plain-text reason (as Pusher answers).
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.0, self.1).into_response()
    }
}

fn reply(status: StatusCode, message: impl Into<String>) -> Refusal {
    Refusal(status, message.into())
}

fn ok() -> Response {
    (StatusCode::OK, [("content-type", "application/json")], "{}").into_response()
}

/// Checks the app id and the request signature.
fn authenticate(state: &AppState, app_id: &str, uri: &Uri, body: &[u8]) -> Result<(), Refusal> {
    if app_id != state.creds.app_id {
        return Err(reply(StatusCode::NOT_FOUND, "Unknown app"));
    }
    let params: Vec<(String, String)> = serde_urlencoded::from_str(uri.query().unwrap_or_default())
        .map_err(|_| reply(StatusCode::BAD_REQUEST, "Invalid query string"))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    verify_request(
        &state.creds,
        "POST",
        uri.path(),
        &params,
        body,
        now,
        state.config.timestamp_skew.as_secs(),
    )
    .map_err(|e| {
        tracing::debug!(error = %e, "push HTTP API request refused");
        reply(StatusCode::UNAUTHORIZED, e.to_string())
    })
}

/// A validated event: its channels and its data as the string sent to clients.
struct Checked {
    name: String,
    channels: Vec<String>,
    data: String,
    socket_id: Option<String>,
}

fn check(state: &AppState, body: EventBody) -> Result<Checked, Refusal> {
    let channels = match (body.channels, body.channel) {
        (Some(list), None) => list,
        (None, Some(one)) => vec![one],
        (Some(mut list), Some(one)) => {
            list.push(one);
            list
        }
        (None, None) => return Err(reply(StatusCode::BAD_REQUEST, "Missing channels")),
    };
    if channels.is_empty() || channels.len() > MAX_CHANNELS_PER_EVENT {
        return Err(reply(
            StatusCode::BAD_REQUEST,
            "Between 1 and 100 channels per event",
        ));
    }
    if let Some(bad) = channels.iter().find(|c| !is_valid_channel_name(c)) {
        return Err(reply(
            StatusCode::BAD_REQUEST,
            format!("Invalid channel name: {bad}"),
        ));
    }
    if body.name.is_empty() || body.name.len() > 200 {
        return Err(reply(
            StatusCode::BAD_REQUEST,
            "Event name must be 1 to 200 characters",
        ));
    }
    let data = match body.data {
        Value::String(s) => s,
        other => other.to_string(),
    };
    if data.len() > state.config.max_event_bytes {
        return Err(reply(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Event data is {} bytes, over the {}-byte limit",
                data.len(),
                state.config.max_event_bytes
            ),
        ));
    }
    Ok(Checked {
        name: body.name,
        channels,
        data,
        socket_id: body.socket_id,
    })
}

fn deliver(state: &AppState, event: &Checked) {
    for channel in &event.channels {
        state.hub.broadcast(
            channel,
            &event.name,
            &event.data,
            event.socket_id.as_deref(),
        );
    }
}

pub(crate) async fn events(
    State(state): State<Arc<AppState>>,
    Path(app_id): Path<String>,
    uri: Uri,
    body: Bytes,
) -> Response {
    if let Err(r) = authenticate(&state, &app_id, &uri, &body) {
        return r.into_response();
    }
    let parsed: EventBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return reply(StatusCode::BAD_REQUEST, format!("Invalid JSON body: {e}"))
                .into_response()
        }
    };
    match check(&state, parsed) {
        Ok(event) => {
            deliver(&state, &event);
            ok()
        }
        Err(r) => r.into_response(),
    }
}

pub(crate) async fn batch_events(
    State(state): State<Arc<AppState>>,
    Path(app_id): Path<String>,
    uri: Uri,
    body: Bytes,
) -> Response {
    if let Err(r) = authenticate(&state, &app_id, &uri, &body) {
        return r.into_response();
    }
    let parsed: BatchBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return reply(StatusCode::BAD_REQUEST, format!("Invalid JSON body: {e}"))
                .into_response()
        }
    };
    if parsed.batch.len() > state.config.max_batch_events {
        return reply(
            StatusCode::BAD_REQUEST,
            format!(
                "Batch too large: at most {} events",
                state.config.max_batch_events
            ),
        )
        .into_response();
    }
    // Validate the whole batch first: it is delivered entirely or not at all, in order.
    let mut checked = Vec::with_capacity(parsed.batch.len());
    for event in parsed.batch {
        match check(&state, event) {
            Ok(c) => checked.push(c),
            Err(r) => return r.into_response(),
        }
    }
    for event in &checked {
        deliver(&state, event);
    }
    ok()
}

pub(crate) async fn up() -> &'static str {
    "OK"
}
