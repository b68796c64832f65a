//! Moving files into and out of a workspace the sandboxed program may have tampered with.
//!
//! Every path is relative to the workspace root and resolved component by component with
//! `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_XDEV)`: no symlink the program
//! made is ever followed, nothing outside the workspace mount is reached. Reads open with
//! `O_NOFOLLOW | O_NONBLOCK` (a FIFO cannot block us) and accept regular files only.

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{fchown, PermissionsExt};
use std::path::Path;

use crate::error::SandboxError;
use crate::sys;

const RESOLVE: u64 = sys::RESOLVE_NO_SYMLINKS
    | sys::RESOLVE_NO_MAGICLINKS
    | sys::RESOLVE_BENEATH
    | sys::RESOLVE_NO_XDEV;

/// Maximum directory depth walked by [`list_files`].
const MAX_DEPTH: usize = 32;

/// A regular file found in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Path relative to the listed directory, `/`-separated.
    pub path: String,
    pub size: u64,
}

/// Result of [`Slot::list_files`](crate::Slot::list_files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Regular files, sorted by path.
    pub files: Vec<FileEntry>,
    /// More files existed than the caller's cap.
    pub truncated: bool,
}

/// Splits a relative path into checked components: no absolute paths, no `..` or `.`,
/// no empty components, no NUL.
pub(crate) fn components(rel: &str) -> Result<Vec<CString>, SandboxError> {
    let bad = |reason: &str| SandboxError::invalid("workspace path", format!("{rel:?}: {reason}"));
    if rel.is_empty() {
        return Err(bad("empty"));
    }
    if rel.starts_with('/') {
        return Err(bad("absolute"));
    }
    rel.trim_end_matches('/')
        .split('/')
        .map(|c| match c {
            "" => Err(bad("empty component")),
            "." | ".." => Err(bad("`.` or `..` component")),
            c => CString::new(c).map_err(|_| bad("NUL byte")),
        })
        .collect()
}

fn open_root(root: &Path) -> Result<OwnedFd, SandboxError> {
    File::open(root)
        .map(OwnedFd::from)
        .map_err(|e| SandboxError::io("open workspace", root, e))
}

/// Opens (creating when `create`) each directory of `dirs` below `root` without following links.
fn open_dirs(root: &Path, dirs: &[CString], create: Option<u32>) -> Result<OwnedFd, SandboxError> {
    let mut cur = open_root(root)?;
    for (i, name) in dirs.iter().enumerate() {
        let shown = || {
            root.join(
                dirs[..=i]
                    .iter()
                    .map(|c| c.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            )
        };
        if let Some(uid) = create {
            match sys::mkdirat(cur.as_raw_fd(), name, 0o755) {
                Ok(()) => sys::fchownat_nofollow(cur.as_raw_fd(), name, uid, uid)
                    .map_err(|e| SandboxError::io("chown", shown(), e))?,
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                Err(e) => return Err(SandboxError::io("mkdir", shown(), e)),
            }
        }
        cur = sys::openat2(
            cur.as_raw_fd(),
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
            RESOLVE,
        )
        .map_err(|e| SandboxError::io("open directory (no links followed)", shown(), e))?;
    }
    Ok(cur)
}

/// Creates the directory `rel` (and its parents) owned by `uid`.
pub(crate) fn create_dir(root: &Path, rel: &str, uid: u32) -> Result<(), SandboxError> {
    let comps = components(rel)?;
    open_dirs(root, &comps, Some(uid)).map(drop)
}

/// Opens `rel` for writing under `root` with `flags` (added to `O_WRONLY | O_CREAT |
/// O_NOFOLLOW`), parents created, no link followed; refuses anything but a regular file and
/// hands it to `uid` with `mode` (permission bits only: the umask applied at creation).
fn open_for_writing(
    root: &Path,
    rel: &str,
    flags: libc::c_int,
    mode: u32,
    uid: u32,
    op: &'static str,
) -> Result<File, SandboxError> {
    let comps = components(rel)?;
    let (name, dirs) = comps.split_last().expect("components is never empty");
    let dir = open_dirs(root, dirs, Some(uid))?;
    let path = root.join(rel);
    let fd = sys::openat2(
        dir.as_raw_fd(),
        name,
        libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | flags,
        mode & 0o777,
        RESOLVE,
    )
    .map_err(|e| SandboxError::io(op, &path, e))?;
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| SandboxError::io("fstat", &path, e))?;
    if !meta.is_file() {
        return Err(SandboxError::NotRegular(rel.to_string()));
    }
    fchown(&file, Some(uid), Some(uid)).map_err(|e| SandboxError::io("chown", &path, e))?;
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
        .map_err(|e| SandboxError::io("chmod", &path, e))?;
    Ok(file)
}

