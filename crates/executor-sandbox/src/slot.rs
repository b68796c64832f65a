//! A worker slot: its directories, its cgroup, its workspace, and the stages it runs.

use std::ffi::CString;
use std::fs;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cgroup::{Cgroup, Counters};
use crate::config::{Image, RunSpec, SlotConfig, SANDBOX_UID};
use crate::error::SandboxError;
use crate::image::{self, HostImage};
use crate::seccomp;
use crate::spawner::{Cloned, Spawner};
use crate::sys::{self, child, ChildPlan, Exit};
use crate::workspace::{self, Listing};

/// Namespaces of every sandbox.
const NAMESPACES: u64 = (libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP) as u64;

/// The same, in the slot's network namespace (held by the spawner thread) rather than a new
/// one: creating a network namespace costs ~0.8 ms per stage plus its asynchronous teardown.
const NAMESPACES_SHARED_NET: u64 = NAMESPACES & !(libc::CLONE_NEWNET as u64);

/// How a stage ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Exit code of the program (the process the sandbox init started), if it exited.
    pub exit_code: Option<i32>,
    /// Signal that ended the program; `SIGKILL` also when the whole sandbox was killed.
    pub signal: Option<i32>,
    /// The cgroup's OOM killer killed a process of this stage (from the `oom_kill` counter).
    pub oom_killed: bool,
    /// A fork/clone failed because of the pids limit (`pids.events` `max`).
    pub pids_limit_hit: bool,
    /// CPU time of all processes of the stage (cgroup accounting).
    pub cpu_ms: u64,
    /// Peak memory of the cgroup during the stage, where the kernel tells it.
    pub memory_peak_bytes: Option<u64>,
}

/// One execution slot. Create it once per worker slot and reuse it for every job:
/// `prepare_workspace` → write files → `spawn`/`wait` per stage → read artifacts → `cleanup`.
#[derive(Debug)]
pub struct Slot {
    cfg: SlotConfig,
    root_dir: PathBuf,
    workspace_dir: PathBuf,
    slot_dir: PathBuf,
    mounted: bool,
    cgroup: Arc<Cgroup>,
    /// v1: the thread inside the slot cgroups that clones every sandbox (see `spawner`).
    spawner: Option<Spawner>,
    host_image: HostImage,
    seccomp: Vec<libc::sock_filter>,
    cap_last_cap: u32,
    wipe: [(usize, usize); 2],
    /// (cgroup, memory_mb, pids) last written by `apply_limits`, to skip rewriting them.
    applied: Mutex<Option<(usize, u64, u64)>>,
    reaper: Arc<Reaper>,
}

fn make_dir(path: &Path, mode: u32) -> Result<(), SandboxError> {
    fs::create_dir_all(path).map_err(|e| SandboxError::io("create directory", path, e))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| SandboxError::io("chmod", path, e))
}

fn cpath(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| SandboxError::invalid("path", format!("{p:?} contains NUL")))
}

/// Unmounts everything stacked on `path` (a crashed worker may have left mounts behind).
fn unmount_all(path: &Path) -> Result<(), SandboxError> {
    let c = cpath(path)?;
    for _ in 0..64 {
        match sys::umount(&c, libc::MNT_DETACH) {
            Ok(()) => continue,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOENT)) => {
                return Ok(())
            }
            Err(e) => return Err(SandboxError::io("unmount", path, e)),
        }
    }
    Ok(())
}

