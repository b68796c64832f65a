//! Code that runs in the cloned sandbox child, between clone3 and execve.
//!
//! The child is a copy of a multi-threaded process, so it may only make raw system calls:
//! no allocation, no locks, no glibc functions that talk to other threads (`setuid` and
//! friends broadcast to threads, `fork` runs atfork handlers), no panics. Everything it
//! needs is prepared by the parent in a [`ChildPlan`]. Failures are reported to the parent as
//! `(step, errno)` on the error pipe, which the parent turns into a `SandboxError`.
//!
//! The child becomes pid 1 of the new pid namespace: it sets up the file system and then acts
//! as the init — it forks the program, reaps every process, and when the program exits it
//! kills everything left in the namespace and reports the program's wait status.

use std::ffi::{c_char, CString};
use std::os::fd::RawFd;

use super::{MountAttr, SYS_CLOSE_RANGE, SYS_MOUNT_SETATTR, SYS_MOVE_MOUNT};

/// Fixed fd numbers in the child after [`move_fds`].
const FD_SYNC: RawFd = 3;
const FD_ERR: RawFd = 4;
const FD_STATUS: RawFd = 5;
const FD_IN: RawFd = 6;
const FD_OUT: RawFd = 7;
const FD_ERROUT: RawFd = 8;
/// The detached workspace bind (template mode only).
const FD_WS: RawFd = 9;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// Steps reported on the error pipe; below `STEP_BASE` a step is an index into `ChildPlan::ops`.
pub(crate) const STEP_BASE: u32 = 1 << 16;
pub(crate) const STEP_FDS: u32 = STEP_BASE;
pub(crate) const STEP_SYNC: u32 = STEP_BASE + 1;
pub(crate) const STEP_SETGROUPS: u32 = STEP_BASE + 2;
pub(crate) const STEP_SETGID: u32 = STEP_BASE + 3;
pub(crate) const STEP_SETUID: u32 = STEP_BASE + 4;
pub(crate) const STEP_PRIVATE: u32 = STEP_BASE + 5;
pub(crate) const STEP_ROOT_TMPFS: u32 = STEP_BASE + 6;
pub(crate) const STEP_PIVOT: u32 = STEP_BASE + 7;
pub(crate) const STEP_ROOT_RO: u32 = STEP_BASE + 8;
pub(crate) const STEP_HOSTNAME: u32 = STEP_BASE + 9;
pub(crate) const STEP_FORK: u32 = STEP_BASE + 10;
pub(crate) const STEP_STDIO: u32 = STEP_BASE + 11;
pub(crate) const STEP_CHDIR: u32 = STEP_BASE + 12;
pub(crate) const STEP_RLIMIT: u32 = STEP_BASE + 13;
pub(crate) const STEP_CAPS: u32 = STEP_BASE + 14;
pub(crate) const STEP_NO_NEW_PRIVS: u32 = STEP_BASE + 15;
pub(crate) const STEP_SECCOMP: u32 = STEP_BASE + 16;
pub(crate) const STEP_EXEC: u32 = STEP_BASE + 17;

/// Human-readable name of a fixed step.
pub(crate) fn step_name(step: u32) -> &'static str {
    match step {
        STEP_FDS => "arrange file descriptors",
        STEP_SYNC => "wait for the parent",
        STEP_SETGROUPS => "setgroups",
        STEP_SETGID => "setresgid",
        STEP_SETUID => "setresuid",
        STEP_PRIVATE => "make mounts private",
        STEP_ROOT_TMPFS => "mount the root tmpfs",
        STEP_PIVOT => "pivot_root",
        STEP_ROOT_RO => "remount / read-only",
        STEP_HOSTNAME => "sethostname",
        STEP_FORK => "fork the program",
        STEP_STDIO => "set up stdio",
        STEP_CHDIR => "chdir to the working directory",
        STEP_RLIMIT => "setrlimit",
        STEP_CAPS => "drop capabilities",
        STEP_NO_NEW_PRIVS => "PR_SET_NO_NEW_PRIVS",
        STEP_SECCOMP => "install the seccomp filter",
        STEP_EXEC => "execve",
        _ => "unknown step",
    }
}

