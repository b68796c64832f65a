//! The rules for [`FileInput`] that the schema cannot express, shared by API and worker.

use base64::Engine;

use crate::{detail, paths, Encoding, ErrorDetail, FileInput};

/// What a file will put into the workspace, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileBody {
    /// Inline bytes (UTF-8 text or decoded base64).
    Inline(Vec<u8>),
    /// A blob reference: the lowercase hex digest (without `sha256:`).
    Ref(String),
}

/// Parses `sha256:<64 lowercase hex>` and returns the hex digest.
pub fn parse_ref(s: &str) -> Result<&str, &'static str> {
    let hex = s
        .strip_prefix("sha256:")
        .ok_or("ref must have the form sha256:<64 lowercase hex>")?;
    if hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(hex)
    } else {
        Err("ref must have the form sha256:<64 lowercase hex>")
    }
}

/// Checks one file (at `files/<index>` in the request) and returns its body.
pub fn check_file(index: usize, f: &FileInput) -> Result<FileBody, Vec<ErrorDetail>> {
    let at = |field: &str| format!("/files/{index}{field}");
    let mut errors = Vec::new();
    if let Err(e) = paths::sanitize(&f.name) {
        errors.push(detail(at("/name"), e.to_string()));
    }
    let body = match (&f.content, &f.ref_) {
        (Some(_), Some(_)) => {
            errors.push(detail(
                at(""),
                "a file carries exactly one of content and ref, not both",
            ));
            None
        }
        (None, None) => {
            errors.push(detail(
                at(""),
                "a file carries exactly one of content and ref",
            ));
            None
        }
        (None, Some(r)) => match parse_ref(r) {
            Ok(hex) => Some(FileBody::Ref(hex.to_owned())),
            Err(m) => {
                errors.push(detail(at("/ref"), m));
                None
            }
        },
        (Some(c), None) => match f.encoding.unwrap_or(Encoding::Utf8) {
            Encoding::Utf8 => Some(FileBody::Inline(c.as_bytes().to_vec())),
            Encoding::Base64 => {
                match base64::engine::general_purpose::STANDARD.decode(c.trim_end()) {
                    Ok(bytes) => Some(FileBody::Inline(bytes)),
                    Err(e) => {
                        errors.push(detail(at("/content"), format!("invalid base64: {e}")));
                        None
                    }
                }
            }
        },
    };
    match body {
        Some(b) if errors.is_empty() => Ok(b),
        _ => Err(errors),
    }
}

/// Decoded size of an inline body without decoding it (base64 counted decoded).
pub fn inline_size(f: &FileInput) -> u64 {
    match (&f.content, f.encoding.unwrap_or(Encoding::Utf8)) {
        (Some(c), Encoding::Utf8) => c.len() as u64,
        (Some(c), Encoding::Base64) => {
            let t = c.trim_end();
            let pad = t.bytes().rev().take_while(|&b| b == b'=').count() as u64;
            (t.len() as u64 / 4) * 3 + [0, 0, 1, 2][t.len() % 4] - pad.min(2)
        }
        (None, _) => 0,
    }
}

/// Checks every file: names unique, each valid. Returns the bodies in order.
pub fn check_files(files: &[FileInput]) -> Result<Vec<FileBody>, Vec<ErrorDetail>> {
    let mut errors = Vec::new();
    let mut bodies = Vec::with_capacity(files.len());
    let mut seen = std::collections::HashSet::new();
    if files.is_empty() {
        errors.push(detail("/files", "at least one file is required"));
    }
    for (i, f) in files.iter().enumerate() {
        if !seen.insert(f.name.as_str()) {
            errors.push(detail(
                format!("/files/{i}/name"),
                format!("duplicate file name {:?}", f.name.as_str()),
            ));
        }
        match check_file(i, f) {
            Ok(b) => bodies.push(b),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(bodies)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(v: serde_json::Value) -> FileInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn exclusivity_and_formats() {
        let h = format!("sha256:{}", "a".repeat(64));
        assert!(check_file(0, &file(serde_json::json!({"name":"a","content":"x"}))).is_ok());
        assert!(check_file(0, &file(serde_json::json!({"name":"a","ref":h}))).is_ok());
        assert!(check_file(0, &file(serde_json::json!({"name":"a"}))).is_err());
        assert!(check_file(
            0,
            &file(serde_json::json!({"name":"a","content":"x","ref":h}))
        )
        .is_err());
        let upper = format!("sha256:{}", "A".repeat(64));
        assert!(check_file(0, &file(serde_json::json!({"name":"a","ref":upper}))).is_err());
        let e = check_file(
            3,
            &file(serde_json::json!({"name":"a","content":"!!","encoding":"base64"})),
        )
        .unwrap_err();
        assert_eq!(e[0].path, "/files/3/content");
        let e = check_file(1, &file(serde_json::json!({"name":"../a","content":""}))).unwrap_err();
        assert_eq!(e[0].path, "/files/1/name");
    }

    #[test]
    fn base64_size_is_decoded_size() {
        for raw in [&b""[..], b"a", b"ab", b"abc", b"abcd", &[0u8; 1000][..]] {
            let enc = base64::engine::general_purpose::STANDARD.encode(raw);
            let f = file(serde_json::json!({"name":"a","content":enc,"encoding":"base64"}));
            assert_eq!(inline_size(&f), raw.len() as u64);
        }
    }
}