impl Slot {
    /// Creates the slot's directories and cgroup (once; this is where the expensive work is)
    /// and clears anything a previous worker left in them.
    pub fn new(cfg: SlotConfig) -> Result<Slot, SandboxError> {
        if cfg.host_uid == 0 {
            return Err(SandboxError::invalid(
                "host_uid",
                "must not be 0 (host root)",
            ));
        }
        let slot_dir = cfg.state_dir.join(format!("slot-{}", cfg.slot));
        let root_dir = slot_dir.join("root");
        let workspace_dir = slot_dir.join("workspace");
        // 0755: the sandbox child, no longer host root, must traverse these.
        make_dir(&cfg.state_dir, 0o755)?;
        make_dir(&slot_dir, 0o755)?;
        make_dir(&root_dir, 0o755)?;
        make_dir(&workspace_dir, 0o700)?;
        let cgroup = Cgroup::create(
            &cfg.cgroup,
            &cfg.cgroup_parent,
            cfg.slot,
            cfg.require_controllers,
        )?;
        unmount_all(&workspace_dir)?;
        unmount_all(&root_dir)?;
        // The slot's network namespace, and on v1 the one cgroup migration of the slot's
        // life, happen here, not per stage.
        let spawner = match Spawner::start(format!("slot{}-spawn", cfg.slot), cgroup.tasks_files())
        {
            Ok(s) => Some(s),
            Err(e) => {
                cgroup.remove();
                return Err(e);
            }
        };
        Ok(Slot {
            cfg,
            root_dir,
            workspace_dir,
            slot_dir,
            mounted: false,
            cgroup: Arc::new(cgroup),
            spawner,
            host_image: HostImage::scan(),
            seccomp: seccomp::default_filter(),
            cap_last_cap: sys::cap_last_cap(),
            wipe: sys::arg_env_areas(),
            applied: Mutex::new(None),
            reaper: Arc::default(),
        })
    }

    /// The configuration the slot was created with.
    pub fn config(&self) -> &SlotConfig {
        &self.cfg
    }

    /// Whether the slot uses cgroup v2.
    pub fn cgroup_v2(&self) -> bool {
        self.cgroup.is_v2()
    }

    /// Host thread id of the slot's spawner thread: a thread of this process that clones every
    /// sandbox of the slot. It holds the slot's (empty, host-owned) network namespace, which
    /// the sandboxes join instead of creating one each, and on cgroup v1 it lives in the
    /// slot's memory/pids/cpuacct cgroups, so that sandboxes are born there instead of being
    /// migrated (slow on v1). On v2, `CLONE_INTO_CGROUP` places them and the thread stays out.
    pub fn spawner_thread(&self) -> Option<i32> {
        self.spawner.as_ref().and_then(Spawner::tid)
    }

    /// Mounts a fresh tmpfs (size and inode caps, owned by the sandbox user, nosuid, nodev)
    /// as the workspace of the next job, replacing any previous one. Returns its host path.
    pub fn prepare_workspace(
        &mut self,
        size_bytes: u64,
        inodes: u64,
    ) -> Result<&Path, SandboxError> {
        if self.mounted {
            self.cleanup()?;
        }
        let uid = self.cfg.host_uid;
        let data = CString::new(format!(
            "size={},nr_inodes={},mode=0700,uid={uid},gid={uid}",
            size_bytes.max(4096),
            inodes.max(16)
        ))
        .expect("no NUL");
        sys::mount(
            c"tmpfs",
            &cpath(&self.workspace_dir)?,
            c"tmpfs",
            libc::MS_NOSUID | libc::MS_NODEV,
            &data,
        )
        .map_err(|e| SandboxError::io("mount workspace tmpfs", &self.workspace_dir, e))?;
        self.mounted = true;
        Ok(&self.workspace_dir)
    }

    /// Host path of the workspace (mounted or not).
    pub fn workspace(&self) -> &Path {
        &self.workspace_dir
    }

    fn mounted_workspace(&self) -> Result<&Path, SandboxError> {
        if self.mounted {
            Ok(&self.workspace_dir)
        } else {
            Err(SandboxError::NoWorkspace)
        }
    }

    /// Writes a file into the workspace (`rel` relative to it, parents created), owned by
    /// the sandbox user. `..`, absolute paths and symlinks on the way are refused.
    pub fn write_file(&self, rel: &str, contents: &[u8], mode: u32) -> Result<(), SandboxError> {
        workspace::write_file(
            self.mounted_workspace()?,
            rel,
            contents,
            mode,
            self.cfg.host_uid,
        )
    }

