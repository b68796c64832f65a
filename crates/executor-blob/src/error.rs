//! Errors of the blob store. The worker maps [`BlobError::Missing`], [`BlobError::TooLarge`] and
//! [`BlobError::HashMismatch`] to a job `error` with a reason the client can act on; everything
//! else is a service failure.

use crate::hash::BlobHash;
use crate::liveness::LivenessError;

/// A failed blob-store operation.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// No object under the blob's key (never uploaded, swept, or being swept).
    #[error("blob {hash} is missing from the store")]
    Missing {
        /// The reference.
        hash: BlobHash,
    },
    /// The object is larger than the caller accepts.
    #[error("blob {hash} is larger than {limit} bytes")]
    TooLarge {
        /// The reference.
        hash: BlobHash,
        /// The caller's limit.
        limit: u64,
    },
    /// The stored bytes do not hash to the reference.
    #[error("blob content does not match its reference: expected {expected}, got {actual}")]
    HashMismatch {
        /// The reference asked for.
        expected: BlobHash,
        /// The hash of the bytes the store returned.
        actual: BlobHash,
    },
    /// The HTTP request to the store failed (connection, TLS, body stream).
    #[error("{op} {key}: request to the object store failed")]
    Request {
        /// The operation (`HEAD`, `GET`, `PUT`, `DELETE`, `LIST`).
        op: &'static str,
        /// The object key or prefix.
        key: String,
        /// The cause.
        #[source]
        err: reqwest::Error,
    },
    /// The store answered with an unexpected status.
    #[error("{op} {key}: object store answered {status}: {body}")]
    Status {
        /// The operation.
        op: &'static str,
        /// The object key or prefix.
        key: String,
        /// HTTP status.
        status: u16,
        /// Start of the response body (S3 error XML).
        body: String,
    },
    /// Reading or writing a local file or destination failed.
    #[error("{op}")]
    Io {
        /// What was being done.
        op: String,
        /// The cause.
        #[source]
        err: std::io::Error,
    },
    /// A listing could not be parsed.
    #[error("LIST {prefix}: unreadable response: {reason}")]
    BadListing {
        /// The prefix listed.
        prefix: String,
        /// The parser's message.
        reason: String,
    },
    /// An artifact or job name that cannot be an object key.
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The configuration cannot address a bucket.
    #[error("invalid blob store configuration: {reason}")]
    Config {
        /// Why.
        reason: String,
    },
    /// The liveness records could not be read or written.
    #[error(transparent)]
    Liveness(#[from] LivenessError),
}

impl BlobError {
    pub(crate) fn request(op: &'static str, key: &str, err: reqwest::Error) -> Self {
        Self::Request {
            op,
            key: key.to_owned(),
            err,
        }
    }

    pub(crate) async fn status(op: &'static str, key: &str, resp: reqwest::Response) -> Self {
        let status = resp.status().as_u16();
        let mut body = resp.text().await.unwrap_or_default();
        if body.len() > 512 {
            let mut cut = 512;
            while !body.is_char_boundary(cut) {
                cut -= 1;
            }
            body.truncate(cut);
        }
        Self::Status {
            op,
            key: key.to_owned(),
            status,
            body,
        }
    }
}