/// One file system operation, with absolute paths as seen before `pivot_root`.
#[derive(Debug)]
pub(crate) enum FsOp {
    /// mkdir; an existing directory is fine.
    Mkdir {
        path: CString,
        mode: u32,
    },
    /// Create an empty file (a mount point for a file bind).
    Touch {
        path: CString,
    },
    Symlink {
        target: CString,
        path: CString,
    },
    WriteFile {
        path: CString,
        data: Vec<u8>,
    },
    /// Bind `src` on `dst`, then set the `MOUNT_ATTR_*` flags in `set`.
    Bind {
        src: CString,
        dst: CString,
        set: u64,
        recursive: bool,
    },
    /// mount(2) a fresh `fstype` (tmpfs, proc) on `dst`.
    Mount {
        fstype: CString,
        dst: CString,
        flags: libc::c_ulong,
        data: CString,
    },
    /// mount_setattr(2) on an existing mount.
    SetAttr {
        path: CString,
        set: u64,
    },
    /// Attach the detached bind of the workspace the parent passed (on `FD_WS`) at `dst`,
    /// then set `set` on it.
    MoveWorkspace {
        dst: CString,
        set: u64,
    },
}

impl FsOp {
    pub(crate) fn describe(&self) -> String {
        let s = |c: &CString| c.to_string_lossy().into_owned();
        match self {
            FsOp::Mkdir { path, .. } => format!("mkdir {}", s(path)),
            FsOp::Touch { path } => format!("create {}", s(path)),
            FsOp::Symlink { target, path } => format!("symlink {} -> {}", s(path), s(target)),
            FsOp::WriteFile { path, .. } => format!("write {}", s(path)),
            FsOp::Bind { src, dst, .. } => format!("bind {} on {}", s(src), s(dst)),
            FsOp::Mount { fstype, dst, .. } => format!("mount {} on {}", s(fstype), s(dst)),
            FsOp::SetAttr { path, .. } => format!("mount_setattr {}", s(path)),
            FsOp::MoveWorkspace { dst, .. } => format!("attach the workspace on {}", s(dst)),
        }
    }
}

/// Everything the child needs, built by the parent before clone3.
pub(crate) struct ChildPlan {
    /// Parent-side fds: sync (read), error (write), status (write), stdin, stdout, stderr.
    /// And the detached bind of the workspace (`open_tree`), or -1: used in template mode.
    pub fds: [RawFd; 7],
    pub uid: u32,
    pub gid: u32,
    pub new_root: CString,
    pub root_tmpfs_data: CString,
    /// Full mode: everything, on a fresh root tmpfs, then `pivot_root` (the child is cloned
    /// in the host mount namespace).
    pub ops: Vec<FsOp>,
    /// Template mode (`templated`): the child is cloned by the spawner thread while it is in a
    /// template mount namespace built from `template_ops` (see `super::build_template`),
    /// already rooted at the image; the child only runs `stage_ops`.
    pub templated: bool,
    pub template_ops: Vec<FsOp>,
    pub stage_ops: Vec<FsOp>,
    /// What makes templates differ (the image's extra binds).
    pub template_key: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    pub hostname: CString,
    pub cwd: CString,
    /// Paths to try for execve, in order (PATH lookup done by the parent).
    pub exec_candidates: Vec<CString>,
    /// NULL-terminated pointers into `_argv` / `_env`.
    pub argv: Vec<*const c_char>,
    pub env: Vec<*const c_char>,
    pub _argv: Vec<CString>,
    pub _env: Vec<CString>,
    /// (resource, soft, hard)
    pub rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
    pub cap_last_cap: u32,
    pub seccomp: Vec<libc::sock_filter>,
    /// The parent's argv and environ strings (start, end): zeroed in the child, so the
    /// program cannot read the worker's command line or environment from `/proc/1`.
    pub wipe: [(usize, usize); 2],
}

// SAFETY: the only non-Send fields are `argv` and `env`, raw pointers into the heap buffers
// of `_argv` and `_env`, which the plan owns and which do not move when the plan moves. The
// plan is handed whole to the slot's spawner thread (cgroup v1) and back; nothing aliases it
// meanwhile, and the pointers are only dereferenced by the kernel (execve) in the child.
unsafe impl Send for ChildPlan {}