    /// Creates a new file in the workspace (`rel` relative to it, parents created), owned by
    /// the sandbox user with `mode` (permission bits only), and returns it open for writing,
    /// e.g. to stream a large input in without holding it in memory. The path is resolved
    /// like [`Slot::write_file`]'s (no `..`, no absolute path, no symlink followed), and the
    /// file must not exist yet: an existing file, symlink or FIFO there is an error.
    pub fn create_file(&self, rel: &str, mode: u32) -> Result<fs::File, SandboxError> {
        workspace::create_file(self.mounted_workspace()?, rel, mode, self.cfg.host_uid)
    }

    /// Opens a regular file of the workspace for reading (e.g. to stream an artifact out) and
    /// returns it with its size at open time. Symlinks are never followed; FIFOs, devices and
    /// directories are refused without blocking (`O_NONBLOCK`). A leftover writer could still
    /// grow the file: read at most the returned size (`Read::take`).
    pub fn open_file(&self, rel: &str) -> Result<(fs::File, u64), SandboxError> {
        workspace::open_file(self.mounted_workspace()?, rel)
    }

    /// Creates a directory (and its parents) in the workspace, owned by the sandbox user.
    pub fn create_dir(&self, rel: &str) -> Result<(), SandboxError> {
        workspace::create_dir(self.mounted_workspace()?, rel, self.cfg.host_uid)
    }

    /// Reads a regular file of the workspace, at most `max_bytes`; symlinks, FIFOs, devices
    /// are refused and never followed or opened for blocking I/O.
    pub fn read_file(&self, rel: &str, max_bytes: u64) -> Result<Vec<u8>, SandboxError> {
        workspace::read_file(self.mounted_workspace()?, rel, max_bytes)
    }

    /// Lists the regular files below `rel_dir` (e.g. `"artifacts"`), recursively, without
    /// following links; at most `max_entries`.
    pub fn list_files(&self, rel_dir: &str, max_entries: usize) -> Result<Listing, SandboxError> {
        workspace::list_files(self.mounted_workspace()?, rel_dir, max_entries)
    }

