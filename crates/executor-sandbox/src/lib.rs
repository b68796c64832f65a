//! Runs untrusted programs: the only crate of Executor with `unsafe` (in [`sys`] only).
//!
//! TODO: full API doc written below once the API settles.

mod cgroup;
mod config;
mod error;
mod image;
pub mod seccomp;
mod slot;
mod sys;
mod workspace;

pub use config::{CgroupConfig, Image, RunSpec, SlotConfig, StageLimits, SANDBOX_UID};
pub use error::SandboxError;
pub use slot::{Child, Killer, Outcome, Slot};
pub use workspace::{FileEntry, Listing};
