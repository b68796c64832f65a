//! The file system inside the sandbox, as a list of operations the child performs on its new
//! root (a tmpfs) before `pivot_root`. Computed by the parent, so the child only makes
//! system calls.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::{Image, StageLimits, SANDBOX_UID};
use crate::error::SandboxError;
use crate::sys::{FsOp, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};

const RO: u64 = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

/// Top-level host directories of the `Host` image (symlinks on merged-usr systems are
/// recreated as symlinks).
const HOST_TOP: &[&str] = &["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// Host `/etc` entries the programs we run need (dynamic linker, name service, TLS roots,
/// time zone, Debian alternatives, per-runtime configuration).
const HOST_ETC: &[&str] = &[
    "nsswitch.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "localtime",
    "timezone",
    "mime.types",
    "protocols",
    "services",
    "gai.conf",
    "host.conf",
];

/// `/etc` entries matched by prefix (e.g. `java-17-openjdk`, `python3.11`, `php` whose
/// `conf.d` loads Debian's shared extensions such as ctype and iconv).
const HOST_ETC_PREFIXES: &[&str] = &["java-", "python3", "php", "perl"];

/// Devices bound from the host's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// `/proc` paths made read-only, and paths hidden behind `/dev/null`.
const PROC_READONLY: &[&str] = &["sys", "sysrq-trigger", "irq", "bus", "fs"];
const PROC_MASKED: &[&str] = &["kcore", "keys", "timer_list", "kallsyms", "sched_debug"];

#[derive(Debug, Clone)]
enum Entry {
    Symlink { inside: PathBuf, target: PathBuf },
    Dir { host: PathBuf, inside: PathBuf },
    File { host: PathBuf, inside: PathBuf },
}

/// The host entries of the `Host` image, looked up once per slot.
#[derive(Debug, Clone)]
pub(crate) struct HostImage {
    entries: Vec<Entry>,
    proc_readonly: Vec<&'static str>,
    proc_masked: Vec<&'static str>,
    /// The entries of `DEVICES` present on the host.
    devices: Vec<&'static str>,
}

fn entry(host: &Path, inside: &Path) -> Option<Entry> {
    let meta = fs::symlink_metadata(host).ok()?;
    let inside = inside.to_path_buf();
    Some(if meta.file_type().is_symlink() {
        Entry::Symlink {
            inside,
            target: fs::read_link(host).ok()?,
        }
    } else if meta.is_dir() {
        Entry::Dir {
            host: host.to_path_buf(),
            inside,
        }
    } else {
        Entry::File {
            host: host.to_path_buf(),
            inside,
        }
    })
}

impl HostImage {
    pub(crate) fn scan() -> HostImage {
        let mut entries = Vec::new();
        for top in HOST_TOP {
            let p = Path::new("/").join(top);
            entries.extend(entry(&p, &p));
        }
        let mut etc: Vec<String> = HOST_ETC.iter().map(|s| s.to_string()).collect();
        if let Ok(dir) = fs::read_dir("/etc") {
            for e in dir.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if HOST_ETC_PREFIXES.iter().any(|p| name.starts_with(p)) {
                    etc.push(name);
                }
            }
        }
        etc.sort();
        etc.dedup();
        for name in etc {
            let p = Path::new("/etc").join(name);
            entries.extend(entry(&p, &p));
        }
        let exists = |n: &&str| Path::new("/proc").join(n).exists();
        HostImage {
            entries,
            proc_readonly: PROC_READONLY.iter().copied().filter(exists).collect(),
            proc_masked: PROC_MASKED.iter().copied().filter(exists).collect(),
            devices: DEVICES
                .iter()
                .copied()
                .filter(|d| Path::new("/dev").join(d).exists())
                .collect(),
        }
    }
}

fn cstr(p: impl AsRef<Path>) -> Result<CString, SandboxError> {
    CString::new(p.as_ref().as_os_str().as_bytes())
        .map_err(|_| SandboxError::invalid("path", format!("{:?} contains NUL", p.as_ref())))
}

