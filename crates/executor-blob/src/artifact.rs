//! Artifacts: files a run leaves under `/workspace/artifacts/`, uploaded to
//! `artifacts/<jobId>/<name>` and handed out as signed GET URLs. They live as long as the job's
//! output (`artifact_ttl`, 24 h): the [`crate::Sweeper`] deletes them by age, and with an external
//! store a lifecycle rule on the `artifacts/` prefix can do the same (see README).

use crate::error::BlobError;
use crate::hash::artifact_key;
use crate::store::BlobStore;
use crate::wire::Artifact;

/// Bytes of the file start that [`guess_mime`] needs.
pub const SNIFF_LEN: usize = 512;

impl BlobStore {
    /// Uploads `bytes` bytes of `file` (streamed) to `artifacts/<job_id>/<name>` with content type
    /// `mime` and returns the [`Artifact`] with a download URL valid for `artifact_ttl`.
    ///
    /// `name` is the path relative to `/workspace/artifacts/`; empty, absolute, `.`/`..`
    /// segments and control characters are refused.
    pub async fn upload_artifact(
        &self,
        job_id: &str,
        name: &str,
        file: tokio::fs::File,
        bytes: u64,
        mime: &str,
    ) -> Result<Artifact, BlobError> {
        validate_name(job_id, "job id")?;
        validate_name(name, "artifact name")?;
        let key = artifact_key(job_id, name);
        self.put_object(&key, file, bytes, mime).await?;
        Ok(Artifact {
            name: name.to_owned(),
            mime_type: mime.to_owned(),
            bytes,
            url: self
                .presign_get(&key, self.config().artifact_ttl)
                .to_string(),
        })
    }
}

fn validate_name(name: &str, what: &str) -> Result<(), BlobError> {
    let bad = |reason: &str| {
        Err(BlobError::InvalidName {
            name: name.to_owned(),
            reason: format!("{what}: {reason}"),
        })
    };
    if name.is_empty() || name.len() > 1024 {
        return bad("must be 1 to 1024 bytes");
    }
    if name.chars().any(char::is_control) || name.contains('\\') {
        return bad("control characters and backslashes are not allowed");
    }
    if name
        .split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        return bad("must be a relative path without empty, `.` or `..` segments");
    }
    Ok(())
}

/// The media type of a file from its first bytes (at least [`SNIFF_LEN`] of them when the file
/// is that long) and its name. Content wins for binary formats; the extension picks among text
/// formats; otherwise valid UTF-8 is `text/plain; charset=utf-8` and anything else
/// `application/octet-stream`.
pub fn guess_mime(name: &str, first_bytes: &[u8]) -> String {
    if let Some(m) = sniff_binary(first_bytes) {
        // A zip container named like one of its specialisations keeps the specific type.
        if m == "application/zip" {
            if let Some(e) = by_extension(name).filter(|e| {
                e.starts_with("application/vnd.")
                    || *e == "application/java-archive"
                    || *e == "application/epub+zip"
            }) {
                return e.to_owned();
            }
        }
        return m.to_owned();
    }
    if looks_like_text(first_bytes) {
        let ext = by_extension(name);
        if let Some(e) = ext.filter(|e| is_textual(e)) {
            return e.to_owned();
        }
        let trimmed = trim_start(first_bytes);
        if starts_with_ci(trimmed, b"<svg")
            || (starts_with_ci(trimmed, b"<?xml") && contains(first_bytes, b"<svg"))
        {
            return "image/svg+xml".to_owned();
        }
        if matches!(trimmed.first(), Some(b'{' | b'['))
            && serde_json::from_slice::<serde::de::IgnoredAny>(first_bytes).is_ok()
        {
            return "application/json".to_owned();
        }
        if starts_with_ci(trimmed, b"<!doctype html") || starts_with_ci(trimmed, b"<html") {
            return "text/html; charset=utf-8".to_owned();
        }
        return "text/plain; charset=utf-8".to_owned();
    }
    by_extension(name)
        .filter(|e| !is_textual(e))
        .unwrap_or("application/octet-stream")
        .to_owned()
}

fn sniff_binary(b: &[u8]) -> Option<&'static str> {
    Some(match b {
        [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', ..] => "image/png",
        [0xff, 0xd8, 0xff, ..] => "image/jpeg",
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => "image/gif",
        [b'%', b'P', b'D', b'F', b'-', ..] => "application/pdf",
        [b'P', b'K', 3, 4, ..] | [b'P', b'K', 5, 6, ..] => "application/zip",
        [0x1f, 0x8b, ..] => "application/gzip",
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => "image/webp",
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'A', b'V', b'E', ..] => "audio/wav",
        [0, b'a', b's', b'm', ..] => "application/wasm",
        [b'B', b'Z', b'h', ..] => "application/x-bzip2",
        [0xfd, b'7', b'z', b'X', b'Z', 0, ..] => "application/x-xz",
        [0x28, 0xb5, 0x2f, 0xfd, ..] => "application/zstd",
        [b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c, ..] => "application/x-7z-compressed",
        [b'O', b'g', b'g', b'S', ..] => "application/ogg",
        [b'f', b'L', b'a', b'C', ..] => "audio/flac",
        [b'I', b'D', b'3', ..] => "audio/mpeg",
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => "video/mp4",
        [0x7f, b'E', b'L', b'F', ..] => "application/x-executable",
        [b'S', b'Q', b'L', b'i', b't', b'e', b' ', b'f', b'o', b'r', b'm', b'a', b't', ..] => {
            "application/vnd.sqlite3"
        }
        _ if b.len() > 262 && &b[257..262] == b"ustar" => "application/x-tar",
        _ => return None,
    })
}

fn looks_like_text(b: &[u8]) -> bool {
    if b.contains(&0) {
        return false;
    }
    match std::str::from_utf8(b) {
        Ok(_) => true,
        // A multi-byte character cut by the sniff window is still text.
        Err(e) => e.error_len().is_none() && b.len() - e.valid_up_to() < 4,
    }
}

fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json" | "application/xml" | "image/svg+xml" | "application/javascript"
        )
}

fn by_extension(name: &str) -> Option<&'static str> {
    let file = name.rsplit('/').next().unwrap_or(name);
    let (_, ext) = file.rsplit_once('.')?;
    Some(match ext.to_ascii_lowercase().as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "ico" => "image/x-icon",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "jar" => "application/java-archive",
        "epub" => "application/epub+zip",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt" => "application/vnd.oasis.opendocument.text",
        "wasm" => "application/wasm",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "json" => "application/json",
        "xml" => "application/xml",
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "application/javascript",
        "csv" => "text/csv; charset=utf-8",
        "tsv" => "text/tab-separated-values; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "txt" | "log" => "text/plain; charset=utf-8",
        _ => return None,
    })
}

fn trim_start(b: &[u8]) -> &[u8] {
    let b = b.strip_prefix(b"\xef\xbb\xbf").unwrap_or(b);
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    &b[start..]
}

fn starts_with_ci(b: &[u8], prefix: &[u8]) -> bool {
    b.len() >= prefix.len() && b[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