// Wraps raw syscalls used below so each unsafe block stays small and commented.

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Reports `(step, errno)` on the error pipe and exits. Never returns.
fn fail(step: u32, err: i32) -> ! {
    let mut buf = [0u8; 8];
    buf[..4].copy_from_slice(&step.to_ne_bytes());
    buf[4..].copy_from_slice(&err.to_ne_bytes());
    // SAFETY: writing a stack buffer to an fd; _exit never returns and runs no destructors.
    unsafe {
        libc::write(FD_ERR, buf.as_ptr().cast(), buf.len());
        libc::_exit(126)
    }
}

fn check(step: u32, ret: libc::c_long) {
    if ret < 0 {
        fail(step, errno());
    }
}

/// Entry point of the cloned child. Never returns.
pub(crate) fn main(plan: &ChildPlan) -> ! {
    reset_signals();
    hide_parent_args(plan);
    move_fds(plan);

    // Wait until the parent wrote our uid/gid maps.
    wait_for_parent();
    become_sandbox_user(plan);
    build_root(plan);
    // Wait until the parent attached us to the v1 cgroups (done while we built the root:
    // the migration costs milliseconds); the program must start inside them.
    wait_for_parent();
    // SAFETY: closing our own fd.
    unsafe { libc::close(FD_SYNC) };

    // SAFETY: sethostname with a valid buffer and length.
    check(STEP_HOSTNAME, unsafe {
        libc::sethostname(plan.hostname.as_ptr(), plan.hostname.as_bytes().len())
    } as libc::c_long);

    // Start the program vfork-style (CLONE_VM | CLONE_VFORK, like posix_spawn): it runs on
    // its own stack in our address space until its execve, and we are suspended meanwhile.
    // A fork would copy the page tables of this copy of the worker (~0.5 ms here, more with a
    // bigger worker) only for execve to throw them away. Everything per-process the program
    // changes before exec (fds, cwd, session, rlimits, credentials, seccomp) is its own: no
    // CLONE_FILES/FS/THREAD/SIGHAND. glibc's fork would also run atfork handlers; clone(3)
    // does not.
    let mut stack = ProgramStack([0; PROGRAM_STACK]);
    let arg = plan as *const ChildPlan as *mut libc::c_void;
    // SAFETY: `stack` outlives the child's use of it (we are suspended until the child execs
    // or exits, and it never returns to us); the stack grows down from its 16-byte aligned
    // end. The child only runs `program_entry`, which makes raw system calls with data from
    // the plan and stack values, and execs or `_exit`s. Signal handlers are all default
    // (`reset_signals`), so nothing runs on our stack in its place.
    let pid = unsafe {
        let top = stack
            .0
            .as_mut_ptr()
            .add(PROGRAM_STACK)
            .cast::<libc::c_void>();
        libc::clone(
            program_entry,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            arg,
        )
    };
    check(STEP_FORK, pid as libc::c_long);
    init_loop(pid as libc::pid_t)
}

/// Stack of the program between clone and execve (it makes a few system calls only).
const PROGRAM_STACK: usize = 64 << 10;

#[repr(C, align(16))]
struct ProgramStack([u8; PROGRAM_STACK]);

/// Entry of the vfork-style program child: `arg` is the init's `&ChildPlan`.
extern "C" fn program_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `&ChildPlan` the init passed to clone; the init is suspended
    // (CLONE_VFORK) and the plan lives in its (shared) memory, unchanged, until we exec.
    let plan = unsafe { &*(arg as *const ChildPlan) };
    exec_program(plan)
}

/// Blocks until the parent sends a byte on the sync pipe; exits quietly if it gave up.
fn wait_for_parent() {
    let mut byte = 0u8;
    // SAFETY: reading one byte into a stack variable.
    let n = unsafe { libc::read(FD_SYNC, (&mut byte as *mut u8).cast(), 1) };
    if n != 1 {
        // The parent failed or was killed (EOF): nobody to report to.
        // SAFETY: _exit is always safe.
        unsafe { libc::_exit(125) };
    }
}