    /// Starts one stage. Returns once the program has been exec'd (setup errors, including
    /// a program that cannot be executed, are returned here). Run one stage at a time per slot.
    pub fn spawn(&self, spec: &RunSpec) -> Result<Child, SandboxError> {
        let workspace = self.mounted_workspace()?;
        self.reaper.reap();
        if spec.argv.is_empty() {
            return Err(SandboxError::invalid("argv", "empty"));
        }
        let resident = u64::from(!self.cgroup.is_v2() && self.spawner_thread().is_some());
        // The limits last written, per cgroup (a v2 cleanup may replace the cgroup).
        let key = (
            Arc::as_ptr(&self.cgroup) as usize,
            spec.limits.memory_mb,
            spec.limits.pids + resident,
        );
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        let unchanged = *applied == Some(key);
        *applied = None;
        self.cgroup
            .apply_limits(&spec.limits, resident, unchanged)?;
        *applied = Some(key);
        drop(applied);
        let base = self.cgroup.counters();
        let peak_fd = self.cgroup.open_peak();

        let pipe = |what: &'static str| sys::pipe().map_err(|e| SandboxError::sys(what, e));
        let (sync_r, sync_w) = pipe("pipe (sync)")?;
        let (err_r, err_w) = pipe("pipe (errors)")?;
        let (status_r, status_w) = pipe("pipe (status)")?;
        let (stdin_child, stdin_parent) = if spec.stdin {
            let (r, w) = pipe("pipe (stdin)")?;
            (r, Some(w))
        } else {
            let null = fs::File::open("/dev/null")
                .map_err(|e| SandboxError::io("open", "/dev/null", e))?;
            (OwnedFd::from(null), None)
        };
        let (stdout_r, stdout_w) = pipe("pipe (stdout)")?;
        let (stderr_r, stderr_w) = pipe("pipe (stderr)")?;
        // Template mode (see `spawner`): the child attaches this detached bind of the
        // workspace in its copy of the template. Without it, full mode.
        let workspace_tree = match &self.spawner {
            Some(_) => sys::open_tree_clone(&cpath(workspace)?).ok(),
            None => None,
        };

        let plan = self.plan(
            spec,
            workspace,
            [
                sync_r.as_raw_fd(),
                err_w.as_raw_fd(),
                status_w.as_raw_fd(),
                stdin_child.as_raw_fd(),
                stdout_w.as_raw_fd(),
                stderr_w.as_raw_fd(),
                workspace_tree.as_ref().map_or(-1, |fd| fd.as_raw_fd()),
            ],
        )?;

        // Cloned by the spawner thread: into its network namespace, and on v1 born in the slot
        // cgroups; v2: CLONE_INTO_CGROUP.
        let cgroup_fd = self.cgroup.clone_fd();
        let (plan, cloned, born_inside) = match &self.spawner {
            Some(spawner) => match spawner.clone_sandbox(plan, NAMESPACES_SHARED_NET, cgroup_fd) {
                Cloned::Done(plan, cloned) => (plan, cloned, true),
                Cloned::NotSent(plan) => {
                    let cloned = sys::clone_sandbox(&plan, NAMESPACES, cgroup_fd);
                    (plan, cloned, self.cgroup.is_v2())
                }
                Cloned::Lost => {
                    return Err(SandboxError::sys(
                        "clone3",
                        std::io::Error::other("the slot's spawner thread died"),
                    ))
                }
            },
            None => {
                let cloned = sys::clone_sandbox(&plan, NAMESPACES, cgroup_fd);
                (plan, cloned, self.cgroup.is_v2())
            }
        };
        let (pid, pidfd) = cloned.map_err(|e| SandboxError::sys("clone3", e))?;
        drop((sync_r, err_w, status_w, stdin_child, stdout_w, stderr_w));
        drop(workspace_tree);
        let pidfd = Arc::new(pidfd);
        let abort = |err: SandboxError| -> SandboxError {
            let _ = sys::pidfd_send_signal(pidfd.as_raw_fd(), libc::SIGKILL);
            let _ = sys::wait_pidfd(pidfd.as_raw_fd());
            err
        };

        // Map the sandbox user, attach to the v1 cgroups, then let the child go.
        let host = self.cfg.host_uid;
        for (file, line) in [
            ("uid_map", format!("{SANDBOX_UID} {host} 1\n")),
            ("gid_map", format!("{SANDBOX_UID} {host} 1\n")),
        ] {
            let path = format!("/proc/{pid}/{file}");
            if let Err(e) = fs::write(&path, line) {
                return Err(abort(SandboxError::io("write", path, e)));
            }
        }
        // Two releases: after the maps (the child builds its root meanwhile), and after the
        // v1 cgroup attach (only without the spawner thread), which the child awaits before
        // starting the program.
        let mut sync_w = fs::File::from(sync_w);
        let release = |sync_w: &mut fs::File| {
            std::io::Write::write_all(sync_w, b"1")
                .map_err(|e| SandboxError::sys("release the sandbox child", e))
        };
        if let Err(e) = release(&mut sync_w) {
            return Err(abort(e));
        }
        let attached = if born_inside {
            Ok(())
        } else {
            self.cgroup.attach(pid)
        };
        if let Err(e) = attached.and_then(|()| release(&mut sync_w)) {
            return Err(abort(e));
        }
        drop(sync_w);

        // EOF: the program was exec'd. A record: setup failed.
        let mut report = Vec::with_capacity(8);
        if let Err(e) = fs::File::from(err_r).read_to_end(&mut report) {
            return Err(abort(SandboxError::sys("read the setup report", e)));
        }
        if report.len() >= 8 {
            let step = u32::from_ne_bytes(report[..4].try_into().expect("4 bytes"));
            let errno = i32::from_ne_bytes(report[4..8].try_into().expect("4 bytes"));
            let err = std::io::Error::from_raw_os_error(errno);
            let error = if step == child::STEP_EXEC {
                SandboxError::Exec {
                    program: spec.argv[0].clone(),
                    err,
                }
            } else {
                let ops = if plan.templated {
                    &plan.stage_ops
                } else {
                    &plan.ops
                };
                let name = if step < child::STEP_BASE {
                    ops.get(step as usize)
                        .map_or_else(|| "unknown".to_string(), |op| op.describe())
                } else {
                    child::step_name(step).to_string()
                };
                SandboxError::ChildSetup { step: name, err }
            };
            return Err(abort(error));
        }

        Ok(Child {
            pid,
            killer: Killer {
                pidfd: Arc::clone(&pidfd),
            },
            pidfd,
            stdin: stdin_parent,
            stdout: Some(stdout_r),
            stderr: Some(stderr_r),
            status: Some(status_r),
            cgroup: Arc::clone(&self.cgroup),
            base,
            peak_fd,
            waited: false,
            reaper: Arc::clone(&self.reaper),
        })
    }

