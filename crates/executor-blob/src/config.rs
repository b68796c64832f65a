//! Blob store configuration. Every environment variable is named once here; the binary may read
//! them with [`BlobConfig::from_env`] or build the struct itself.

use std::fmt;
use std::time::Duration;

use reqwest::Url;

/// S3 endpoint URL (`https://s3.us-east-1.amazonaws.com`, `http://minio:9000`, …). Unset: no external store.
pub const ENV_ENDPOINT: &str = "S3_ENDPOINT";
/// Region used in the signature. Default `us-east-1` (MinIO, Garage `garage`, R2 `auto`).
pub const ENV_REGION: &str = "S3_REGION";
/// Bucket name. Required with `S3_ENDPOINT`.
pub const ENV_BUCKET: &str = "S3_BUCKET";
/// Access key id. Required with `S3_ENDPOINT`.
pub const ENV_ACCESS_KEY_ID: &str = "S3_ACCESS_KEY_ID";
/// Secret access key. Required with `S3_ENDPOINT`.
pub const ENV_SECRET_ACCESS_KEY: &str = "S3_SECRET_ACCESS_KEY";
/// `true` (default): `endpoint/bucket/key` URLs; `false`: `bucket.endpoint/key` (virtual host).
pub const ENV_PATH_STYLE: &str = "S3_PATH_STYLE";
/// Validity of presigned upload URLs, seconds. Default 900 (15 min).
pub const ENV_URL_TTL_SECS: &str = "BLOB_URL_TTL_SECS";
/// Idle expiry of a blob: it is swept this long after its last use. Default 604800 (7 days).
pub const ENV_IDLE_TTL_SECS: &str = "BLOB_IDLE_TTL_SECS";
/// Lifetime of artifacts and of their download URLs, seconds. Default 86400 (24 h, the job output's).
pub const ENV_ARTIFACT_TTL_SECS: &str = "BLOB_ARTIFACT_TTL_SECS";
/// Period of the sweeper loop, seconds. Default 3600.
pub const ENV_SWEEP_INTERVAL_SECS: &str = "BLOB_SWEEP_INTERVAL_SECS";

/// Default validity of presigned upload URLs (the spec's 15 minutes).
pub const DEFAULT_URL_TTL: Duration = Duration::from_secs(15 * 60);
/// Default idle expiry of a blob (ARCHITECTURE: 7 days).
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// Default lifetime of artifacts (the collected output's 24 h).
pub const DEFAULT_ARTIFACT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Default sweeper period.
pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(3600);
/// Longest validity SigV4 allows for a presigned URL.
pub const MAX_PRESIGN_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// A secret that never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The value, for signing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Where the blob store is and how long things live in it.
#[derive(Debug, Clone)]
pub struct BlobConfig {
    /// Base URL of the S3 endpoint, without the bucket.
    pub endpoint: Url,
    /// Signing region.
    pub region: String,
    /// Bucket holding `blobs/` and `artifacts/`.
    pub bucket: String,
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: Secret,
    /// Path-style (`endpoint/bucket/key`) rather than virtual-host-style URLs.
    pub path_style: bool,
    /// Validity of presigned upload URLs.
    pub url_ttl: Duration,
    /// Idle expiry of blobs.
    pub idle_ttl: Duration,
    /// Lifetime of artifacts and of their signed download URLs (capped at 7 days by SigV4).
    pub artifact_ttl: Duration,
    /// Period of [`crate::Sweeper::run`].
    pub sweep_interval: Duration,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BlobConfigError {
    /// A variable required alongside `S3_ENDPOINT` is unset.
    #[error("{name} is required when {ENV_ENDPOINT} is set")]
    Missing {
        /// The variable.
        name: &'static str,
    },
    /// A variable has a value that does not parse.
    #[error("{name}={value:?}: {reason}")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// Why it is refused.
        reason: String,
    },
}

impl BlobConfig {
    /// A configuration with the default region, path style and durations.
    pub fn new(
        endpoint: Url,
        bucket: impl Into<String>,
        access_key_id: impl Into<String>,
        secret_access_key: Secret,
    ) -> Self {
        Self {
            endpoint,
            region: "us-east-1".to_owned(),
            bucket: bucket.into(),
            access_key_id: access_key_id.into(),
            secret_access_key,
            path_style: true,
            url_ttl: DEFAULT_URL_TTL,
            idle_ttl: DEFAULT_IDLE_TTL,
            artifact_ttl: DEFAULT_ARTIFACT_TTL,
            sweep_interval: DEFAULT_SWEEP_INTERVAL,
        }
    }

