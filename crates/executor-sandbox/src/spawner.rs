//! A per-slot thread that makes every clone3 of the slot. On cgroup v1 it lives in the slot's
//! cgroups, so each sandbox is *born* inside them; on v1 and v2 it holds the slot's network
//! namespace and its template mount namespaces (below).
//!
//! Why: on v1 there is no `CLONE_INTO_CGROUP`, and moving a process in by pid takes
//! `cgroup_threadgroup_rwsem` for writing, which waits for an RCU grace period after an idle
//! period (6–18 ms here, every stage). A child inherits the cgroups of the thread that forks
//! it, so a thread moved once (at [`Slot::new`](crate::Slot::new)) into the slot's `tasks`
//! files turns every later attach into nothing.
//!
//! What that costs, and how each hazard is handled:
//!
//! * The worker's pid (TGID) is listed in the slot's `cgroup.procs` (v1 lists the TGID of every
//!   thread present). [`Cgroup::procs`](crate::cgroup::Cgroup) leaves out our own pid, so
//!   cleanup, `kill_all` and `Slot::processes` never see (or SIGKILL) the worker.
//! * `pids.max` counts the thread: the slot adds one to the limit it writes.
//! * The memcg OOM killer of the slot: it walks the memcg with `CSS_TASK_ITER_PROCS`
//!   (`mem_cgroup_scan_tasks`, since Linux 5.3), which visits thread-group *leaders* only; the
//!   worker's leader is not in the slot cgroup, so the worker is never a candidate (tested
//!   with a worker whose RSS dwarfs the sandbox's). User memory the thread touches is charged
//!   to the worker's memcg (the mm owner's); kernel memory it allocates for a clone (the
//!   child's page tables, task struct) is charged to the slot, which is where it belongs.
//! * cpuacct: the thread's own CPU time (the clone3 calls, ~0.1 ms a stage) is counted to the
//!   slot. It sleeps otherwise.
//! * The thread must leave before the slot cgroups can be removed: [`Spawner::stop`] ends and
//!   joins it, and the slot retries `rmdir` while the kernel finishes the thread's exit.
//!
//! The plan is moved to the thread and back; the thread only calls
//! [`sys::clone_sandbox`](crate::sys::clone_sandbox), and manages the slot's template mount
//! namespaces:
//!
//! **Template mount namespaces** (v1 and v2). The thread has a `fs_struct` of its own and
//! keeps, per image (its extra binds; at most [`TEMPLATE_MAX`], each rebuilt after
//! [`TEMPLATE_MAX_AGE`]), a mount namespace where the read-only image (host directories,
//! `/etc`, `/dev`, mount points, a procfs of an empty pid namespace) is already built and
//! pivoted into ([`sys::build_template`]). Before a clone3 it `setns`es into the template of
//! the stage's image, so the sandbox's mount namespace is a copy of it (locked: copied into
//! the sandbox's user namespace) and the child only adds the stage's mounts: the workspace
//! (a detached bind from the parent, `move_mount`), `/tmp`, `/dev/shm`, `/proc`. This saves
//! ~50 system calls, the `pivot_root` and the detach of the host tree (an expedited RCU grace
//! period) per stage. If a template cannot be built the stage builds its whole root from the
//! host namespace as before (full mode).

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::SandboxError;
use crate::sys::{self, ChildPlan};

type Request = (ChildPlan, u64, Option<RawFd>);
type Reply = (ChildPlan, io::Result<(libc::pid_t, OwnedFd)>);

/// Templates older than this are rebuilt: they hold the host files bound at build time.
const TEMPLATE_MAX_AGE: Duration = Duration::from_secs(60);
/// Templates kept per slot (one per distinct image; the worker's languages).
const TEMPLATE_MAX: usize = 8;

/// One template mount namespace: the image of `key` built once and pivoted into (see
/// `sys::build_template`); sandboxes cloned while the thread is in it copy it.
struct Template {
    key: Vec<(PathBuf, PathBuf)>,
    ns: OwnedFd,
    built: Instant,
}

/// The spawner thread's template mount namespaces, and the host one to go back to.
struct Templates {
    host: OwnedFd,
    list: Vec<Template>,
    /// Index in `list` of the namespace the thread is in; `None`: the host's.
    current: Option<usize>,
}

impl Templates {
    /// Back to the host mount namespace.
    fn leave(&mut self) -> io::Result<()> {
        if self.current.is_some() {
            sys::setns(self.host.as_raw_fd(), libc::CLONE_NEWNS)?;
            self.current = None;
        }
        Ok(())
    }

    /// Into the template for `plan` (built if missing or too old).
    fn enter(&mut self, plan: &ChildPlan) -> io::Result<()> {
        while let Some(i) = self
            .list
            .iter()
            .position(|t| t.built.elapsed() > TEMPLATE_MAX_AGE)
        {
            self.leave()?;
            self.list.remove(i);
        }
        let found = self.list.iter().position(|t| t.key == plan.template_key);
        let i = match found {
            Some(i) => i,
            None => {
                self.leave()?;
                if self.list.len() >= TEMPLATE_MAX {
                    self.list.remove(0);
                }
                sys::unshare(libc::CLONE_NEWNS)?;
                self.current = Some(usize::MAX); // not the host's any more
                let ns: OwnedFd = fs::File::open("/proc/thread-self/ns/mnt")?.into();
                sys::build_template(&plan.new_root, &plan.root_tmpfs_data, &plan.template_ops)
                    .map_err(|(_, e)| e)?;
                self.list.push(Template {
                    key: plan.template_key.clone(),
                    ns,
                    built: Instant::now(),
                });
                self.current = Some(self.list.len() - 1);
                return Ok(());
            }
        };
        if self.current != Some(i) {
            sys::setns(self.list[i].ns.as_raw_fd(), libc::CLONE_NEWNS)?;
            self.current = Some(i);
        }
        Ok(())
    }
}