    fn plan(
        &self,
        spec: &RunSpec,
        workspace: &Path,
        fds: [i32; 7],
    ) -> Result<ChildPlan, SandboxError> {
        let cstring = |what: &'static str, s: &str| {
            CString::new(s).map_err(|_| SandboxError::invalid(what, format!("{s:?} contains NUL")))
        };
        let part = |root: &Path, part| {
            image::plan_ops(
                root,
                &self.host_image,
                &spec.image,
                workspace,
                &spec.limits,
                part,
            )
        };
        let ops = part(&self.root_dir, image::Part::Full)?;
        let (template_ops, stage_ops) = if fds[6] >= 0 {
            (
                part(&self.root_dir, image::Part::Template)?,
                part(Path::new("/"), image::Part::Stage)?,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let Image::Host { extra_ro_binds } = &spec.image;
        let argv: Vec<CString> = spec
            .argv
            .iter()
            .map(|a| cstring("argument", a))
            .collect::<Result<_, _>>()?;
        let env: Vec<CString> = spec
            .env
            .iter()
            .map(|(k, v)| {
                if k.is_empty() || k.contains('=') {
                    return Err(SandboxError::invalid("environment variable", k.clone()));
                }
                cstring("environment variable", &format!("{k}={v}"))
            })
            .collect::<Result<_, _>>()?;
        let program = &spec.argv[0];
        let exec_candidates = if program.contains('/') {
            vec![cstring("program", program)?]
        } else {
            let path = spec
                .env
                .iter()
                .find(|(k, _)| k == "PATH")
                .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str());
            path.split(':')
                .filter(|d| !d.is_empty())
                .map(|d| cstring("program", &format!("{d}/{program}")))
                .collect::<Result<_, _>>()?
        };
        let l = &spec.limits;
        let cpu_secs = l.cpu_ms.div_ceil(1000) + 1;
        let rlimits = vec![
            (libc::RLIMIT_NOFILE, l.nofile, l.nofile),
            (libc::RLIMIT_FSIZE, l.file_size_bytes, l.file_size_bytes),
            (libc::RLIMIT_CORE, 0, 0),
            (libc::RLIMIT_CPU, cpu_secs, cpu_secs + 1),
            (libc::RLIMIT_STACK, l.stack_bytes, l.stack_bytes),
        ];
        let ptrs = |v: &[CString]| -> Vec<*const libc::c_char> {
            v.iter()
                .map(|c| c.as_ptr())
                .chain([std::ptr::null()])
                .collect()
        };
        Ok(ChildPlan {
            fds,
            uid: SANDBOX_UID,
            gid: SANDBOX_UID,
            new_root: cpath(&self.root_dir)?,
            root_tmpfs_data: c"mode=0755,size=1m,nr_inodes=4096".to_owned(),
            ops,
            templated: false,
            template_ops,
            stage_ops,
            template_key: extra_ro_binds.clone(),
            hostname: c"sandbox".to_owned(),
            cwd: cstring("cwd", &spec.cwd)?,
            exec_candidates,
            argv: ptrs(&argv),
            env: ptrs(&env),
            _argv: argv,
            _env: env,
            rlimits,
            cap_last_cap: self.cap_last_cap,
            seccomp: self.seccomp.clone(),
            wipe: self.wipe,
        })
    }

