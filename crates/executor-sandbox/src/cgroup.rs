//! The slot's cgroup(s): created once per slot, limits rewritten per stage, counters read
//! before and after each stage. v1 (one directory per hierarchy) and v2 (one directory).
//!
//! Paths are always derived from a root passed in by the caller (like firecracker's jailer),
//! so tests can point at any mount or at a plain directory.

use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::{CgroupConfig, StageLimits};
use crate::error::SandboxError;

/// Counters of the slot cgroup; a stage's figures are differences of two snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    pub oom_kills: u64,
    pub pids_max_hits: u64,
    pub cpu_usage_ns: u64,
}

#[derive(Debug)]
pub(crate) enum Cgroup {
    V1 {
        memory: Option<PathBuf>,
        pids: Option<PathBuf>,
        cpuacct: Option<PathBuf>,
        memsw: bool,
    },
    V2 {
        dir: PathBuf,
        /// O_PATH fd of `dir`, for CLONE_INTO_CGROUP.
        fd: OwnedFd,
        memory: bool,
        pids: bool,
    },
}

fn write(path: &Path, value: &str) -> Result<(), SandboxError> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| SandboxError::io("write", path, e))
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The value of `key` in a flat-keyed file (`memory.events`, `cpu.stat`, `pids.events`, ...).
fn read_key(path: &Path, key: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

fn mkdir(path: &Path) -> Result<(), SandboxError> {
    match fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(SandboxError::io("create cgroup", path, e)),
    }
}

/// The pids listed in a `cgroup.procs` file, except our own: on v1 the slot's spawner thread
/// puts the worker's pid into that list (see `spawner`), and the worker is never a sandbox
/// process to kill or wait for.
fn procs(dir: &Path) -> Vec<i32> {
    let me = std::process::id() as i32;
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| {
            s.lines()
                .filter_map(|l| l.trim().parse().ok())
                .filter(|&pid| pid != me)
                .collect()
        })
        .unwrap_or_default()
}