/// Overwrites the (copied) argv/environ strings of the parent: `/proc/1/cmdline` then reads
/// `sandbox-init`. The environ area is also unreadable (the init is not dumpable), but
/// zeroing it does not depend on that.
fn hide_parent_args(plan: &ChildPlan) {
    for &(start, end) in &plan.wipe {
        if start != 0 && end > start {
            // SAFETY: [start, end) is the argv/environ string area at the top of the main
            // thread's stack, mapped and writable; this child owns its private copy and
            // nothing in it reads those strings any more.
            unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
        }
    }
    let name = b"sandbox-init";
    let (start, end) = plan.wipe[0];
    if start != 0 && end - start > name.len() {
        // SAFETY: inside the area zeroed above, NUL-terminated by the zeroing.
        unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), start as *mut u8, name.len()) };
    }
}

/// Default disposition for every signal and an empty mask: the parent's handlers (e.g. a
/// runtime's) must not run here, and an ignored SIGPIPE must not leak into the program.
fn reset_signals() {
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask; errors (glibc-reserved
        // signals) are irrelevant.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    // SAFETY: sigset on the stack, initialised by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// Moves the six plan fds to 3..=8 and closes every other fd the parent had open (other
/// slots' pipes, sockets): the init never execs, so close-on-exec would not help.
fn move_fds(plan: &ChildPlan) {
    let mut hi: RawFd = 10;
    for &fd in &plan.fds {
        hi = hi.max(fd + 1);
    }
    let mut tmp = [-1 as RawFd; 7];
    for (i, &fd) in plan.fds.iter().enumerate() {
        if fd < 0 || (i == 6 && !plan.templated) {
            continue; // no workspace tree fd, or not needed (full mode)
        }
        // SAFETY: duplicating an fd inherited from the parent.
        let t = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, hi) };
        check(STEP_FDS, t as libc::c_long);
        tmp[i] = t;
    }
    for (i, &t) in tmp.iter().enumerate() {
        if t < 0 {
            continue;
        }
        // SAFETY: dup3 onto a fixed number; the temporaries are >= 9 so none is clobbered.
        check(
            STEP_FDS,
            unsafe { libc::dup3(t, 3 + i as RawFd, libc::O_CLOEXEC) } as libc::c_long,
        );
    }
    // SAFETY: close_range closes fds we no longer need (0..=2 belong to the parent's stdio,
    // 10.. to the parent); this process never uses them.
    unsafe {
        libc::close(0);
        libc::close(1);
        libc::close(2);
        check(
            STEP_FDS,
            libc::syscall(SYS_CLOSE_RANGE, 10u32, u32::MAX, 0u32),
        );
    }
}

/// Drops the parent's supplementary groups and switches to the mapped sandbox uid/gid.
/// Capabilities in the new user namespace are kept (the previous uid was not the
/// namespace's root, so no setuid fixup happens) until the program drops them before exec.
fn become_sandbox_user(plan: &ChildPlan) {
    // Raw system calls: glibc's wrappers would try to broadcast to the parent's threads.
    // SAFETY: plain system calls with scalar arguments.
    unsafe {
        check(
            STEP_SETGROUPS,
            libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()),
        );
        check(
            STEP_SETGID,
            libc::syscall(libc::SYS_setresgid, plan.gid, plan.gid, plan.gid),
        );
        check(
            STEP_SETUID,
            libc::syscall(libc::SYS_setresuid, plan.uid, plan.uid, plan.uid),
        );
    }
}

