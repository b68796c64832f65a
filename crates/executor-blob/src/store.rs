//! [`BlobStore`]: the S3 client. Every request is a SigV4-presigned URL (signed by `rusty-s3`,
//! no runtime of its own) sent with `reqwest`, so the URLs handed to clients and the requests of
//! the service go through one signing path. Bodies are streamed both ways: nothing here holds a
//! whole object in memory.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use rusty_s3::actions::ListObjectsV2;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::config::{BlobConfig, MAX_PRESIGN_TTL};
use crate::error::BlobError;
use crate::hash::{BlobHash, CHECKSUM_HEADER};

/// Validity of the URLs the service signs for its own requests.
const INTERNAL_TTL: Duration = Duration::from_secs(5 * 60);

/// A streamed object body.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, BlobError>> + Send>>;

/// An object being downloaded.
pub struct ObjectBody {
    /// `Content-Length` as announced by the store.
    pub len: Option<u64>,
    /// The bytes, chunk by chunk as they arrive.
    pub stream: ByteStream,
}

/// One entry of a listing.
#[derive(Debug, Clone)]
pub struct ListedObject {
    /// Object key.
    pub key: String,
    /// When the store last wrote it.
    pub last_modified: Option<jiff::Timestamp>,
    /// Size in bytes.
    pub size: Option<u64>,
}

struct Inner {
    config: BlobConfig,
    bucket: Bucket,
    credentials: Credentials,
    http: reqwest::Client,
}

