//! Every system call the crate makes that the standard library does not wrap, and the code
//! that runs in the cloned child ([`child`]): the only place where `unsafe` is allowed.
//!
//! The wrappers are thin and return `io::Result`; policy lives in the safe modules.
#![allow(unsafe_code)]

pub(crate) mod child;

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub(crate) use child::{ChildPlan, FsOp};

pub(crate) const CLONE_PIDFD: u64 = 0x1000;
pub(crate) const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
const SYS_CLONE3: libc::c_long = 435;
const SYS_OPENAT2: libc::c_long = 437;
const SYS_PIDFD_SEND_SIGNAL: libc::c_long = 424;
const SYS_MOUNT_SETATTR: libc::c_long = 442;
const SYS_CLOSE_RANGE: libc::c_long = 436;
const SYS_OPEN_TREE: libc::c_long = 428;
const SYS_MOVE_MOUNT: libc::c_long = 429;

pub(crate) const RESOLVE_NO_XDEV: u64 = 0x01;
pub(crate) const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
pub(crate) const RESOLVE_NO_SYMLINKS: u64 = 0x04;
pub(crate) const RESOLVE_BENEATH: u64 = 0x08;

pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(crate) const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// `struct clone_args` of clone3(2) (version 2, with `cgroup`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `struct open_how` of openat2(2).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn cvt(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_int(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A pipe with both ends close-on-exec: (read, write).
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    cvt_int(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Clones the sandbox child with `flags` (namespaces, `CLONE_INTO_CGROUP`); the child runs
/// [`child::main`] with `plan` and never returns. Returns the child's pid and pidfd.
pub(crate) fn clone_sandbox(
    plan: &ChildPlan,
    flags: u64,
    cgroup_fd: Option<RawFd>,
) -> io::Result<(libc::pid_t, OwnedFd)> {
    let mut pidfd: libc::c_int = -1;
    let mut args = CloneArgs {
        flags: flags
            | CLONE_PIDFD
            | if cgroup_fd.is_some() {
                CLONE_INTO_CGROUP
            } else {
                0
            },
        pidfd: &mut pidfd as *mut libc::c_int as u64,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup_fd.map_or(0, |fd| fd as u64),
        ..CloneArgs::default()
    };
    // SAFETY: clone3 without CLONE_VM and without a stack behaves like fork(): the child gets
    // a copy of the address space and continues here with ret == 0. The child only runs
    // `child::main`, which uses pre-built data from `plan`, makes raw system calls and never
    // returns (it execs or `_exit`s), so no Rust state is unwound or shared.
    let ret = unsafe {
        libc::syscall(
            SYS_CLONE3,
            &mut args as *mut CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if ret == 0 {
        child::main(plan);
    }
    let pid = cvt(ret)? as libc::pid_t;
    // SAFETY: with CLONE_PIDFD the kernel stored a new, owned pidfd in `pidfd`.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

/// pidfd_send_signal(2); a process already reaped yields `ESRCH`, never another process.
pub(crate) fn pidfd_send_signal(pidfd: RawFd, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain system call on an fd we own; null siginfo is allowed.
    cvt(unsafe {
        libc::syscall(
            SYS_PIDFD_SEND_SIGNAL,
            pidfd,
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    })
    .map(drop)
}

/// How a waited-for process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
}

/// Blocks until the process behind `pidfd` exits and reaps it.
pub(crate) fn wait_pidfd(pidfd: RawFd) -> io::Result<Exit> {
    loop {
        // SAFETY: zeroed siginfo_t is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: P_PIDFD (3) with an fd we own; `info` is a valid out-pointer.
        let ret = unsafe {
            libc::waitid(
                3 as libc::idtype_t,
                pidfd as libc::id_t,
                &mut info,
                libc::WEXITED,
            )
        };
        if ret < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        // SAFETY: waitid filled `info` for a CLD_* event, so si_status is valid.
        let status = unsafe { info.si_status() };
        return Ok(if info.si_code == libc::CLD_EXITED {
            Exit::Code(status)
        } else {
            Exit::Signal(status)
        });
    }
}

/// Decodes a wait(2) status word.
pub(crate) fn decode_wait_status(status: i32) -> Exit {
    if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(status)
    }
}

/// unshare(2) for the calling thread (e.g. `CLONE_NEWNET`, which a thread of a
/// multi-threaded process may unshare for itself alone).
pub(crate) fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: plain system call with a scalar argument.
    cvt_int(unsafe { libc::unshare(flags) }).map(drop)
}

/// The calling thread's id.
pub(crate) fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

pub(crate) fn kill(pid: libc::pid_t, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain system call.
    cvt_int(unsafe { libc::kill(pid, sig) }).map(drop)
}

/// mount(2) of a filesystem on the host (workspace tmpfs).
pub(crate) fn mount(
    source: &CStr,
    target: &CStr,
    fstype: &CStr,
    flags: libc::c_ulong,
    data: &CStr,
) -> io::Result<()> {
    // SAFETY: all pointers are valid NUL-terminated strings for the duration of the call.
    cvt_int(unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    })
    .map(drop)
}

pub(crate) fn umount(target: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: valid NUL-terminated path.
    cvt_int(unsafe { libc::umount2(target.as_ptr(), flags) }).map(drop)
}

/// openat2(2): open `path` relative to `dirfd` with `resolve` restrictions.
pub(crate) fn openat2(
    dirfd: RawFd,
    path: &CStr,
    flags: libc::c_int,
    mode: u32,
    resolve: u64,
) -> io::Result<OwnedFd> {
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: u64::from(mode),
        resolve,
    };
    loop {
        // SAFETY: `how` and `path` are valid for the call; the returned fd is new and owned.
        let ret = unsafe {
            libc::syscall(
                SYS_OPENAT2,
                dirfd,
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        match cvt(ret) {
            // SAFETY: openat2 returned a new fd.
            Ok(fd) => return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }),
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => continue,
            Err(e) => return Err(e),
        }
    }
}