    /// Host pids of the sandbox processes currently in the slot cgroup (empty between stages;
    /// this process itself, listed on v1 because of the spawner thread, is left out).
    pub fn processes(&self) -> Vec<i32> {
        self.reaper.reap();
        self.cgroup.procs()
    }

    /// Ends the job: kills anything left in the slot cgroup, waits until it is empty and
    /// unmounts the workspace. Nothing of this job is visible to the next one.
    pub fn cleanup(&mut self) -> Result<(), SandboxError> {
        self.reaper.reap();
        // Normally empty: killing a stage's init takes its whole pid namespace down.
        if !self.cgroup.procs().is_empty() {
            if self.cgroup.is_v2() {
                // cgroup.kill, then a fresh cgroup (see `Cgroup::create`), whose limits
                // must be written again (its address may even be the old one's).
                *self.applied.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
                self.cgroup = Arc::new(Cgroup::create(
                    &self.cfg.cgroup,
                    &self.cfg.cgroup_parent,
                    self.cfg.slot,
                    self.cfg.require_controllers,
                )?);
            } else {
                self.cgroup.kill_all();
                self.cgroup.wait_empty(Duration::from_secs(10))?;
            }
        }
        if self.mounted {
            unmount_all(&self.workspace_dir)?;
            self.mounted = false;
        }
        Ok(())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let _ = self.cleanup();
        if let Some(spawner) = &self.spawner {
            spawner.stop();
        }
        self.cgroup.remove();
        for dir in [&self.root_dir, &self.workspace_dir, &self.slot_dir] {
            let _ = fs::remove_dir(dir);
        }
    }
}

/// Kills a running stage from any thread. Cheap to clone; killing a stage that has already
/// been waited for does nothing (the pidfd cannot reach another process).
#[derive(Debug, Clone)]
pub struct Killer {
    pidfd: Arc<OwnedFd>,
}

impl Killer {
    /// SIGKILLs the sandbox init; the kernel then kills every process of its pid namespace
    /// at once (no new process can be created in it meanwhile).
    pub fn kill(&self) {
        let _ = sys::pidfd_send_signal(self.pidfd.as_raw_fd(), libc::SIGKILL);
    }
}

/// A running stage.
#[derive(Debug)]
pub struct Child {
    pid: i32,
    pidfd: Arc<OwnedFd>,
    killer: Killer,
    /// Write end of the program's stdin (when [`RunSpec::stdin`] was set).
    pub stdin: Option<OwnedFd>,
    /// Read end of the program's stdout.
    pub stdout: Option<OwnedFd>,
    /// Read end of the program's stderr.
    pub stderr: Option<OwnedFd>,
    status: Option<OwnedFd>,
    cgroup: Arc<Cgroup>,
    base: Counters,
    peak_fd: Option<fs::File>,
    waited: bool,
    reaper: Arc<Reaper>,
}

/// The init of the last stage, once its outcome is known but its exit may still be under way
/// (`Child::wait` does not wait for the namespace teardown). The slot reaps it before the next
/// spawn, `processes`, `cleanup` and drop, so no stage ever overlaps the previous one's init
/// (it counts in `pids.max` and, on v1, is listed in the slot cgroup until reaped).
#[derive(Debug, Default)]
struct Reaper {
    pending: Mutex<Option<Arc<OwnedFd>>>,
}

