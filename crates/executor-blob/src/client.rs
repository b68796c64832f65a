//! The client side of the blob flow, for the CLI: check → PUT → finalize, then the caller
//! executes with the returned ref. `scripts/executor-upload.sh` does the same with curl.

use std::path::Path;

use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use crate::hash::{BlobHash, CHECKSUM_HEADER};
use crate::wire::{BlobCheckResponse, BlobFinalizeResponse, BlobHashesRequest};

/// An upload that did not complete.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// Reading the local file failed.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        err: std::io::Error,
    },
    /// An HTTP request failed before an answer.
    #[error("{step} request failed")]
    Request {
        /// `check`, `upload` or `finalize`.
        step: &'static str,
        /// The cause.
        #[source]
        err: reqwest::Error,
    },
    /// The API or the store answered with an error status.
    #[error("{step} answered {status}: {body}")]
    Status {
        /// `check`, `upload` or `finalize`.
        step: &'static str,
        /// HTTP status.
        status: u16,
        /// Response body.
        body: String,
    },
    /// The API answered something the client did not expect.
    #[error("{step}: {reason}")]
    Protocol {
        /// The step.
        step: &'static str,
        /// What was wrong.
        reason: String,
    },
}

/// Uploads the file at `path` to the service at `api_base` (e.g. `http://127.0.0.1:8080`) unless
/// it is already stored, and returns its ref (`sha256:<hex>`) for a `FileInput.ref`.
pub async fn upload_file(api_base: &str, token: &str, path: &Path) -> Result<String, UploadError> {
    let read_err = |err| UploadError::Read {
        path: path.display().to_string(),
        err,
    };
    let (hash, len) = hash_file(path).await.map_err(read_err)?;
    let reference = hash.to_string();
    let http = reqwest::Client::new();
    let base = api_base.trim_end_matches('/');
    let bearer = format!("Bearer {token}");
    let body = BlobHashesRequest {
        hashes: vec![reference.clone()],
    };

    let check: BlobCheckResponse = api_json(
        &http,
        "check",
        &format!("{base}/v1/blobs/check"),
        &bearer,
        &body,
    )
    .await?;
    if check.present.contains(&reference) {
        return Ok(reference);
    }
    let upload = check
        .missing
        .iter()
        .find(|m| m.hash == reference)
        .ok_or_else(|| UploadError::Protocol {
            step: "check",
            reason: format!("{reference} is neither present nor missing"),
        })?;

    let file = tokio::fs::File::open(path).await.map_err(read_err)?;
    let stream = tokio_util::io::ReaderStream::with_capacity(file.take(len), 64 * 1024);
    let resp = http
        .put(&upload.upload_url)
        .header(CONTENT_LENGTH, len)
        .header(CHECKSUM_HEADER, hash.checksum_header_value())
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .map_err(|err| UploadError::Request {
            step: "upload",
            err,
        })?;
    if !resp.status().is_success() {
        return Err(status_err("upload", resp).await);
    }

    let fin: BlobFinalizeResponse = api_json(
        &http,
        "finalize",
        &format!("{base}/v1/blobs/finalize"),
        &bearer,
        &body,
    )
    .await?;
    if !fin.finalized.contains(&reference) {
        return Err(UploadError::Protocol {
            step: "finalize",
            reason: format!("{reference} was not finalized (try again)"),
        });
    }
    Ok(reference)
}

/// The ref and size of a file, read in chunks.
pub async fn hash_file(path: &Path) -> std::io::Result<(BlobHash, u64)> {
    let mut file = tokio::fs::File::open(path).await?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((BlobHash::from_digest(&hasher.finalize()), len))
}

async fn api_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    step: &'static str,
    url: &str,
    bearer: &str,
    body: &BlobHashesRequest,
) -> Result<T, UploadError> {
    let resp = http
        .post(url)
        .header(AUTHORIZATION, bearer)
        .json(body)
        .send()
        .await
        .map_err(|err| UploadError::Request { step, err })?;
    if !resp.status().is_success() {
        return Err(status_err(step, resp).await);
    }
    resp.json()
        .await
        .map_err(|err| UploadError::Request { step, err })
}

async fn status_err(step: &'static str, resp: reqwest::Response) -> UploadError {
    UploadError::Status {
        step,
        status: resp.status().as_u16(),
        body: resp.text().await.unwrap_or_default(),
    }
}
