//! Pusher signatures: channel authorization (`<key>:<hex hmac>`) and the signed HTTP
//! events API (`auth_key`, `auth_timestamp`, `auth_version`, `body_md5`, `auth_signature`).
//!
//! Both are HMAC-SHA256 with the app secret, hex encoded. They live together so the
//! publisher that signs and the embedded server that verifies can never disagree, and so
//! users signing channel auth in their own backend have one function to call.

use std::fmt;

use hmac::{Hmac, Mac};
use md5::{Digest, Md5};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// A secret that never prints (`Debug` and `Display` show `<redacted>`).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret string.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself, for signing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Self::new(s)
    }
}

/// A Pusher app: id (HTTP API path), key (public, clients connect with it) and secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppCredentials {
    /// App id, as in `/apps/<app_id>/events`.
    pub app_id: String,
    /// Public app key, as in `ws://host/app/<key>` and in `<key>:<signature>`.
    pub key: String,
    /// App secret; signs channel auth and HTTP API requests.
    pub secret: Secret,
}

impl AppCredentials {
    /// Credentials from their three parts.
    pub fn new(
        app_id: impl Into<String>,
        key: impl Into<String>,
        secret: impl Into<Secret>,
    ) -> Self {
        Self {
            app_id: app_id.into(),
            key: key.into(),
            secret: secret.into(),
        }
    }
}

/// Hex HMAC-SHA256 of `message` with `secret`.
pub fn hmac_sha256_hex(secret: &str, message: &str) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// The hex signature of a private channel subscription: HMAC-SHA256 of
/// `<socket_id>:<channel>` with the app secret.
pub fn sign_channel(secret: &str, socket_id: &str, channel: &str) -> String {
    hmac_sha256_hex(secret, &format!("{socket_id}:{channel}"))
}

/// The `auth` value a client sends in `pusher:subscribe` for a private channel:
/// `<app_key>:<hex hmac-sha256 of "socket_id:channel">`.
///
/// This is what your backend returns as `{"auth": ...}` to pusher-js's channel
/// authorization request.
pub fn channel_auth(key: &str, secret: &str, socket_id: &str, channel: &str) -> String {
    format!("{key}:{}", sign_channel(secret, socket_id, channel))
}

/// Checks a client's `auth` value for a private channel, in constant time.
pub fn verify_channel_auth(
    creds: &AppCredentials,
    socket_id: &str,
    channel: &str,
    auth: &str,
) -> bool {
    let expected = channel_auth(&creds.key, creds.secret.expose(), socket_id, channel);
    expected.as_bytes().ct_eq(auth.as_bytes()).into()
}

/// Hex MD5 of a request body, as sent in `body_md5`.
pub fn body_md5(body: &[u8]) -> String {
    hex::encode(Md5::digest(body))
}

/// The string Pusher signs for an HTTP API request: `METHOD\npath\nsorted query`, where the
/// query is `key=value` pairs (without `auth_signature`) sorted by key and joined with `&`.
pub fn string_to_sign(method: &str, path: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<(String, &str)> = params
        .iter()
        .filter(|(k, _)| k != "auth_signature")
        .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str()))
        .collect();
    sorted.sort();
    let query = sorted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    format!("{}\n{path}\n{query}", method.to_ascii_uppercase())
}

/// The query parameters of a signed HTTP API request, `auth_signature` last.
///
/// `body_md5` is included only for a non-empty body, as Pusher specifies.
pub fn sign_request(
    creds: &AppCredentials,
    method: &str,
    path: &str,
    body: &[u8],
    timestamp: u64,
) -> Vec<(String, String)> {
    let mut params = vec![
        ("auth_key".to_owned(), creds.key.clone()),
        ("auth_timestamp".to_owned(), timestamp.to_string()),
        ("auth_version".to_owned(), "1.0".to_owned()),
    ];
    if !body.is_empty() {
        params.push(("body_md5".to_owned(), body_md5(body)));
    }
    let signature = hmac_sha256_hex(
        creds.secret.expose(),
        &string_to_sign(method, path, &params),
    );
    params.push(("auth_signature".to_owned(), signature));
    params
}

/// Why a signed HTTP API request was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestAuthError {
    /// A required query parameter is absent.
    #[error("missing query parameter {0}")]
    MissingParam(&'static str),
    /// `auth_key` is not this app's key.
    #[error("unknown auth_key")]
    UnknownKey,
    /// `auth_version` is not `1.0`.
    #[error("unsupported auth_version")]
    BadVersion,
    /// `auth_timestamp` is not a number or more than the allowed skew away from now.
    #[error("auth_timestamp expired or invalid (allowed skew {skew_secs} s)")]
    BadTimestamp {
        /// The allowed difference from the server clock.
        skew_secs: u64,
    },
    /// `body_md5` does not match the body (or is missing for a non-empty body).
    #[error("body_md5 does not match the body")]
    BodyMd5Mismatch,
    /// `auth_signature` is wrong.
    #[error("invalid signature")]
    BadSignature,
}