impl Reaper {
    fn defer(&self, pidfd: Arc<OwnedFd>) {
        let old = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(pidfd);
        if let Some(old) = old {
            let _ = sys::wait_pidfd(old.as_raw_fd());
        }
    }

    /// Waits until the deferred init (if any) has exited, and reaps it.
    fn reap(&self) {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(pidfd) = pending {
            let _ = sys::wait_pidfd(pidfd.as_raw_fd());
        }
    }
}

impl Child {
    /// Host pid of the sandbox init (pid 1 inside).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// A pidfd of the sandbox init: readable once the stage has ended (for async waiting).
    pub fn pidfd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }

    /// Readable once the stage has ended, i.e. once [`Child::wait`] will not block on the
    /// stage any more: the init has reported the program's status after every other process
    /// of the stage was gone, or the init died. Sooner than [`Child::pidfd`] by the teardown
    /// of the stage's namespaces (~0.4–0.9 ms), which `wait` leaves to the slot (see
    /// `README.md`). For async waiting; do not read from it.
    pub fn ended_fd(&self) -> BorrowedFd<'_> {
        self.status
            .as_ref()
            .expect("the status pipe is only taken by wait, which consumes the child")
            .as_fd()
    }

    /// Kills the whole sandbox (all its processes) at once.
    pub fn kill(&self) {
        self.killer.kill();
    }

    /// A handle that can kill this stage from another thread.
    pub fn killer(&self) -> Killer {
        self.killer.clone()
    }

    /// CPU time used so far by all processes of the stage.
    pub fn cpu_usage_ms(&self) -> u64 {
        self.cgroup
            .cpu_usage_ns()
            .saturating_sub(self.base.cpu_usage_ns)
            / 1_000_000
    }

    /// Blocks until the stage has ended (the program exited and every process it left was
    /// killed), and reports how.
    pub fn wait(mut self) -> Result<Outcome, SandboxError> {
        // The init writes the program's status once every other process of the stage is
        // gone (it reaped them all), then closes the pipe and exits. Its own exit (the
        // teardown of the stage's namespaces, ~0.4–0.9 ms) need not delay the outcome: it is
        // reaped before anything else is done with the slot (see `Reaper`).
        let mut buf = Vec::with_capacity(4);
        if let Some(status) = self.status.take() {
            let _ = fs::File::from(status).take(4).read_to_end(&mut buf);
        }
        let program = match buf.get(..4) {
            Some(b) => {
                self.reaper.defer(Arc::clone(&self.pidfd));
                self.waited = true;
                sys::decode_wait_status(i32::from_ne_bytes(b.try_into().expect("4 bytes")))
            }
            // The init itself was killed (kill(), or the OOM killer chose it).
            None => {
                let init = sys::wait_pidfd(self.pidfd.as_raw_fd())
                    .map_err(|e| SandboxError::sys("waitid", e))?;
                self.waited = true;
                match init {
                    Exit::Signal(s) => Exit::Signal(s),
                    Exit::Code(_) => Exit::Signal(libc::SIGKILL),
                }
            }
        };
        let after = self.cgroup.counters();
        let (exit_code, signal) = match program {
            Exit::Code(c) => (Some(c), None),
            Exit::Signal(s) => (None, Some(s)),
        };
        Ok(Outcome {
            exit_code,
            signal,
            oom_killed: after.oom_kills > self.base.oom_kills,
            pids_limit_hit: after.pids_max_hits > self.base.pids_max_hits,
            cpu_ms: after.cpu_usage_ns.saturating_sub(self.base.cpu_usage_ns) / 1_000_000,
            memory_peak_bytes: self.cgroup.memory_peak(self.peak_fd.as_ref()),
        })
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.waited {
            self.killer.kill();
            let _ = sys::wait_pidfd(self.pidfd.as_raw_fd());
        }
    }
}
