//! Content addresses: `sha256:<64 lowercase hex>`, the only form a blob is named by on the wire,
//! and the object keys derived from them (`blobs/<hex>`, `artifacts/<jobId>/<name>`).

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The wire prefix of every blob reference.
pub const HASH_PREFIX: &str = "sha256:";
/// Object-key prefix of content-addressed blobs.
pub const BLOB_PREFIX: &str = "blobs/";
/// Object-key prefix of job artifacts.
pub const ARTIFACT_PREFIX: &str = "artifacts/";
/// The header a presigned blob PUT must carry: base64 of the raw sha256 digest. It is part of
/// the signature, so a PUT without it (or with another value) is refused, and the store checks
/// the bytes against it.
pub const CHECKSUM_HEADER: &str = "x-amz-checksum-sha256";

/// A validated `sha256:<64 lowercase hex>` reference.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobHash {
    hex: String,
}

/// A string that is not `sha256:<64 lowercase hex>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid blob hash {input:?}: expected `sha256:` followed by 64 lowercase hex digits")]
pub struct InvalidHash {
    /// What was given.
    pub input: String,
}

impl BlobHash {
    /// Parses `sha256:<64 lowercase hex>`; anything else (uppercase, other lengths, no prefix) is rejected.
    pub fn parse(s: &str) -> Result<Self, InvalidHash> {
        let invalid = || InvalidHash {
            input: s.to_owned(),
        };
        let hex = s.strip_prefix(HASH_PREFIX).ok_or_else(invalid)?;
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(invalid());
        }
        Ok(Self {
            hex: hex.to_owned(),
        })
    }

    /// The reference of these bytes.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self::from_digest(&Sha256::digest(bytes))
    }

    pub(crate) fn from_digest(digest: &[u8]) -> Self {
        Self {
            hex: hex::encode(digest),
        }
    }

    /// The 64 hex digits, without the prefix.
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// The object key: `blobs/<hex>`.
    pub fn key(&self) -> String {
        format!("{BLOB_PREFIX}{}", self.hex)
    }

    /// The hash of a `blobs/<hex>` key, if it is one.
    pub fn from_key(key: &str) -> Option<Self> {
        let hex = key.strip_prefix(BLOB_PREFIX)?;
        Self::parse(&format!("{HASH_PREFIX}{hex}")).ok()
    }

    /// The value of [`CHECKSUM_HEADER`]: base64 (standard, padded) of the raw 32-byte digest.
    pub fn checksum_header_value(&self) -> String {
        let raw = hex::decode(&self.hex).expect("validated hex");
        base64::engine::general_purpose::STANDARD.encode(raw)
    }
}

impl fmt::Display for BlobHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{HASH_PREFIX}{}", self.hex)
    }
}

impl fmt::Debug for BlobHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for BlobHash {
    type Err = InvalidHash;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// The object key of an artifact: `artifacts/<jobId>/<name>`.
pub fn artifact_key(job_id: &str, name: &str) -> String {
    format!("{ARTIFACT_PREFIX}{job_id}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_the_canonical_form() {
        let h = BlobHash::of_bytes(b"hello");
        assert_eq!(BlobHash::parse(&h.to_string()).unwrap(), h);
        assert!(BlobHash::parse(&h.to_string().to_uppercase()).is_err());
        assert!(BlobHash::parse(h.hex()).is_err());
        assert!(BlobHash::parse("sha256:abc").is_err());
        assert_eq!(BlobHash::from_key(&h.key()), Some(h.clone()));
        // base64 of sha256("hello")
        assert_eq!(
            h.checksum_header_value(),
            "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="
        );
    }
}
