//! The logic behind `POST /v1/channel-auth`: which channels may be authorized and with which
//! error texts (the spec's), independent of the HTTP framework so the API crate only maps
//! [`ChannelAuthError`] to a status code.
//!
//! pusher-js's default authorizer posts `application/x-www-form-urlencoded`
//! (`socket_id=…&channel_name=…`); the spec documents a JSON body. [`parse_channel_auth_request`]
//! accepts both, so the official client works against the route unchanged.

use serde::Deserialize;

use crate::sign::{channel_auth, AppCredentials};

/// Prefix of the job output channels (`private-run-<jobId>`), the only ones the demo route signs.
pub const RUN_CHANNEL_PREFIX: &str = "private-run-";
/// Prefix of the cache channel that carries a job's last `result` event for late joiners.
pub const CACHE_RUN_CHANNEL_PREFIX: &str = "private-cache-run-";

/// `private-run-<jobId>`: the channel a job's events are pushed on.
pub fn run_channel(job_id: &str) -> String {
    format!("{RUN_CHANNEL_PREFIX}{job_id}")
}

/// `private-cache-run-<jobId>`: the cache channel that replays the job's `result` to late joiners.
pub fn cache_run_channel(job_id: &str) -> String {
    format!("{CACHE_RUN_CHANNEL_PREFIX}{job_id}")
}

/// The body of a channel-auth request (JSON or form-encoded).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ChannelAuthRequest {
    /// The socket id the push server gave the client in `pusher:connection_established`.
    pub socket_id: Option<String>,
    /// The channel to authorize.
    pub channel_name: Option<String>,
}

/// Why a channel-auth request is refused. `Display` is the text for the `error` field.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ChannelAuthError {
    /// A field is missing or the body is unreadable: HTTP 400 (the spec's text).
    #[error("Missing required fields: socket_id, channel_name")]
    MissingFields,
    /// The socket id is not of Pusher's `<digits>.<digits>` form: HTTP 400.
    #[error("Invalid socket_id")]
    InvalidSocketId,
    /// The channel is not a `private-run-<jobId>` channel: HTTP 403 (the spec's text).
    #[error("Only private-run-<jobId> channels can be authorized here")]
    ChannelNotAllowed,
}

impl ChannelAuthError {
    /// True for the 403 case (channel not allowed); false for the 400 cases.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Self::ChannelNotAllowed)
    }
}

/// Parses a channel-auth request body: JSON, or form-encoded when `content_type` says so
/// (pusher-js's default). Anything unreadable is [`ChannelAuthError::MissingFields`].
pub fn parse_channel_auth_request(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<ChannelAuthRequest, ChannelAuthError> {
    let is_form = content_type
        .map(|ct| {
            ct.trim_start()
                .starts_with("application/x-www-form-urlencoded")
        })
        .unwrap_or(false);
    let parsed = if is_form {
        serde_urlencoded::from_bytes::<ChannelAuthRequest>(body).ok()
    } else {
        serde_json::from_slice::<ChannelAuthRequest>(body).ok()
    };
    parsed.ok_or(ChannelAuthError::MissingFields)
}

/// True for Pusher's socket id form, `<digits>.<digits>`.
pub fn is_valid_socket_id(socket_id: &str) -> bool {
    let mut parts = socket_id.split('.');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| !p.is_empty() && p.len() <= 20 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// True for a name Pusher accepts as a channel: 1–164 chars of `A-Za-z0-9_-=@,.;`.
pub fn is_valid_channel_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 164
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-=@,.;".contains(&b))
}

/// Authorizes a `private-run-<jobId>` channel for the demo route: validates the request the
/// way the spec says and returns the `auth` value (`<app_key>:<hex hmac>`).
pub fn authorize_run_channel(
    creds: &AppCredentials,
    request: &ChannelAuthRequest,
) -> Result<String, ChannelAuthError> {
    let (Some(socket_id), Some(channel)) = (
        request.socket_id.as_deref().filter(|s| !s.is_empty()),
        request.channel_name.as_deref().filter(|s| !s.is_empty()),
    ) else {
        return Err(ChannelAuthError::MissingFields);
    };
    if !channel.starts_with(RUN_CHANNEL_PREFIX)
        || channel.len() == RUN_CHANNEL_PREFIX.len()
        || !is_valid_channel_name(channel)
    {
        return Err(ChannelAuthError::ChannelNotAllowed);
    }
    if !is_valid_socket_id(socket_id) {
        return Err(ChannelAuthError::InvalidSocketId);
    }
    Ok(channel_auth(
        &creds.key,
        creds.secret.expose(),
        socket_id,
        channel,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds() -> AppCredentials {
        AppCredentials::new("1", "key", "secret")
    }

    #[test]
    fn parses_json_and_form() {
        let json = parse_channel_auth_request(
            Some("application/json"),
            br#"{"socket_id":"1.2","channel_name":"private-run-a"}"#,
        )
        .unwrap();
        let form = parse_channel_auth_request(
            Some("application/x-www-form-urlencoded; charset=UTF-8"),
            b"socket_id=1.2&channel_name=private-run-a",
        )
        .unwrap();
        assert_eq!(json, form);
        assert_eq!(
            parse_channel_auth_request(None, b"not json"),
            Err(ChannelAuthError::MissingFields)
        );
    }

    #[test]
    fn spec_errors() {
        let req = |s: Option<&str>, c: Option<&str>| ChannelAuthRequest {
            socket_id: s.map(str::to_owned),
            channel_name: c.map(str::to_owned),
        };
        assert_eq!(
            authorize_run_channel(&creds(), &req(None, Some("private-run-a"))),
            Err(ChannelAuthError::MissingFields)
        );
        assert_eq!(
            ChannelAuthError::MissingFields.to_string(),
            "Missing required fields: socket_id, channel_name"
        );
        let err =
            authorize_run_channel(&creds(), &req(Some("1.2"), Some("private-other"))).unwrap_err();
        assert!(err.is_forbidden());
        assert_eq!(
            err.to_string(),
            "Only private-run-<jobId> channels can be authorized here"
        );
        assert_eq!(
            authorize_run_channel(&creds(), &req(Some("1.2:x"), Some("private-run-a"))),
            Err(ChannelAuthError::InvalidSocketId)
        );
        assert_eq!(
            authorize_run_channel(&creds(), &req(Some("1.2"), Some("private-run-a"))).unwrap(),
            channel_auth("key", "secret", "1.2", "private-run-a")
        );
    }
}