pub(crate) fn mkdirat(dirfd: RawFd, name: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: valid fd and NUL-terminated name.
    cvt_int(unsafe { libc::mkdirat(dirfd, name.as_ptr(), mode as libc::mode_t) }).map(drop)
}

pub(crate) fn fchownat_nofollow(dirfd: RawFd, name: &CStr, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: valid fd and NUL-terminated name; AT_SYMLINK_NOFOLLOW never follows a link.
    cvt_int(unsafe { libc::fchownat(dirfd, name.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
        .map(drop)
}

/// File type and size of an entry, without following a symlink.
pub(crate) fn fstatat_nofollow(dirfd: RawFd, name: &CStr) -> io::Result<(u32, u64)> {
    // SAFETY: zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, NUL-terminated name, valid out-pointer.
    cvt_int(unsafe { libc::fstatat(dirfd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok((st.st_mode & libc::S_IFMT, st.st_size as u64))
}

/// Reads the names in the directory `dirfd` (not `.`/`..`) without following anything.
pub(crate) fn read_dir_names(dirfd: &OwnedFd) -> io::Result<Vec<std::ffi::CString>> {
    // A fresh fd, because fdopendir takes ownership and moves the offset.
    // SAFETY: duplicating an fd we own.
    let dup = cvt_int(unsafe { libc::fcntl(dirfd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
    // SAFETY: `dup` is a new fd we own; fdopendir takes it over (closed by closedir).
    let dir = unsafe { libc::fdopendir(dup) };
    if dir.is_null() {
        let err = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so `dup` is still ours to close.
        unsafe { libc::close(dup) };
        return Err(err);
    }
    // SAFETY: `dir` is a valid DIR*; rewinddir resets a possibly shared offset.
    unsafe { libc::rewinddir(dir) };
    let mut names = Vec::new();
    loop {
        // SAFETY: `dir` is valid; readdir returns null at the end or an entry valid until the
        // next call, which we copy before continuing.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            break;
        }
        // SAFETY: d_name is a NUL-terminated array inside the entry.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            names.push(name.to_owned());
        }
    }
    // SAFETY: `dir` is valid and closed exactly once.
    unsafe { libc::closedir(dir) };
    Ok(names)
}

/// The highest capability number the running kernel knows.
pub(crate) fn cap_last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
}

/// Where this process's argv and environ strings live: `[(arg_start, arg_end),
/// (env_start, env_end)]` from `/proc/self/stat`, zeros when unknown.
pub(crate) fn arg_env_areas() -> [(usize, usize); 2] {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return [(0, 0); 2];
    };
    // Fields after the command name (which may contain spaces) start at field 3.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return [(0, 0); 2];
    };
    let f: Vec<usize> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Field n (1-based) is f[n - 3].
    let get = |n: usize| f.get(n - 3).copied().unwrap_or(0);
    [(get(48), get(49)), (get(50), get(51))]
}

/// setns(2) into the namespace `fd` refers to (`nstype`: `CLONE_NEW*`).
pub(crate) fn setns(fd: RawFd, nstype: libc::c_int) -> io::Result<()> {
    // SAFETY: plain system call with scalar arguments.
    cvt_int(unsafe { libc::setns(fd, nstype) }).map(drop)
}

/// A detached bind of the mount at `path` (`open_tree(OPEN_TREE_CLONE)`), close-on-exec.
pub(crate) fn open_tree_clone(path: &CStr) -> io::Result<OwnedFd> {
    const OPEN_TREE_CLONE: libc::c_uint = 1;
    // SAFETY: valid NUL-terminated path; the returned fd is new and owned by nobody else.
    let fd = cvt(unsafe {
        libc::syscall(
            SYS_OPEN_TREE,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        )
    })?;
    // SAFETY: open_tree returned a new fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Builds a template root in the calling thread's mount namespace, which must be a fresh
/// copy of the host's (`unshare(CLONE_NEWNS)` by a thread with its own `fs_struct`): makes
/// every mount private, mounts a tmpfs on `root`, runs `ops` there, pivots into it, detaches
/// the old root and makes `/` read-only. On failure returns the index of the failed op
/// (`None` for the fixed steps) and the error; the namespace is then unusable.
pub(crate) fn build_template(
    root: &CStr,
    tmpfs_data: &CStr,
    ops: &[FsOp],
) -> Result<(), (Option<usize>, io::Error)> {
    let fixed = |r: libc::c_int| {
        if r < 0 {
            Err((None, io::Error::last_os_error()))
        } else {
            Ok(())
        }
    };
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: mount/chdir/pivot_root/umount2 with valid NUL-terminated strings or nulls; they
    // act on this thread's own mount namespace and fs_struct only.
    unsafe {
        fixed(libc::mount(
            null,
            c"/".as_ptr(),
            null,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        fixed(libc::mount(
            c"tmpfs".as_ptr(),
            root.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            tmpfs_data.as_ptr().cast(),
        ))?;
    }
    // SAFETY: umask of this thread's own fs_struct; restored below.
    let umask = unsafe { libc::umask(0) };
    let ran = ops.iter().enumerate().try_for_each(|(i, op)| {
        child::try_op(op).map_err(|e| (Some(i), io::Error::from_raw_os_error(e)))
    });
    // SAFETY: as above.
    unsafe { libc::umask(umask) };
    ran?;
    // SAFETY: as above; pivot_root(".", ".") stacks the old root under the new one and the
    // detach unmounts it, in this namespace only.
    unsafe {
        fixed(libc::chdir(root.as_ptr()))?;
        fixed(libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) as libc::c_int)?;
        fixed(libc::umount2(c".".as_ptr(), libc::MNT_DETACH))?;
        fixed(libc::chdir(c"/".as_ptr()))?;
    }
    mount_empty_proc().map_err(|e| (None, e))?;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: valid path and attr struct for the duration of the call.
    fixed(unsafe {
        libc::syscall(
            SYS_MOUNT_SETATTR,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            0,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    } as libc::c_int)
}

/// Mounts, at `/proc` of the calling thread's (template) mount namespace, the procfs of a
/// fresh pid namespace that is empty once the helper that mounts it has exited.
///
/// Why: a user namespace may only mount a new procfs where its mount namespace already shows
/// one in full (`mount_too_revealing`); every stage mounts its own `/proc` over this one,
/// which then lists no process at all (not the host's) and is locked under the stage's.
fn mount_empty_proc() -> io::Result<()> {
    // SAFETY: fork-like raw clone (no CLONE_VM, no atfork handlers) into a new pid namespace;
    // the child only makes raw system calls (mount, _exit) and never returns from here.
    let pid = cvt(unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_NEWPID | libc::SIGCHLD) as libc::c_ulong,
            0,
            0,
            0,
            0,
        )
    })?;
    if pid == 0 {
        // SAFETY: mount with static strings, then _exit (no destructors, no unwinding).
        unsafe {
            let r = libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            );
            libc::_exit(if r == 0 { 0 } else { errno_raw() });
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child with a stack status.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::__WALL) };
        if r >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    match decode_wait_status(status) {
        Exit::Code(0) => Ok(()),
        Exit::Code(e) => Err(io::Error::from_raw_os_error(e)),
        Exit::Signal(_) => Err(io::Error::other("the proc helper was killed")),
    }
}

fn errno_raw() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