fn mount_setattr(path: *const c_char, set: u64, recursive: bool) -> libc::c_long {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags: libc::c_uint = if recursive {
        libc::AT_RECURSIVE as libc::c_uint
    } else {
        0
    };
    // SAFETY: valid path and attr struct for the duration of the call.
    unsafe {
        libc::syscall(
            SYS_MOUNT_SETATTR,
            libc::AT_FDCWD,
            path,
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    }
}

/// Builds the new root on a tmpfs, pivots into it and makes it read-only.
fn build_root(plan: &ChildPlan) {
    let null = std::ptr::null::<c_char>();
    // Modes of the directories and files made below are meant literally; without the umask
    // no chmod per mkdir is needed. Restored at the end (the program inherits it).
    // SAFETY: umask only changes this process's file creation mask.
    let umask = unsafe { libc::umask(0) };
    if plan.templated {
        // Already rooted at the template (read-only image, /dev); add this stage's mounts.
        for (i, op) in plan.stage_ops.iter().enumerate() {
            run_op(i as u32, op);
        }
        // SAFETY: as above; chdir with a static string.
        unsafe {
            libc::umask(umask);
            check(STEP_PIVOT, libc::chdir(c"/".as_ptr()) as libc::c_long);
        }
        return;
    }
    // SAFETY: mount/chdir/pivot_root/umount2 with valid NUL-terminated strings or nulls.
    unsafe {
        check(
            STEP_PRIVATE,
            libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) as libc::c_long,
        );
        check(
            STEP_ROOT_TMPFS,
            libc::mount(
                c"tmpfs".as_ptr(),
                plan.new_root.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                plan.root_tmpfs_data.as_ptr().cast(),
            ) as libc::c_long,
        );
    }
    for (i, op) in plan.ops.iter().enumerate() {
        run_op(i as u32, op);
    }
    // SAFETY: as above; pivot_root(".", ".") stacks the old root under the new one, and the
    // detach unmounts it.
    unsafe {
        check(
            STEP_PIVOT,
            libc::chdir(plan.new_root.as_ptr()) as libc::c_long,
        );
        check(
            STEP_PIVOT,
            libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()),
        );
        check(
            STEP_PIVOT,
            libc::umount2(c".".as_ptr(), libc::MNT_DETACH) as libc::c_long,
        );
        check(STEP_PIVOT, libc::chdir(c"/".as_ptr()) as libc::c_long);
    }
    check(
        STEP_ROOT_RO,
        mount_setattr(
            c"/".as_ptr(),
            super::MOUNT_ATTR_RDONLY | super::MOUNT_ATTR_NOSUID | super::MOUNT_ATTR_NODEV,
            false,
        ),
    );
    // SAFETY: as above.
    unsafe { libc::umask(umask) };
}

fn run_op(step: u32, op: &FsOp) {
    if let Err(e) = try_op(op) {
        fail(step, e);
    }
}

/// `Err(errno)` if a call returned `ret < 0`.
fn ok(ret: libc::c_long) -> Result<(), i32> {
    if ret < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// Runs one operation; `Err(errno)` on failure. Raw system calls only (also used by the
/// spawner thread to build a template root, see `super::build_template`).
pub(crate) fn try_op(op: &FsOp) -> Result<(), i32> {
    let null = std::ptr::null::<c_char>();
    // SAFETY: every call gets valid NUL-terminated strings from the plan (or nulls where the
    // kernel accepts them) and stack buffers.
    unsafe {
        match op {
            FsOp::Mkdir { path, mode } => {
                // The umask is 0 while the root is built (`build_root`): the mode is literal.
                if libc::mkdir(path.as_ptr(), *mode) < 0 && errno() != libc::EEXIST {
                    return Err(errno());
                }
            }
            FsOp::Touch { path } => {
                // One system call instead of open + close; an existing file is fine.
                if libc::mknod(path.as_ptr(), libc::S_IFREG | 0o644, 0) < 0
                    && errno() != libc::EEXIST
                {
                    return Err(errno());
                }
            }
            FsOp::Symlink { target, path } => {
                ok(libc::symlink(target.as_ptr(), path.as_ptr()) as libc::c_long)?;
            }
            FsOp::WriteFile { path, data } => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC | libc::O_CLOEXEC,
                    0o644,
                );
                ok(fd as libc::c_long)?;
                let mut off = 0;
                while off < data.len() {
                    let n = libc::write(fd, data.as_ptr().add(off).cast(), data.len() - off);
                    if n < 0 {
                        let e = errno();
                        libc::close(fd);
                        return Err(e);
                    }
                    off += n as usize;
                }
                libc::close(fd);
            }
            FsOp::Bind {
                src,
                dst,
                set,
                recursive,
            } => {
                let flags = libc::MS_BIND | if *recursive { libc::MS_REC } else { 0 };
                ok(
                    libc::mount(src.as_ptr(), dst.as_ptr(), null, flags, std::ptr::null())
                        as libc::c_long,
                )?;
                if *set != 0 {
                    ok(mount_setattr(dst.as_ptr(), *set, *recursive))?;
                }
            }
            FsOp::Mount {
                fstype,
                dst,
                flags,
                data,
            } => {
                ok(libc::mount(
                    fstype.as_ptr(),
                    dst.as_ptr(),
                    fstype.as_ptr(),
                    *flags,
                    data.as_ptr().cast(),
                ) as libc::c_long)?;
            }
            FsOp::SetAttr { path, set } => {
                ok(mount_setattr(path.as_ptr(), *set, false))?;
            }
            FsOp::MoveWorkspace { dst, set } => {
                // The parent's detached bind of the workspace (open_tree), on FD_WS.
                ok(libc::syscall(
                    SYS_MOVE_MOUNT,
                    FD_WS,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    dst.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                ))?;
                libc::close(FD_WS);
                ok(mount_setattr(dst.as_ptr(), *set, false))?;
            }
        }
    }
    Ok(())
}