/// Which operations of the file system plan to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// Everything, on a fresh root tmpfs at `root` (host paths; the child pivots afterwards).
    Full,
    /// What is the same for every stage with this image (the host binds, `/etc`, `/dev` and
    /// the mount points): built once by the spawner thread into a template mount namespace.
    Template,
    /// What each stage adds in its copy of the template (`root` is `/`): the workspace
    /// (moved in from a detached bind, `FsOp::MoveWorkspace`), `/tmp`, `/dev/shm`, `/proc`.
    Stage,
}

/// Builds the operations for one stage (or one part of them, see [`Part`]). `root` is the
/// (host) mount point of the new root, `workspace` the host path of the slot's workspace.
pub(crate) fn plan_ops(
    root: &Path,
    host: &HostImage,
    image: &Image,
    workspace: &Path,
    limits: &StageLimits,
    part: Part,
) -> Result<Vec<FsOp>, SandboxError> {
    let shared = part != Part::Stage; // template-able operations
    let per_stage = part != Part::Template;
    let at = |inside: &Path| -> Result<CString, SandboxError> {
        cstr(root.join(inside.strip_prefix("/").unwrap_or(inside)))
    };
    let mut ops = Vec::new();
    // Directories already in the plan: each is made once (an `EEXIST` mkdir is still a
    // system call in the child, ~20 of them per stage for the `/etc` parents alone).
    let made = std::cell::RefCell::new(std::collections::HashSet::<PathBuf>::new());
    let mkdir = |ops: &mut Vec<FsOp>, inside: &Path, mode: u32| -> Result<(), SandboxError> {
        if !made.borrow_mut().insert(inside.to_path_buf()) {
            return Ok(());
        }
        ops.push(FsOp::Mkdir {
            path: at(inside)?,
            mode,
        });
        Ok(())
    };
    // Every missing parent of `inside`, outermost first.
    let parents = |ops: &mut Vec<FsOp>, inside: &Path| -> Result<(), SandboxError> {
        let mut chain: Vec<&Path> = inside.ancestors().skip(1).collect();
        chain.reverse();
        for p in chain {
            if p != Path::new("/") && p != Path::new("") {
                mkdir(ops, p, 0o755)?;
            }
        }
        Ok(())
    };
    let bind_ro = |ops: &mut Vec<FsOp>, e: &Entry| -> Result<(), SandboxError> {
        match e {
            Entry::Symlink { inside, target } => ops.push(FsOp::Symlink {
                target: cstr(target)?,
                path: at(inside)?,
            }),
            Entry::Dir { host, inside } => {
                parents(ops, inside)?;
                mkdir(ops, inside, 0o755)?;
                ops.push(FsOp::Bind {
                    src: cstr(host)?,
                    dst: at(inside)?,
                    set: RO,
                    recursive: true,
                });
            }
            Entry::File { host, inside } => {
                parents(ops, inside)?;
                ops.push(FsOp::Touch { path: at(inside)? });
                ops.push(FsOp::Bind {
                    src: cstr(host)?,
                    dst: at(inside)?,
                    set: RO,
                    recursive: false,
                });
            }
        }
        Ok(())
    };

    // Image: host directories and a minimal /etc.
    let Image::Host { extra_ro_binds } = image;
    if shared {
        mkdir(&mut ops, Path::new("/etc"), 0o755)?;
        for e in &host.entries {
            bind_ro(&mut ops, e)?;
        }
        let uid = SANDBOX_UID;
        for (name, data) in [
            (
                "passwd",
                format!(
                    "root:x:0:0:root:/root:/usr/sbin/nologin\n\
                 sandbox:x:{uid}:{uid}:sandbox:/workspace:/bin/sh\n\
                 nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
                ),
            ),
            (
                "group",
                format!("root:x:0:\nsandbox:x:{uid}:\nnogroup:x:65534:\n"),
            ),
            (
                "hosts",
                "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                    .to_string(),
            ),
        ] {
            ops.push(FsOp::WriteFile {
                path: at(&Path::new("/etc").join(name))?,
                data: data.into_bytes(),
            });
        }
        for (host_path, inside) in extra_ro_binds {
            if !inside.is_absolute() {
                return Err(SandboxError::invalid(
                    "bind target",
                    format!("{} is not absolute", inside.display()),
                ));
            }
            let e = match entry(host_path, inside) {
                Some(Entry::Symlink { .. }) | None => {
                    // Bind what the link points to.
                    let meta = fs::metadata(host_path)
                        .map_err(|e| SandboxError::io("stat bind source", host_path, e))?;
                    if meta.is_dir() {
                        Entry::Dir {
                            host: host_path.clone(),
                            inside: inside.clone(),
                        }
                    } else {
                        Entry::File {
                            host: host_path.clone(),
                            inside: inside.clone(),
                        }
                    }
                }
                Some(e) => e,
            };
            bind_ro(&mut ops, &e)?;
        }
        // Mount points of the per-stage mounts.
        mkdir(&mut ops, Path::new("/workspace"), 0o755)?;
        mkdir(&mut ops, Path::new("/tmp"), 0o1777)?;
    }

    // /workspace: the slot's tmpfs, writable.
    match part {
        Part::Full => ops.push(FsOp::Bind {
            src: cstr(workspace)?,
            dst: at(Path::new("/workspace"))?,
            set: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            recursive: false,
        }),
        Part::Stage => ops.push(FsOp::MoveWorkspace {
            dst: at(Path::new("/workspace"))?,
            set: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        }),
        Part::Template => {}
    }

    // /tmp: private tmpfs with size and inode caps.
    if per_stage {
        ops.push(FsOp::Mount {
            fstype: c"tmpfs".to_owned(),
            dst: at(Path::new("/tmp"))?,
            flags: libc::MS_NOSUID | libc::MS_NODEV,
            data: cstr(format!(
                "mode=1777,size={},nr_inodes={}",
                limits.tmp_bytes.max(4096),
                limits.tmp_inodes.max(16)
            ))?,
        });
    }

    // /dev: a small tmpfs with host device nodes bound in, /dev/shm, the usual links.
    if shared {
        mkdir(&mut ops, Path::new("/dev"), 0o755)?;
        ops.push(FsOp::Mount {
            fstype: c"tmpfs".to_owned(),
            dst: at(Path::new("/dev"))?,
            flags: libc::MS_NOSUID | libc::MS_NOEXEC,
            data: c"mode=755,size=64k,nr_inodes=64".to_owned(),
        });
        for dev in &host.devices {
            let inside = Path::new("/dev").join(dev);
            ops.push(FsOp::Touch { path: at(&inside)? });
            ops.push(FsOp::Bind {
                src: cstr(&inside)?,
                dst: at(&inside)?,
                set: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                recursive: false,
            });
        }
        for (name, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            ops.push(FsOp::Symlink {
                target: cstr(target)?,
                path: at(&Path::new("/dev").join(name))?,
            });
        }
        mkdir(&mut ops, Path::new("/dev/shm"), 0o1777)?;
        mkdir(&mut ops, Path::new("/proc"), 0o555)?;
    }
    if part == Part::Template {
        // Read-only before the stages mount /dev/shm on it (a mount point needs no write).
        ops.push(FsOp::SetAttr {
            path: at(Path::new("/dev"))?,
            set: MOUNT_ATTR_RDONLY,
        });
        return Ok(ops);
    }
    ops.push(FsOp::Mount {
        fstype: c"tmpfs".to_owned(),
        dst: at(Path::new("/dev/shm"))?,
        flags: libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        data: cstr(format!(
            "mode=1777,size={},nr_inodes=1024",
            limits.shm_bytes.max(4096)
        ))?,
    });
    if part == Part::Full {
        ops.push(FsOp::SetAttr {
            path: at(Path::new("/dev"))?,
            set: MOUNT_ATTR_RDONLY,
        });
    }

    // /proc: fresh, for the new pid namespace; kernel knobs read-only, leaky files masked.
    ops.push(FsOp::Mount {
        fstype: c"proc".to_owned(),
        dst: at(Path::new("/proc"))?,
        flags: libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        data: c"".to_owned(),
    });
    for name in &host.proc_readonly {
        let p = at(&Path::new("/proc").join(name))?;
        ops.push(FsOp::Bind {
            src: p.clone(),
            dst: p,
            set: RO | MOUNT_ATTR_NOEXEC,
            recursive: true,
        });
    }
    for name in &host.proc_masked {
        ops.push(FsOp::Bind {
            src: c"/dev/null".to_owned(),
            dst: at(&Path::new("/proc").join(name))?,
            set: RO | MOUNT_ATTR_NOEXEC,
            recursive: false,
        });
    }
    Ok(ops)
}
