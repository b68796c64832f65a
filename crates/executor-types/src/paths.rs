//! Workspace path rules: a file name is a relative path under `/workspace`.
//!
//! Rejected: empty or over 255 characters, absolute, a `..` or `.` segment, an empty segment
//! (`a//b`, trailing `/`), NUL or other control characters, and backslashes (they are not
//! separators on Linux, but are almost always a Windows path by mistake).

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PathError {
    #[error("name must be 1 to 255 characters")]
    Length,
    #[error("name must be relative to /workspace, not absolute")]
    Absolute,
    #[error("name must not contain `..` segments")]
    Traversal,
    #[error("name must not contain `.` or empty segments")]
    EmptySegment,
    #[error("name must not contain control characters or backslashes")]
    BadCharacter,
}

/// Checks a workspace-relative name and returns its segments.
pub fn sanitize(name: &str) -> Result<Vec<&str>, PathError> {
    let chars = name.chars().count();
    if chars == 0 || chars > 255 {
        return Err(PathError::Length);
    }
    if name.starts_with('/') {
        return Err(PathError::Absolute);
    }
    if name.chars().any(|c| c.is_control() || c == '\\') {
        return Err(PathError::BadCharacter);
    }
    let segments: Vec<&str> = name.split('/').collect();
    for s in &segments {
        match *s {
            ".." => return Err(PathError::Traversal),
            "" | "." => return Err(PathError::EmptySegment),
            _ => {}
        }
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_nested_relative_paths() {
        assert_eq!(sanitize("main.py").unwrap(), vec!["main.py"]);
        assert_eq!(
            sanitize("src/lib/a.rs").unwrap(),
            vec!["src", "lib", "a.rs"]
        );
        assert!(sanitize("..foo").is_ok());
        assert!(sanitize(&"a".repeat(255)).is_ok());
    }

    #[test]
    fn rejects_every_escape() {
        assert_eq!(sanitize(""), Err(PathError::Length));
        assert_eq!(sanitize(&"a".repeat(256)), Err(PathError::Length));
        assert_eq!(sanitize("/etc/passwd"), Err(PathError::Absolute));
        assert_eq!(sanitize("../x"), Err(PathError::Traversal));
        assert_eq!(sanitize("a/../../x"), Err(PathError::Traversal));
        assert_eq!(sanitize("a/.."), Err(PathError::Traversal));
        assert_eq!(sanitize("a//b"), Err(PathError::EmptySegment));
        assert_eq!(sanitize("a/"), Err(PathError::EmptySegment));
        assert_eq!(sanitize("./a"), Err(PathError::EmptySegment));
        assert_eq!(sanitize("a\0b"), Err(PathError::BadCharacter));
        assert_eq!(sanitize("a\\..\\b"), Err(PathError::BadCharacter));
    }
}