/// The program side of the fork: stdio, cwd, limits, privileges, seccomp, execve.
fn exec_program(plan: &ChildPlan) -> ! {
    // SAFETY: raw system calls on fds/strings from the plan and stack values.
    unsafe {
        check(STEP_STDIO, libc::setsid() as libc::c_long);
        for (from, to) in [(FD_IN, 0), (FD_OUT, 1), (FD_ERROUT, 2)] {
            check(STEP_STDIO, libc::dup2(from, to) as libc::c_long);
        }
        // Keep only 0..=2 and the error pipe (close-on-exec) open.
        libc::close(FD_SYNC);
        check(
            STEP_STDIO,
            libc::syscall(SYS_CLOSE_RANGE, FD_STATUS as u32, u32::MAX, 0u32),
        );
        check(STEP_CHDIR, libc::chdir(plan.cwd.as_ptr()) as libc::c_long);

        for &(resource, soft, hard) in &plan.rlimits {
            let lim = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            check(STEP_RLIMIT, libc::setrlimit(resource, &lim) as libc::c_long);
        }

        // No capabilities at all: bounding set, ambient, then effective/permitted/inheritable.
        for cap in 0..=plan.cap_last_cap {
            check(
                STEP_CAPS,
                libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) as libc::c_long,
            );
        }
        check(
            STEP_CAPS,
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            ) as libc::c_long,
        );
        #[repr(C)]
        struct CapHeader {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        struct CapData {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let header = CapHeader {
            version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
            pid: 0,
        };
        let data = [
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        check(
            STEP_CAPS,
            libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()),
        );

        check(
            STEP_NO_NEW_PRIVS,
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as libc::c_long,
        );

        // Last: after this only the syscalls the policy allows work.
        let prog = libc::sock_fprog {
            len: plan.seccomp.len() as u16,
            filter: plan.seccomp.as_ptr() as *mut libc::sock_filter,
        };
        check(
            STEP_SECCOMP,
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &prog as *const libc::sock_fprog,
                0,
                0,
            ) as libc::c_long,
        );

        // PATH lookup like execvp: remember the most useful error.
        let mut err = libc::ENOENT;
        for path in &plan.exec_candidates {
            libc::execve(path.as_ptr(), plan.argv.as_ptr(), plan.env.as_ptr());
            let e = errno();
            if e != libc::ENOENT && e != libc::ENOTDIR {
                err = e;
            }
        }
        fail(STEP_EXEC, err)
    }
}

/// pid 1: reap everything; when the program exits, kill the rest of the namespace, reap it,
/// report the program's wait status and exit.
fn init_loop(main_pid: libc::pid_t) -> ! {
    // SAFETY: closing fds this process no longer needs; waitpid/kill/write with stack values.
    unsafe {
        for fd in [FD_ERR, FD_IN, FD_OUT, FD_ERROUT] {
            libc::close(fd);
        }
        let mut main_status: Option<i32> = None;
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                break; // ECHILD: nobody left
            }
            if pid == main_pid {
                main_status = Some(status);
                // Everything else in the namespace dies with the program.
                libc::kill(-1, libc::SIGKILL);
            }
        }
        if let Some(status) = main_status {
            let buf = status.to_ne_bytes();
            libc::write(FD_STATUS, buf.as_ptr().cast(), buf.len());
        }
        // Now, not at exit: the last fput of an exiting task runs after its namespaces are
        // torn down, and the parent is done with the stage once it has read the status.
        libc::close(FD_STATUS);
        libc::_exit(0)
    }
}
