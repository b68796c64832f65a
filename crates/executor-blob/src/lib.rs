//! Content-addressed blobs and job artifacts in an S3-compatible object store.
//!
//! Why this crate exists: large or shared input files are uploaded once, by their sha256, straight
//! to the object store (the API only signs URLs and never touches the bytes), and referenced from
//! any job; the worker streams them into the workspace and verifies the hash; runs' artifacts go
//! the other way and come back as signed download URLs. Blobs expire by *last use* (a sweeper
//! over liveness records), which S3 lifecycle rules cannot express.
//!
//! - [`BlobStore`]: the S3 client (presigning, HEAD/GET/PUT/DELETE/LIST, [`BlobStore::fetch_verified`],
//!   [`BlobStore::upload_artifact`]).
//! - [`LivenessStore`]: the liveness records the broker keeps (`blob:meta:<hash>`, `blobs:index`);
//!   [`MemoryLiveness`] in process.
//! - [`BlobService`]: `/v1/blobs/check`, `/v1/blobs/finalize` and the worker's fetch.
//! - [`Sweeper`]: deletes idle blobs and expired artifacts, safely against jobs using them.
//! - [`EmbeddedS3`] (feature `embedded`): the s3s-fs server of the one-command start.
//! - [`upload_file`]: the client's check → PUT → finalize flow.

mod artifact;
mod client;
mod config;
#[cfg(feature = "embedded")]
mod embedded;
mod error;
mod hash;
mod liveness;
mod service;
mod store;
mod sweeper;
mod wire;

pub use artifact::{guess_mime, SNIFF_LEN};
pub use client::{hash_file, upload_file, UploadError};
pub use config::*;
#[cfg(feature = "embedded")]
pub use embedded::{EmbeddedS3, EmbeddedS3Error, EMBEDDED_BUCKET};
pub use error::BlobError;
pub use hash::{
    artifact_key, BlobHash, InvalidHash, ARTIFACT_PREFIX, BLOB_PREFIX, CHECKSUM_HEADER, HASH_PREFIX,
};
pub use liveness::{LivenessError, LivenessStore, MemoryLiveness};
pub use service::{BlobService, PIN_LEASE};
pub use store::{BlobStore, ByteStream, ListedObject, ObjectBody};
pub use sweeper::{SweepReport, Sweeper, ORPHAN_GRACE, SWEEP_GUARD};
pub use wire::{Artifact, BlobCheckResponse, BlobFinalizeResponse, BlobHashesRequest, BlobUpload};