    /// Reads the process environment. `Ok(None)` when `S3_ENDPOINT` is unset or empty: no
    /// external store (the binary then starts the embedded one, or answers 501 if told not to).
    pub fn from_env() -> Result<Option<Self>, BlobConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`BlobConfig::from_env`], reading variables through `get`.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, BlobConfigError> {
        let get = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let Some(endpoint) = get(ENV_ENDPOINT) else {
            return Ok(None);
        };
        let endpoint = Url::parse(endpoint.trim()).map_err(|e| BlobConfigError::Invalid {
            name: ENV_ENDPOINT,
            value: endpoint.clone(),
            reason: e.to_string(),
        })?;
        let required = |name: &'static str| get(name).ok_or(BlobConfigError::Missing { name });
        let mut config = Self::new(
            endpoint,
            required(ENV_BUCKET)?,
            required(ENV_ACCESS_KEY_ID)?,
            Secret::new(required(ENV_SECRET_ACCESS_KEY)?),
        );
        if let Some(region) = get(ENV_REGION) {
            config.region = region;
        }
        if let Some(v) = get(ENV_PATH_STYLE) {
            config.path_style = match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => {
                    return Err(BlobConfigError::Invalid {
                        name: ENV_PATH_STYLE,
                        value: v,
                        reason: "expected true or false".to_owned(),
                    })
                }
            };
        }
        let secs = |name: &'static str, default: Duration| -> Result<Duration, BlobConfigError> {
            match get(name) {
                None => Ok(default),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if n > 0 => Ok(Duration::from_secs(n)),
                    _ => Err(BlobConfigError::Invalid {
                        name,
                        value: v,
                        reason: "expected a positive number of seconds".to_owned(),
                    }),
                },
            }
        };
        config.url_ttl = secs(ENV_URL_TTL_SECS, DEFAULT_URL_TTL)?;
        config.idle_ttl = secs(ENV_IDLE_TTL_SECS, DEFAULT_IDLE_TTL)?;
        config.artifact_ttl = secs(ENV_ARTIFACT_TTL_SECS, DEFAULT_ARTIFACT_TTL)?;
        config.sweep_interval = secs(ENV_SWEEP_INTERVAL_SECS, DEFAULT_SWEEP_INTERVAL)?;
        for (name, ttl) in [
            (ENV_URL_TTL_SECS, config.url_ttl),
            (ENV_ARTIFACT_TTL_SECS, config.artifact_ttl),
        ] {
            if ttl > MAX_PRESIGN_TTL {
                return Err(BlobConfigError::Invalid {
                    name,
                    value: ttl.as_secs().to_string(),
                    reason: "presigned URLs are valid for at most 7 days (604800 s)".to_owned(),
                });
            }
        }
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn no_endpoint_means_no_external_store() {
        assert!(BlobConfig::from_lookup(lookup(&[])).unwrap().is_none());
    }

    #[test]
    fn defaults_and_overrides() {
        let base = [
            (ENV_ENDPOINT, "http://127.0.0.1:9000"),
            (ENV_BUCKET, "b"),
            (ENV_ACCESS_KEY_ID, "ak"),
            (ENV_SECRET_ACCESS_KEY, "sk"),
        ];
        let c = BlobConfig::from_lookup(lookup(&base)).unwrap().unwrap();
        assert_eq!(c.region, "us-east-1");
        assert!(c.path_style);
        assert_eq!(c.url_ttl, Duration::from_secs(900));
        assert_eq!(c.idle_ttl, Duration::from_secs(7 * 24 * 3600));
        assert!(!format!("{c:?}").contains("sk\""));

        let mut more = base.to_vec();
        more.extend([(ENV_PATH_STYLE, "false"), (ENV_URL_TTL_SECS, "60")]);
        let c = BlobConfig::from_lookup(lookup(&more)).unwrap().unwrap();
        assert!(!c.path_style);
        assert_eq!(c.url_ttl, Duration::from_secs(60));

        let missing = BlobConfig::from_lookup(lookup(&base[..2])).unwrap_err();
        assert!(matches!(missing, BlobConfigError::Missing { .. }));
    }
}
