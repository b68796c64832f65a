//! What the caller configures: one [`SlotConfig`] per worker slot, one [`RunSpec`] per stage.

use std::path::PathBuf;

/// The uid and gid the program has inside the sandbox (mapped to [`SlotConfig::host_uid`]).
pub const SANDBOX_UID: u32 = 1000;

/// Which cgroup hierarchy to use and where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupConfig {
    /// cgroup v2 if `/sys/fs/cgroup/cgroup.controllers` exists (pure v2 host), else v1 under
    /// `/sys/fs/cgroup`.
    Auto,
    /// cgroup v1: `root` holds one directory per hierarchy (`memory/`, `pids/`, `cpuacct/` or
    /// `cpu,cpuacct/`, ...).
    V1 { root: PathBuf },
    /// cgroup v2: `root` is a cgroup2 directory this worker may manage (with systemd, a
    /// delegated cgroup; it must not hold processes itself when controllers are enabled).
    V2 { root: PathBuf },
}

/// Configuration of one worker slot; a slot runs one job at a time.
#[derive(Debug, Clone)]
pub struct SlotConfig {
    /// Slot number; names the slot's directories and cgroups.
    pub slot: u32,
    /// Directory for per-slot mount points, e.g. `/run/executor/slots`
    /// (the slot uses `<state_dir>/slot-<n>/{root,workspace}`).
    pub state_dir: PathBuf,
    /// Unprivileged host uid (and gid) the sandbox user maps to, e.g. `200000 + slot`.
    /// Must not be 0 and should be unique to the slot.
    pub host_uid: u32,
    pub cgroup: CgroupConfig,
    /// Name of the cgroup directory (below the hierarchy root) that holds the slot cgroups,
    /// e.g. `executor`; slot cgroups are `<name>/slot-<n>`.
    pub cgroup_parent: String,
    /// Fail in [`Slot::new`](crate::Slot::new) if the memory, pids or cpu accounting
    /// controller is missing. Only tests turn this off (a cgroup2 mount without controllers).
    pub require_controllers: bool,
}

impl SlotConfig {
    /// A configuration with the defaults: auto-detected cgroups under `executor/`,
    /// host uid `200000 + slot`, controllers required.
    pub fn new(slot: u32, state_dir: impl Into<PathBuf>) -> SlotConfig {
        SlotConfig {
            slot,
            state_dir: state_dir.into(),
            host_uid: 200_000 + slot,
            cgroup: CgroupConfig::Auto,
            cgroup_parent: "executor".to_string(),
            require_controllers: true,
        }
    }
}

/// Resource limits of one stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageLimits {
    /// Memory limit of the whole sandbox (cgroup), swap excluded.
    pub memory_mb: u64,
    /// Maximum number of processes/threads of the program (the sandbox init is not counted).
    pub pids: u64,
    /// CPU time; enforced by the worker through [`Child::cpu_usage_ms`](crate::Child::cpu_usage_ms).
    /// The sandbox adds an `RLIMIT_CPU` backstop of `cpu_ms` rounded up plus one second per process.
    pub cpu_ms: u64,
    /// `RLIMIT_FSIZE`: the largest file a process may write.
    pub file_size_bytes: u64,
    /// `RLIMIT_NOFILE`.
    pub nofile: u64,
    /// `RLIMIT_STACK` (soft and hard).
    pub stack_bytes: u64,
    /// Size of the private `/tmp` tmpfs.
    pub tmp_bytes: u64,
    /// Inode cap of the private `/tmp` tmpfs.
    pub tmp_inodes: u64,
    /// Size of the private `/dev/shm` tmpfs.
    pub shm_bytes: u64,
}

impl Default for StageLimits {
    fn default() -> Self {
        StageLimits {
            memory_mb: 256,
            pids: 64,
            cpu_ms: 10_000,
            file_size_bytes: 64 << 20,
            nofile: 256,
            stack_bytes: 8 << 20,
            tmp_bytes: 64 << 20,
            tmp_inodes: 4096,
            shm_bytes: 16 << 20,
        }
    }
}

/// The file system the program sees, besides `/workspace`, `/tmp`, `/dev`, `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Image {
    /// The host's `/usr`, `/lib*`, `/bin`, `/sbin` and a minimal `/etc`, read-only, plus
    /// `extra_ro_binds` (host path, path inside), read-only.
    Host {
        extra_ro_binds: Vec<(PathBuf, PathBuf)>,
    },
}

impl Default for Image {
    fn default() -> Self {
        Image::Host {
            extra_ro_binds: Vec::new(),
        }
    }
}

/// One stage (compile or run) to execute in the slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    /// `argv[0]` is looked up in the `PATH` of `env` (inside the sandbox) unless it contains `/`.
    pub argv: Vec<String>,
    /// The complete environment; nothing from the host is inherited.
    pub env: Vec<(String, String)>,
    /// Working directory inside the sandbox, normally `/workspace`.
    pub cwd: String,
    pub image: Image,
    pub limits: StageLimits,
    /// Give the program a stdin pipe ([`Child::stdin`](crate::Child::stdin)); otherwise
    /// stdin is `/dev/null`.
    pub stdin: bool,
}

impl RunSpec {
    /// A spec with the default image, limits, `PATH`, `HOME=/workspace`, cwd `/workspace`.
    pub fn new<S: Into<String>>(argv: impl IntoIterator<Item = S>) -> RunSpec {
        RunSpec {
            argv: argv.into_iter().map(Into::into).collect(),
            env: vec![
                (
                    "PATH".to_string(),
                    "/usr/local/bin:/usr/bin:/bin".to_string(),
                ),
                ("HOME".to_string(), "/workspace".to_string()),
                ("LANG".to_string(), "C.UTF-8".to_string()),
            ],
            cwd: "/workspace".to_string(),
            image: Image::default(),
            limits: StageLimits::default(),
            stdin: false,
        }
    }
}