/// Writes `contents` to `rel` (creating parent directories), owned by `uid`, with `mode`.
pub(crate) fn write_file(
    root: &Path,
    rel: &str,
    contents: &[u8],
    mode: u32,
    uid: u32,
) -> Result<(), SandboxError> {
    let flags = libc::O_TRUNC | libc::O_NONBLOCK;
    let mut file = open_for_writing(root, rel, flags, mode, uid, "create (no links followed)")?;
    file.write_all(contents)
        .map_err(|e| SandboxError::io("write", root.join(rel), e))
}

/// Creates the new file `rel` (parents created, owned by `uid`) and returns it open for
/// writing. `O_CREAT | O_EXCL | O_NOFOLLOW`: an existing entry of any kind (file, symlink,
/// FIFO) is refused, so nothing the program planted is followed, truncated or opened.
pub(crate) fn create_file(
    root: &Path,
    rel: &str,
    mode: u32,
    uid: u32,
) -> Result<File, SandboxError> {
    let flags = libc::O_EXCL | libc::O_NOCTTY;
    open_for_writing(
        root,
        rel,
        flags,
        mode,
        uid,
        "create new file (no links followed)",
    )
}

/// Opens the regular file `rel` for reading and returns it with its size at open time;
/// links, FIFOs, devices and directories are refused without being followed or blocked on.
pub(crate) fn open_file(root: &Path, rel: &str) -> Result<(File, u64), SandboxError> {
    let comps = components(rel)?;
    let (name, dirs) = comps.split_last().expect("components is never empty");
    let dir = open_dirs(root, dirs, None)?;
    let path = root.join(rel);
    let fd = sys::openat2(
        dir.as_raw_fd(),
        name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
        0,
        RESOLVE,
    )
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => SandboxError::NotRegular(rel.to_string()),
        _ => SandboxError::io("open (no links followed)", &path, e),
    })?;
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| SandboxError::io("fstat", &path, e))?;
    if !meta.is_file() {
        return Err(SandboxError::NotRegular(rel.to_string()));
    }
    Ok((file, meta.len()))
}

/// Reads the regular file `rel`, at most `max_bytes` long; links, FIFOs, devices and
/// directories are refused without being followed or read.
pub(crate) fn read_file(root: &Path, rel: &str, max_bytes: u64) -> Result<Vec<u8>, SandboxError> {
    let (file, size) = open_file(root, rel)?;
    let path = root.join(rel);
    if size > max_bytes {
        return Err(SandboxError::TooLarge {
            path: rel.to_string(),
            size,
            max: max_bytes,
        });
    }
    let mut data = Vec::with_capacity(size as usize);
    // The file may grow while we read (a leftover writer): never read more than the cap.
    file.take(max_bytes + 1)
        .read_to_end(&mut data)
        .map_err(|e| SandboxError::io("read", &path, e))?;
    if data.len() as u64 > max_bytes {
        return Err(SandboxError::TooLarge {
            path: rel.to_string(),
            size: data.len() as u64,
            max: max_bytes,
        });
    }
    Ok(data)
}

/// Lists the regular files below `rel_dir` (recursively, no links followed), at most
/// `max_entries`. A missing directory is an empty listing.
pub(crate) fn list_files(
    root: &Path,
    rel_dir: &str,
    max_entries: usize,
) -> Result<Listing, SandboxError> {
    let comps = components(rel_dir)?;
    let dir = match open_dirs(root, &comps, None) {
        Ok(d) => d,
        Err(SandboxError::Io { err, .. }) if err.raw_os_error() == Some(libc::ENOENT) => {
            return Ok(Listing::default())
        }
        Err(e) => return Err(e),
    };
    let mut listing = Listing::default();
    walk(&root.join(rel_dir), &dir, "", 0, max_entries, &mut listing)?;
    listing.files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(listing)
}

fn walk(
    shown: &Path,
    dir: &OwnedFd,
    prefix: &str,
    depth: usize,
    max: usize,
    out: &mut Listing,
) -> Result<(), SandboxError> {
    let names =
        sys::read_dir_names(dir).map_err(|e| SandboxError::io("read directory", shown, e))?;
    for name in names {
        let Ok(utf8) = name.to_str() else { continue };
        let path = if prefix.is_empty() {
            utf8.to_string()
        } else {
            format!("{prefix}/{utf8}")
        };
        let Ok((kind, size)) = sys::fstatat_nofollow(dir.as_raw_fd(), &name) else {
            continue; // vanished meanwhile
        };
        if kind == libc::S_IFREG {
            if out.files.len() >= max {
                out.truncated = true;
                return Ok(());
            }
            out.files.push(FileEntry { path, size });
        } else if kind == libc::S_IFDIR && depth < MAX_DEPTH {
            let Ok(sub) = sys::openat2(
                dir.as_raw_fd(),
                &name,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
                0,
                RESOLVE,
            ) else {
                continue;
            };
            walk(shown, &sub, &path, depth + 1, max, out)?;
            if out.truncated {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::components;

    #[test]
    fn rejects_escaping_paths() {
        for bad in ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\0b"] {
            assert!(components(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(components("a/b/c.txt").unwrap().len(), 3);
        assert_eq!(components("artifacts/").unwrap().len(), 1);
    }
}