/// What became of a clone request.
pub(crate) enum Cloned {
    /// The thread ran clone3: the plan back, and the child's pid and pidfd (or the error).
    Done(ChildPlan, io::Result<(libc::pid_t, OwnedFd)>),
    /// The thread is gone (stopped): the request was not sent.
    NotSent(ChildPlan),
    /// The thread died while handling the request (it cannot: it only calls clone3).
    Lost,
}

struct Inner {
    requests: Sender<Request>,
    replies: Receiver<Reply>,
    thread: JoinHandle<()>,
    tid: libc::pid_t,
}

/// The slot's spawner thread (see the module documentation).
pub(crate) struct Spawner {
    inner: Mutex<Option<Inner>>,
}

impl fmt::Debug for Spawner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Spawner").field("tid", &self.tid()).finish()
    }
}

impl Spawner {
    /// Starts the thread, gives it a network namespace of its own (every sandbox of the slot
    /// shares it, see the module documentation) and moves it into the cgroups whose v1 `tasks`
    /// files are given (writing `0` moves the writing thread only; none on v2). Fails if any
    /// step fails.
    pub(crate) fn start(name: String, tasks: Vec<PathBuf>) -> Result<Spawner, SandboxError> {
        let (req_tx, req_rx) = mpsc::channel::<Request>();
        let (rep_tx, rep_rx) = mpsc::channel::<Reply>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<libc::pid_t, SandboxError>>();
        let thread = std::thread::Builder::new()
            .name(name)
            .stack_size(256 << 10)
            .spawn(move || {
                if let Err(e) = sys::unshare(libc::CLONE_NEWNET) {
                    let _ = ready_tx.send(Err(SandboxError::sys("unshare(CLONE_NEWNET)", e)));
                    return;
                }
                // Template mount namespaces need a fs_struct of the thread's own (setns into
                // a mount namespace refuses a shared one). Without, every stage builds its
                // whole root (full mode).
                let mut templates = sys::unshare(libc::CLONE_FS)
                    .and_then(|()| fs::File::open("/proc/thread-self/ns/mnt"))
                    .ok()
                    .map(|host| Templates {
                        host: host.into(),
                        list: Vec::new(),
                        current: None,
                    });
                for file in &tasks {
                    let moved = fs::OpenOptions::new()
                        .write(true)
                        .open(file)
                        .and_then(|mut f| f.write_all(b"0"));
                    if let Err(e) = moved {
                        let _ = ready_tx.send(Err(SandboxError::io("write", file, e)));
                        return;
                    }
                }
                let _ = ready_tx.send(Ok(sys::gettid()));
                drop(ready_tx);
                while let Ok((mut plan, flags, cgroup_fd)) = req_rx.recv() {
                    plan.templated = false;
                    if let Some(t) = templates.as_mut() {
                        let wanted = !plan.template_ops.is_empty() && plan.fds[6] >= 0;
                        plan.templated = wanted && t.enter(&plan).is_ok();
                        if !plan.templated && t.leave().is_err() {
                            // Stuck in a template namespace: full mode cannot work here.
                            templates = None;
                        }
                    }
                    let result = sys::clone_sandbox(&plan, flags, cgroup_fd);
                    // If nobody waits for the reply any more, the pidfd is dropped here and the
                    // child sees EOF on its sync pipe and exits.
                    if rep_tx.send((plan, result)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| SandboxError::sys("start the slot's spawner thread", e))?;
        let tid = match ready_rx.recv() {
            Ok(Ok(tid)) => tid,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(SandboxError::Cgroup(
                    "the spawner thread ended before joining the slot cgroups".into(),
                ));
            }
        };
        Ok(Spawner {
            inner: Mutex::new(Some(Inner {
                requests: req_tx,
                replies: rep_rx,
                thread,
                tid,
            })),
        })
    }

    /// Host thread id of the spawner thread (`None` once stopped).
    pub(crate) fn tid(&self) -> Option<libc::pid_t> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.as_ref().map(|i| i.tid)
    }

    /// Clones the sandbox child from the spawner thread (see [`Cloned`]; on `NotSent` the
    /// caller clones itself and attaches the child by pid).
    pub(crate) fn clone_sandbox(
        &self,
        plan: ChildPlan,
        flags: u64,
        cgroup_fd: Option<RawFd>,
    ) -> Cloned {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(inner) = guard.as_ref() else {
            return Cloned::NotSent(plan);
        };
        if let Err(mpsc::SendError((plan, ..))) = inner.requests.send((plan, flags, cgroup_fd)) {
            return Cloned::NotSent(plan);
        }
        match inner.replies.recv() {
            Ok((plan, result)) => Cloned::Done(plan, result),
            Err(_) => Cloned::Lost,
        }
    }

    /// Ends and joins the thread. Idempotent.
    pub(crate) fn stop(&self) {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(Inner {
            requests, thread, ..
        }) = inner
        {
            drop(requests);
            let _ = thread.join();
        }
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        self.stop();
    }
}
