//! Runs untrusted programs for Executor's worker: namespaces, mounts, cgroups, rlimits,
//! capabilities and seccomp. The only crate of the workspace with `unsafe`, confined to the
//! `sys` module (system call wrappers and the code between clone3 and execve).
//!
//! Why a launcher of our own rather than bwrap/nsjail: one clone3 into every namespace,
//! born straight into the slot cgroup (v2: `CLONE_INTO_CGROUP`; v1: made by the slot's
//! spawner thread, which lives in the slot cgroups and holds the slot's empty network
//! namespace, see `README.md`), no helper process to exec, slots created once and reused, the
//! read-only image kept per slot as a template mount namespace that each stage copies and
//! only adds its own mounts to, and outcomes (OOM, pids limit, CPU) read from the slot's
//! cgroup counters.
//!
//! # Model
//!
//! A [`Slot`] is created once per worker slot; it owns a cgroup (v1: one per hierarchy,
//! v2: one directory) and a workspace mount point. Per job: [`Slot::prepare_workspace`]
//! mounts a fresh tmpfs, [`Slot::write_file`] (or [`Slot::create_file`] to stream) puts the
//! sources in, [`Slot::spawn`] runs a
//! stage and [`Child::wait`] reports its [`Outcome`]; [`Slot::list_files`] /
//! [`Slot::read_file`] / [`Slot::open_file`] collect artifacts; [`Slot::cleanup`] kills leftovers and unmounts.
//!
//! Each stage runs in new user, pid, mount, network, ipc, uts and cgroup namespaces as uid
//! and gid [`SANDBOX_UID`] (mapped to [`SlotConfig::host_uid`], never host root), with no
//! capabilities, `no_new_privs`, the [`seccomp::policy`] filter, rlimits, a read-only root
//! (host `/usr`, `/lib*`, `/bin`, `/sbin`, a minimal `/etc`), `/workspace` (the slot's
//! tmpfs), private `/tmp` and `/dev/shm` tmpfs with caps, a minimal `/dev`, a fresh `/proc`
//! with kernel knobs read-only, and no `/sys`. pid 1 of the namespace is a small init that
//! reaps, and kills everything left when the program exits; its exit status is the program's.
//!
//! # Example
//!
//! ```no_run
//! use std::io::Read;
//! use executor_sandbox::{RunSpec, Slot, SlotConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut slot = Slot::new(SlotConfig::new(0, "/run/executor/slots"))?; // once per slot
//!
//! slot.prepare_workspace(64 << 20, 10_000)?;                 // per job
//! slot.write_file("main.py", b"print(input()[::-1])", 0o644)?;
//!
//! let mut spec = RunSpec::new(["python3", "main.py"]);
//! spec.limits.memory_mb = 128;
//! spec.stdin = true;
//! let mut child = slot.spawn(&spec)?;
//! let killer = child.killer();                               // e.g. for a wall-clock timer
//! std::fs::File::from(child.stdin.take().unwrap()).write_all_compat(b"hello\n");
//! let mut out = String::new();
//! std::fs::File::from(child.stdout.take().unwrap()).read_to_string(&mut out)?;
//! let outcome = child.wait()?;                               // blocking: use spawn_blocking
//! assert_eq!((outcome.exit_code, out.as_str()), (Some(0), "olleh\n"));
//! # drop(killer);
//!
//! for file in slot.list_files("artifacts", 16)?.files {
//!     let _bytes = slot.read_file(&format!("artifacts/{}", file.path), 10 << 20)?;
//! }
//! slot.cleanup()?;                                          // nothing survives the job
//! # Ok(()) }
//! # trait WriteCompat { fn write_all_compat(self, b: &[u8]); }
//! # impl WriteCompat for std::fs::File {
//! #     fn write_all_compat(mut self, b: &[u8]) { std::io::Write::write_all(&mut self, b).unwrap() }
//! # }
//! ```
//!
//! Stdout and stderr must be drained concurrently with waiting (threads or async readers on
//! the fds), or a chatty program blocks on a full pipe until it is killed. The worker
//! enforces wall time and CPU time: poll [`Child::cpu_usage_ms`] and call [`Killer::kill`];
//! `RLIMIT_CPU` is only a backstop. [`Child::pidfd`] becomes readable when the stage ends.
//!
//! # Host requirements
//!
//! Root (or `CAP_SYS_ADMIN` + `CAP_SETUID`/`CAP_SETGID` + write access to the cgroups),
//! Linux >= 5.12 (`mount_setattr`; `CLONE_INTO_CGROUP` needs 5.7), x86_64 (the seccomp
//! filter is x86_64-only). cgroup v1 with `memory`, `pids`, `cpuacct` hierarchies or cgroup v2
//! with `memory` and `pids` controllers available to [`CgroupConfig::V2`]'s root.

mod cgroup;
mod config;
mod error;
mod image;
pub mod seccomp;
mod slot;
mod spawner;
mod sys;
mod workspace;

pub use config::{CgroupConfig, Image, RunSpec, SlotConfig, StageLimits, SANDBOX_UID};
pub use error::SandboxError;
pub use slot::{Child, Killer, Outcome, Slot};
pub use workspace::{FileEntry, Listing};
