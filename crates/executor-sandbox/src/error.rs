//! The one error type of the crate: every variant names the operation that failed.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while preparing or running a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A file or directory operation on the host failed.
    #[error("{op} {path}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        err: io::Error,
    },
    /// A system call made by the launcher (not the sandboxed program) failed.
    #[error("{op} failed")]
    Syscall {
        op: &'static str,
        #[source]
        err: io::Error,
    },
    /// The sandbox child failed while setting itself up (before the program ran).
    #[error("sandbox setup failed at `{step}`")]
    ChildSetup {
        step: String,
        #[source]
        err: io::Error,
    },
    /// The program could not be executed (not found, not executable, ...).
    #[error("cannot execute `{program}`")]
    Exec {
        program: String,
        #[source]
        err: io::Error,
    },
    /// The cgroup setup is unusable (missing hierarchy or controller).
    #[error("cgroup: {0}")]
    Cgroup(String),
    /// A request was malformed (bad relative path, NUL byte, ...).
    #[error("invalid {what}: {reason}")]
    Invalid { what: &'static str, reason: String },
    /// A file in the workspace is not a regular file (symlink, FIFO, device, directory).
    #[error("not a regular file: {0}")]
    NotRegular(String),
    /// A file in the workspace is larger than the caller's cap.
    #[error("file too large: {path} ({size} bytes > {max})")]
    TooLarge { path: String, size: u64, max: u64 },
    /// `prepare_workspace` was not called before an operation that needs it.
    #[error("no workspace is mounted")]
    NoWorkspace,
}

impl SandboxError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, err: io::Error) -> Self {
        SandboxError::Io {
            op,
            path: path.into(),
            err,
        }
    }

    pub(crate) fn sys(op: &'static str, err: io::Error) -> Self {
        SandboxError::Syscall { op, err }
    }

    pub(crate) fn invalid(what: &'static str, reason: impl Into<String>) -> Self {
        SandboxError::Invalid {
            what,
            reason: reason.into(),
        }
    }
}