/// Client of the S3-compatible store holding `blobs/<hex>` and `artifacts/<jobId>/<name>`.
/// Cheap to clone.
#[derive(Clone)]
pub struct BlobStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStore")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl BlobStore {
    /// A client for `config`'s bucket. Makes no request.
    pub fn new(config: BlobConfig) -> Result<Self, BlobError> {
        let style = if config.path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let bucket = Bucket::new(
            config.endpoint.clone(),
            style,
            config.bucket.clone(),
            config.region.clone(),
        )
        .map_err(|e| BlobError::Config {
            reason: format!(
                "endpoint {} / bucket {}: {e}",
                config.endpoint, config.bucket
            ),
        })?;
        let credentials = Credentials::new(
            config.access_key_id.clone(),
            config.secret_access_key.expose().to_owned(),
        );
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| BlobError::Config {
                reason: format!("HTTP client: {e}"),
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                bucket,
                credentials,
                http,
            }),
        })
    }

    /// The configuration this client was built from.
    pub fn config(&self) -> &BlobConfig {
        &self.inner.config
    }

    /// The `rusty-s3` bucket (for signing requests this API does not cover).
    pub fn bucket(&self) -> &Bucket {
        &self.inner.bucket
    }

    /// The signing credentials.
    pub fn credentials(&self) -> &Credentials {
        &self.inner.credentials
    }

    /// The shared HTTP client.
    pub fn http(&self) -> &reqwest::Client {
        &self.inner.http
    }

    /// Whether `blobs/<hex>` exists (a `HEAD`; no bytes are read).
    pub async fn exists(&self, hash: &BlobHash) -> Result<bool, BlobError> {
        Ok(self.head(&hash.key()).await?.is_some())
    }

    /// `HEAD key`: the object's size if it exists.
    pub async fn head(&self, key: &str) -> Result<Option<u64>, BlobError> {
        let url = self
            .bucket()
            .head_object(Some(self.credentials()), key)
            .sign(INTERNAL_TTL);
        let resp = self
            .http()
            .head(url)
            .send()
            .await
            .map_err(|e| BlobError::request("HEAD", key, e))?;
        match resp.status() {
            StatusCode::NOT_FOUND => Ok(None),
            s if s.is_success() => Ok(Some(
                resp.headers()
                    .get(CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok()?.parse().ok())
                    .unwrap_or(0),
            )),
            _ => Err(BlobError::status("HEAD", key, resp).await),
        }
    }

    /// A presigned `PUT` of `blobs/<hex>`, valid for the configured upload window. The signature
    /// covers the [`CHECKSUM_HEADER`] with the blob's digest: the uploader must send that header
    /// (value [`BlobHash::checksum_header_value`]) and the store refuses bytes that do not match.
    pub fn presign_put(&self, hash: &BlobHash) -> Url {
        self.presign_put_at(hash, jiff::Timestamp::now())
    }

    /// [`BlobStore::presign_put`] as if signed at `time` (deterministic expiry tests).
    pub fn presign_put_at(&self, hash: &BlobHash, time: jiff::Timestamp) -> Url {
        let key = hash.key();
        let mut action = self.bucket().put_object(Some(self.credentials()), &key);
        action
            .headers_mut()
            .insert(CHECKSUM_HEADER, hash.checksum_header_value());
        action.sign_with_time(self.inner.config.url_ttl, &time)
    }

    /// A presigned `GET` of `key`, valid for `ttl` (at most 7 days).
    pub fn presign_get(&self, key: &str, ttl: Duration) -> Url {
        self.bucket()
            .get_object(Some(self.credentials()), key)
            .sign(ttl.min(MAX_PRESIGN_TTL))
    }

    /// Streams `blobs/<hex>`; [`BlobError::Missing`] if absent.
    pub async fn get_stream(&self, hash: &BlobHash) -> Result<ObjectBody, BlobError> {
        self.get_object(&hash.key())
            .await?
            .ok_or_else(|| BlobError::Missing { hash: hash.clone() })
    }

    /// Streams `key`; `None` if absent.
    pub async fn get_object(&self, key: &str) -> Result<Option<ObjectBody>, BlobError> {
        let url = self
            .bucket()
            .get_object(Some(self.credentials()), key)
            .sign(INTERNAL_TTL);
        let resp = self
            .http()
            .get(url)
            .send()
            .await
            .map_err(|e| BlobError::request("GET", key, e))?;
        match resp.status() {
            StatusCode::NOT_FOUND => Ok(None),
            s if s.is_success() => {
                let len = resp.content_length();
                let owned_key = key.to_owned();
                let stream = resp
                    .bytes_stream()
                    .map_err(move |e| BlobError::request("GET", &owned_key, e));
                Ok(Some(ObjectBody {
                    len,
                    stream: Box::pin(stream),
                }))
            }
            _ => Err(BlobError::status("GET", key, resp).await),
        }
    }

    /// Uploads `len` bytes read from `file` to `key`, streamed, with `Content-Length` and
    /// `Content-Type` set.
    pub async fn put_object(
        &self,
        key: &str,
        file: tokio::fs::File,
        len: u64,
        content_type: &str,
    ) -> Result<(), BlobError> {
        use tokio::io::AsyncReadExt as _;
        let url = self
            .bucket()
            .put_object(Some(self.credentials()), key)
            .sign(INTERNAL_TTL);
        let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::with_capacity(
            file.take(len),
            64 * 1024,
        ));
        let resp = self
            .http()
            .put(url)
            .header(CONTENT_LENGTH, len)
            .header(CONTENT_TYPE, content_type)
            .body(body)
            .send()
            .await
            .map_err(|e| BlobError::request("PUT", key, e))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(BlobError::status("PUT", key, resp).await)
        }
    }

    /// Deletes `key`. Deleting an absent object succeeds.
    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let url = self
            .bucket()
            .delete_object(Some(self.credentials()), key)
            .sign(INTERNAL_TTL);
        let resp = self
            .http()
            .delete(url)
            .send()
            .await
            .map_err(|e| BlobError::request("DELETE", key, e))?;
        if resp.status().is_success() || resp.status() == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(BlobError::status("DELETE", key, resp).await)
        }
    }

    /// Every object whose key starts with `prefix` (all pages).
    pub async fn list(&self, prefix: &str) -> Result<Vec<ListedObject>, BlobError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut action = ListObjectsV2::new(self.bucket(), Some(self.credentials()));
            action.with_prefix(prefix.to_owned());
            if let Some(t) = &token {
                action.with_continuation_token(t.clone());
            }
            let url = action.sign(INTERNAL_TTL);
            let resp = self
                .http()
                .get(url)
                .send()
                .await
                .map_err(|e| BlobError::request("LIST", prefix, e))?;
            if !resp.status().is_success() {
                return Err(BlobError::status("LIST", prefix, resp).await);
            }
            let text = resp
                .text()
                .await
                .map_err(|e| BlobError::request("LIST", prefix, e))?;
            let page = ListObjectsV2::parse_response(&text).map_err(|e| BlobError::BadListing {
                prefix: prefix.to_owned(),
                reason: e.to_string(),
            })?;
            for item in page.contents {
                let key = percent_encoding::percent_decode_str(&item.key)
                    .decode_utf8_lossy()
                    .into_owned();
                out.push(ListedObject {
                    key,
                    last_modified: item.last_modified.as_deref().and_then(|t| t.parse().ok()),
                    size: item.size,
                });
            }
            match page.next_continuation_token {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => return Ok(out),
            }
        }
    }

    /// Streams blob `hash` into `dest`, hashing as it goes, and returns the byte count.
    ///
    /// Fails with [`BlobError::Missing`], [`BlobError::TooLarge`] (over `max_bytes`, checked
    /// against `Content-Length` first and against the bytes received in any case) or
    /// [`BlobError::HashMismatch`]. **`dest` receives bytes before they are verified**: write to
    /// a temporary file and rename it into place only on `Ok`, delete it on `Err`.
    ///
    /// On a mismatch the object is deleted (best effort): a content-addressed object whose bytes
    /// do not hash to its key is useless, and without it the next `/v1/blobs/check` asks the
    /// client to upload it again.
    pub async fn fetch_verified<W>(
        &self,
        hash: &BlobHash,
        dest: &mut W,
        max_bytes: u64,
    ) -> Result<u64, BlobError>
    where
        W: AsyncWrite + Unpin + ?Sized,
    {
        let body = self.get_stream(hash).await?;
        let too_large = || BlobError::TooLarge {
            hash: hash.clone(),
            limit: max_bytes,
        };
        if body.len.is_some_and(|len| len > max_bytes) {
            return Err(too_large());
        }
        let mut stream = body.stream;
        let mut hasher = Sha256::new();
        let mut total: u64 = 0;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            total += chunk.len() as u64;
            if total > max_bytes {
                return Err(too_large());
            }
            hasher.update(&chunk);
            dest.write_all(&chunk).await.map_err(|err| BlobError::Io {
                op: format!("writing blob {hash} to its destination"),
                err,
            })?;
        }
        dest.flush().await.map_err(|err| BlobError::Io {
            op: format!("flushing blob {hash} to its destination"),
            err,
        })?;
        let actual = BlobHash::from_digest(&hasher.finalize());
        if &actual != hash {
            tracing::warn!(expected = %hash, %actual, "stored blob does not match its hash; deleting it");
            if let Err(err) = self.delete(&hash.key()).await {
                tracing::warn!(error = %err, key = %hash.key(), "could not delete corrupt blob");
            }
            return Err(BlobError::HashMismatch {
                expected: hash.clone(),
                actual,
            });
        }
        Ok(total)
    }
}