impl Cgroup {
    /// Resolves `Auto`: v2 if the unified hierarchy is mounted at /sys/fs/cgroup.
    pub(crate) fn resolve(cfg: &CgroupConfig) -> CgroupConfig {
        match cfg {
            CgroupConfig::Auto => {
                if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
                    CgroupConfig::V2 {
                        root: "/sys/fs/cgroup".into(),
                    }
                } else {
                    CgroupConfig::V1 {
                        root: "/sys/fs/cgroup".into(),
                    }
                }
            }
            other => other.clone(),
        }
    }

    /// Creates (or adopts) the slot cgroup `<parent>/slot-<n>` and kills anything a previous
    /// worker left in it.
    pub(crate) fn create(
        cfg: &CgroupConfig,
        parent: &str,
        slot: u32,
        require_controllers: bool,
    ) -> Result<Cgroup, SandboxError> {
        let name = format!("slot-{slot}");
        let cg = match Cgroup::resolve(cfg) {
            CgroupConfig::V1 { root } => {
                let hierarchy = |names: &[&str]| -> Option<PathBuf> {
                    names.iter().map(|n| root.join(n)).find(|p| p.is_dir())
                };
                let mut dirs = [None, None, None];
                for (i, names) in [
                    &["memory"][..],
                    &["pids"][..],
                    &["cpuacct", "cpu,cpuacct", "cpuacct,cpu"][..],
                ]
                .iter()
                .enumerate()
                {
                    if let Some(h) = hierarchy(names) {
                        let p = h.join(parent);
                        mkdir(&p)?;
                        let dir = p.join(&name);
                        mkdir(&dir)?;
                        dirs[i] = Some(dir);
                    } else if require_controllers {
                        return Err(SandboxError::Cgroup(format!(
                            "no {} hierarchy under {}",
                            names[0],
                            root.display()
                        )));
                    }
                }
                let [memory, pids, cpuacct] = dirs;
                let memsw = memory
                    .as_ref()
                    .is_some_and(|m| m.join("memory.memsw.limit_in_bytes").exists());
                if let Some(m) = &memory {
                    // Best effort: keep the program's memory in RAM, where the limit counts.
                    let _ = write(&m.join("memory.swappiness"), "0");
                }
                Cgroup::V1 {
                    memory,
                    pids,
                    cpuacct,
                    memsw,
                }
            }
            CgroupConfig::V2 { root } => {
                let p = root.join(parent);
                enable_controllers(&root);
                mkdir(&p)?;
                enable_controllers(&p);
                let dir = p.join(&name);
                mkdir(&dir)?;
                if !procs(&dir).is_empty() {
                    // A previous worker's leftovers. After cgroup.kill the cgroup cannot be
                    // used with CLONE_INTO_CGROUP any more (the kernel compares the parent's
                    // kill_seq with the target's and SIGKILLs the newborn child on mismatch;
                    // seen on 6.18), so kill, remove and recreate it.
                    let _ = write(&dir.join("cgroup.kill"), "1");
                    wait_until_empty(&dir, Duration::from_secs(10))?;
                    fs::remove_dir(&dir).map_err(|e| SandboxError::io("remove cgroup", &dir, e))?;
                    mkdir(&dir)?;
                }
                let available = fs::read_to_string(dir.join("cgroup.controllers"))
                    .map_err(|e| SandboxError::io("read", dir.join("cgroup.controllers"), e))?;
                let has = |c: &str| available.split_whitespace().any(|x| x == c);
                let (memory, pids) = (has("memory"), has("pids"));
                if require_controllers && !(memory && pids) {
                    return Err(SandboxError::Cgroup(format!(
                        "{} lacks the memory or pids controller (has: {})",
                        dir.display(),
                        available.trim()
                    )));
                }
                let fd = fs::File::open(&dir)
                    .map_err(|e| SandboxError::io("open", &dir, e))?
                    .into();
                if memory {
                    write(&dir.join("memory.oom.group"), "1")?;
                    write(&dir.join("memory.swap.max"), "0")?;
                }
                Cgroup::V2 {
                    dir,
                    fd,
                    memory,
                    pids,
                }
            }
            CgroupConfig::Auto => unreachable!("resolved above"),
        };
        cg.kill_all();
        cg.wait_empty(Duration::from_secs(5))?;
        Ok(cg)
    }

    pub(crate) fn is_v2(&self) -> bool {
        matches!(self, Cgroup::V2 { .. })
    }

    /// The fd for CLONE_INTO_CGROUP (v2 only).
    pub(crate) fn clone_fd(&self) -> Option<RawFd> {
        match self {
            Cgroup::V1 { .. } => None,
            Cgroup::V2 { fd, .. } => Some(fd.as_raw_fd()),
        }
    }

    /// v1: the `tasks` files of the slot's hierarchies (a thread writing `0` there moves
    /// itself in); empty on v2.
    pub(crate) fn tasks_files(&self) -> Vec<PathBuf> {
        match self {
            Cgroup::V1 {
                memory,
                pids,
                cpuacct,
                ..
            } => [memory, pids, cpuacct]
                .into_iter()
                .flatten()
                .map(|d| d.join("tasks"))
                .collect(),
            Cgroup::V2 { .. } => Vec::new(),
        }
    }

    /// Writes the stage's memory and pids limits. The sandbox init counts as one pid, and
    /// `resident_tasks` (the v1 spawner thread) are counted too.
    /// With `unchanged` (the same values were written to this cgroup before), only the v1
    /// peak is reset: rewriting a limit with its value is a no-op, and each write is an
    /// open/write/close of a cgroup file on the spawn path.
    pub(crate) fn apply_limits(
        &self,
        limits: &StageLimits,
        resident_tasks: u64,
        unchanged: bool,
    ) -> Result<(), SandboxError> {
        let mem = (limits.memory_mb.max(1) << 20).to_string();
        let pids = (limits.pids + 1 + resident_tasks).to_string();
        if unchanged {
            if let Cgroup::V1 {
                memory: Some(m), ..
            } = self
            {
                let _ = write(&m.join("memory.max_usage_in_bytes"), "0");
            }
            return Ok(());
        }
        match self {
            Cgroup::V1 {
                memory,
                pids: pids_dir,
                memsw,
                ..
            } => {
                if let Some(m) = memory {
                    let limit = m.join("memory.limit_in_bytes");
                    let sw = m.join("memory.memsw.limit_in_bytes");
                    // memsw must stay >= the memory limit: order the writes accordingly.
                    if write(&limit, &mem).is_err() && *memsw {
                        write(&sw, &mem)?;
                        write(&limit, &mem)?;
                    }
                    if *memsw {
                        write(&sw, &mem)?;
                    }
                    // Reset the peak so it describes this stage.
                    let _ = write(&m.join("memory.max_usage_in_bytes"), "0");
                }
                if let Some(p) = pids_dir {
                    write(&p.join("pids.max"), &pids)?;
                }
            }
            Cgroup::V2 {
                dir,
                memory,
                pids: has_pids,
                ..
            } => {
                if *memory {
                    write(&dir.join("memory.max"), &mem)?;
                }
                if *has_pids {
                    write(&dir.join("pids.max"), &pids)?;
                }
            }
        }
        Ok(())
    }

    /// On v1 the child is moved in by pid (v2 creates it inside with CLONE_INTO_CGROUP).
    pub(crate) fn attach(&self, pid: i32) -> Result<(), SandboxError> {
        if let Cgroup::V1 {
            memory,
            pids,
            cpuacct,
            ..
        } = self
        {
            let pid = pid.to_string();
            for dir in [memory, pids, cpuacct].into_iter().flatten() {
                write(&dir.join("cgroup.procs"), &pid)?;
            }
        }
        Ok(())
    }

    pub(crate) fn counters(&self) -> Counters {
        match self {
            Cgroup::V1 {
                memory,
                pids,
                cpuacct,
                ..
            } => Counters {
                oom_kills: memory
                    .as_ref()
                    .and_then(|m| read_key(&m.join("memory.oom_control"), "oom_kill"))
                    .unwrap_or(0),
                pids_max_hits: pids
                    .as_ref()
                    .and_then(|p| read_key(&p.join("pids.events"), "max"))
                    .unwrap_or(0),
                cpu_usage_ns: cpuacct
                    .as_ref()
                    .and_then(|c| read_u64(&c.join("cpuacct.usage")))
                    .unwrap_or(0),
            },
            Cgroup::V2 { dir, .. } => Counters {
                oom_kills: read_key(&dir.join("memory.events"), "oom_kill").unwrap_or(0),
                pids_max_hits: read_key(&dir.join("pids.events"), "max").unwrap_or(0),
                cpu_usage_ns: read_key(&dir.join("cpu.stat"), "usage_usec").unwrap_or(0) * 1000,
            },
        }
    }

    pub(crate) fn cpu_usage_ns(&self) -> u64 {
        match self {
            Cgroup::V1 { cpuacct, .. } => cpuacct
                .as_ref()
                .and_then(|c| read_u64(&c.join("cpuacct.usage")))
                .unwrap_or(0),
            Cgroup::V2 { dir, .. } => {
                read_key(&dir.join("cpu.stat"), "usage_usec").unwrap_or(0) * 1000
            }
        }
    }

    /// Peak memory since the last `apply_limits` (v1) or of the cgroup's life (v2 without a
    /// per-fd reset); `None` without the memory controller.
    pub(crate) fn memory_peak(&self, v2_peak_fd: Option<&fs::File>) -> Option<u64> {
        match self {
            Cgroup::V1 { memory, .. } => memory
                .as_ref()
                .and_then(|m| read_u64(&m.join("memory.max_usage_in_bytes"))),
            Cgroup::V2 { dir, .. } => match v2_peak_fd {
                Some(f) => {
                    use std::os::unix::fs::FileExt;
                    let mut buf = [0u8; 32];
                    let n = f.read_at(&mut buf, 0).ok()?;
                    std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
                }
                None => read_u64(&dir.join("memory.peak")),
            },
        }
    }

    /// v2 (kernel >= 6.12): an fd on `memory.peak` whose peak starts now.
    pub(crate) fn open_peak(&self) -> Option<fs::File> {
        match self {
            Cgroup::V2 {
                dir, memory: true, ..
            } => {
                let mut f = fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(dir.join("memory.peak"))
                    .ok()?;
                f.write_all(b"reset").ok()?;
                Some(f)
            }
            _ => None,
        }
    }

    /// Every process in the slot cgroup.
    pub(crate) fn procs(&self) -> Vec<i32> {
        match self {
            Cgroup::V1 {
                memory,
                pids,
                cpuacct,
                ..
            } => {
                let mut all: Vec<i32> = [memory, pids, cpuacct]
                    .into_iter()
                    .flatten()
                    .flat_map(|d| procs(d))
                    .collect();
                all.sort_unstable();
                all.dedup();
                all
            }
            Cgroup::V2 { dir, .. } => procs(dir),
        }
    }

    /// SIGKILLs each process listed in the cgroup (only sandbox processes can be in the slot
    /// cgroup). On v2, [`Cgroup::create`] uses `cgroup.kill` and recreates the cgroup instead;
    /// see there why `cgroup.kill` is not used on a cgroup we keep.
    pub(crate) fn kill_all(&self) {
        match self {
            Cgroup::V2 { .. } | Cgroup::V1 { .. } => {
                for pid in self.procs() {
                    let _ = crate::sys::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Waits until no process is left in the cgroup (killed processes take a moment to go).
    pub(crate) fn wait_empty(&self, timeout: Duration) -> Result<(), SandboxError> {
        let start = Instant::now();
        let mut delay = Duration::from_micros(100);
        loop {
            if self.procs().is_empty() {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(SandboxError::Cgroup(format!(
                    "processes survive in the slot cgroup: {:?}",
                    self.procs()
                )));
            }
            self.kill_all();
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_millis(20));
        }
    }

    /// Removes the slot cgroup directories (the shared parent stays). Retries `EBUSY` for a
    /// moment: a thread that just exited (the v1 spawner) leaves the cgroup a little later.
    pub(crate) fn remove(&self) {
        let dirs: Vec<&PathBuf> = match self {
            Cgroup::V1 {
                memory,
                pids,
                cpuacct,
                ..
            } => [memory, pids, cpuacct].into_iter().flatten().collect(),
            Cgroup::V2 { dir, .. } => vec![dir],
        };
        for dir in dirs {
            let start = Instant::now();
            while let Err(e) = fs::remove_dir(dir) {
                if e.raw_os_error() != Some(libc::EBUSY) || start.elapsed() > Duration::from_secs(1)
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Waits until the v2 cgroup `dir` has no process left.
fn wait_until_empty(dir: &Path, timeout: Duration) -> Result<(), SandboxError> {
    let start = Instant::now();
    while !procs(dir).is_empty() {
        if start.elapsed() > timeout {
            return Err(SandboxError::Cgroup(format!(
                "processes survive in {}: {:?}",
                dir.display(),
                procs(dir)
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Best effort: enable memory, pids and cpu for the children of `dir` (v2).
fn enable_controllers(dir: &Path) {
    let Ok(available) = fs::read_to_string(dir.join("cgroup.controllers")) else {
        return;
    };
    for c in ["memory", "pids", "cpu"] {
        if available.split_whitespace().any(|x| x == c) {
            let _ = write(&dir.join("cgroup.subtree_control"), &format!("+{c}"));
        }
    }
}
