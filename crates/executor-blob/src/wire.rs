//! The blob wire types of the HTTP contract (`BlobCheckRequest`, `BlobCheckResponse`, …,
//! `Artifact`), as serde structs with the contract's camelCase names. The API crate may map them
//! to the schema-generated types; the client helper uses them directly.

use serde::{Deserialize, Serialize};

/// `{ hashes: string[] }`, the body of both `/v1/blobs/check` and `/v1/blobs/finalize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobHashesRequest {
    /// `sha256:<hex>` references.
    pub hashes: Vec<String>,
}

/// A missing blob and where to upload it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobUpload {
    /// `sha256:<hex>`.
    pub hash: String,
    /// Presigned PUT URL. The PUT must carry `x-amz-checksum-sha256: <base64 of the digest>`.
    pub upload_url: String,
}

/// Answer of `/v1/blobs/check`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BlobCheckResponse {
    /// Blobs to upload, each once, in request order.
    pub missing: Vec<BlobUpload>,
    /// Blobs already stored (their idle expiry refreshed), each once, in request order.
    pub present: Vec<String>,
}

/// Answer of `/v1/blobs/finalize`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BlobFinalizeResponse {
    /// Blobs whose liveness is recorded. A requested hash that is absent here was not found in
    /// the store (not uploaded, or being swept): check and upload it again.
    pub finalized: Vec<String>,
}

/// A file a run left under `/workspace/artifacts/`, stored and signed for download.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Path relative to `/workspace/artifacts/`.
    pub name: String,
    /// Sniffed media type.
    pub mime_type: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Signed GET URL, valid as long as the artifact is kept.
    pub url: String,
}
