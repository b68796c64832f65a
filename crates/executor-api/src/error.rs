//! The HTTP error mapping: every failure becomes a JSON body `{error, details?, retryAfterMs?,
//! capBytes?}` with the spec's status code. Internal causes are logged, never sent.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use executor_types::{ErrorBody, ErrorDetail};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                error: message.into(),
                details: vec![],
                retry_after_ms: None,
                cap_bytes: None,
            },
        }
    }

    pub fn invalid(message: impl Into<String>, details: Vec<ErrorDetail>) -> Self {
        let mut e = Self::new(StatusCode::BAD_REQUEST, message);
        e.body.details = details;
        e
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    pub fn job_not_found(id: &str) -> Self {
        Self::not_found(format!("Job not found: {id}"))
    }

    pub fn too_many(message: impl Into<String>, retry_after_ms: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, message);
        e.body.retry_after_ms = Some(retry_after_ms);
        e
    }

    /// A service-side failure: logged with its cause, answered with a generic 503.
    pub fn internal(context: &str, err: impl std::fmt::Display) -> Self {
        tracing::error!(%err, "{context}");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{context}; try again later"),
        )
    }
}

impl From<executor_broker::BrokerError> for ApiError {
    fn from(e: executor_broker::BrokerError) -> Self {
        ApiError::internal("the broker is unavailable", e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut v = serde_json::to_value(&self.body).unwrap_or_default();
        // `details` is part of 400 bodies only.
        if self.status != StatusCode::BAD_REQUEST {
            if let Some(o) = v.as_object_mut() {
                o.remove("details");
            }
        } else if let Some(o) = v.as_object_mut() {
            o.entry("details").or_insert(serde_json::json!([]));
        }
        (self.status, Json(v)).into_response()
    }
}