/// Verifies a signed HTTP API request against `creds` (constant-time signature check).
pub fn verify_request(
    creds: &AppCredentials,
    method: &str,
    path: &str,
    params: &[(String, String)],
    body: &[u8],
    now_secs: u64,
    max_skew_secs: u64,
) -> Result<(), RequestAuthError> {
    let get = |name: &'static str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .ok_or(RequestAuthError::MissingParam(name))
    };
    let key = get("auth_key")?;
    let timestamp = get("auth_timestamp")?;
    let version = get("auth_version")?;
    let signature = get("auth_signature")?;
    if key != creds.key {
        return Err(RequestAuthError::UnknownKey);
    }
    if version != "1.0" {
        return Err(RequestAuthError::BadVersion);
    }
    let ts: u64 = timestamp
        .parse()
        .map_err(|_| RequestAuthError::BadTimestamp {
            skew_secs: max_skew_secs,
        })?;
    if ts.abs_diff(now_secs) > max_skew_secs {
        return Err(RequestAuthError::BadTimestamp {
            skew_secs: max_skew_secs,
        });
    }
    if !body.is_empty() {
        let md5 = get("body_md5").map_err(|_| RequestAuthError::BodyMd5Mismatch)?;
        if md5 != body_md5(body) {
            return Err(RequestAuthError::BodyMd5Mismatch);
        }
    }
    let expected = hmac_sha256_hex(creds.secret.expose(), &string_to_sign(method, path, params));
    if bool::from(expected.as_bytes().ct_eq(signature.as_bytes())) {
        Ok(())
    } else {
        Err(RequestAuthError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Pusher's documented vectors (https://pusher.com/docs/channels/library_auth_reference/).
    const KEY: &str = "278d425bdf160c739803";
    const SECRET: &str = "7ad3773142a6692b25b8";

    #[test]
    fn private_channel_vector() {
        assert_eq!(
            sign_channel(SECRET, "1234.1234", "private-foobar"),
            "58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4"
        );
        assert_eq!(
            channel_auth(KEY, SECRET, "1234.1234", "private-foobar"),
            format!("{KEY}:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4")
        );
    }

    #[test]
    fn http_api_vector() {
        let creds = AppCredentials::new("3", KEY, SECRET);
        let body = br#"{"name":"foo","channels":["project-3"],"data":"{\"some\":\"data\"}"}"#;
        assert_eq!(body_md5(body), "ec365a775a4cd0599faeb73354201b6f");
        let params = sign_request(&creds, "POST", "/apps/3/events", body, 1353088179);
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(
            get("body_md5").as_deref(),
            Some("ec365a775a4cd0599faeb73354201b6f")
        );
        assert_eq!(
            get("auth_signature").as_deref(),
            Some("da454824c97ba181a32ccc17a72625ba02771f50b50e1e7430e47a1f3f457e6c")
        );
        assert_eq!(
            verify_request(
                &creds,
                "POST",
                "/apps/3/events",
                &params,
                body,
                1353088179,
                600
            ),
            Ok(())
        );
    }

    #[test]
    fn empty_body_has_no_md5() {
        let creds = AppCredentials::new("3", KEY, SECRET);
        let params = sign_request(&creds, "GET", "/apps/3/channels", b"", 1353088179);
        assert!(params.iter().all(|(k, _)| k != "body_md5"));
        assert_eq!(
            verify_request(
                &creds,
                "GET",
                "/apps/3/channels",
                &params,
                b"",
                1353088179,
                600
            ),
            Ok(())
        );
    }

    #[test]
    fn tampering_is_refused() {
        let creds = AppCredentials::new("3", KEY, SECRET);
        let body = br#"{"name":"foo","channel":"a","data":"x"}"#;
        let params = sign_request(&creds, "POST", "/apps/3/events", body, 1000);
        let other = br#"{"name":"foo","channel":"b","data":"x"}"#;
        assert_eq!(
            verify_request(&creds, "POST", "/apps/3/events", &params, other, 1000, 600),
            Err(RequestAuthError::BodyMd5Mismatch)
        );
        assert_eq!(
            verify_request(&creds, "POST", "/apps/4/events", &params, body, 1000, 600),
            Err(RequestAuthError::BadSignature)
        );
        assert!(matches!(
            verify_request(&creds, "POST", "/apps/3/events", &params, body, 5000, 600),
            Err(RequestAuthError::BadTimestamp { .. })
        ));
        let wrong = AppCredentials::new("3", KEY, "other-secret");
        assert_eq!(
            verify_request(&wrong, "POST", "/apps/3/events", &params, body, 1000, 600),
            Err(RequestAuthError::BadSignature)
        );
        assert!(verify_channel_auth(
            &creds,
            "1.2",
            "private-x",
            &channel_auth(KEY, SECRET, "1.2", "private-x")
        ));
        assert!(!verify_channel_auth(
            &creds,
            "1.3",
            "private-x",
            &channel_auth(KEY, SECRET, "1.2", "private-x")
        ));
    }

    #[test]
    fn secret_does_not_print() {
        let creds = AppCredentials::new("3", KEY, SECRET);
        assert!(!format!("{creds:?}").contains(SECRET));
    }
}
