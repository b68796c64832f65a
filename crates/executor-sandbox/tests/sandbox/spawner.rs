//! cgroup v1: the slot's spawner thread lives in the slot cgroups and clones every sandbox, so
//! sandboxes are born there (no migration). Its hazards: the worker's pid is listed in the
//! slot's `cgroup.procs`, the thread counts in `pids.max`, the memcg OOM killer of the slot.

use std::path::PathBuf;

use executor_sandbox::{CgroupConfig, RunSpec, Slot};

use crate::common::*;

const HIERARCHIES: [&str; 3] = ["memory", "pids", "cpuacct"];

fn slot_dir(slot: &Slot, hierarchy: &str) -> PathBuf {
    PathBuf::from("/sys/fs/cgroup")
        .join(hierarchy)
        .join("executor-sandbox-tests")
        .join(format!("slot-{}", slot.config().slot))
}

/// The cgroup path of `hierarchy` in a `/proc/<pid>/cgroup` text.
fn cgroup_of(text: &str, hierarchy: &str) -> String {
    text.lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            names
                .split(',')
                .any(|n| n == hierarchy)
                .then(|| path.to_string())
        })
        .unwrap_or_else(|| panic!("no {hierarchy} line in {text}"))
}

#[test]
fn sandboxes_are_born_in_the_slot_cgroups_by_the_spawner_thread() {
    let slot = slot();
    let tid = slot
        .spawner_thread()
        .expect("v1 slots have a spawner thread");
    let want = format!("/executor-sandbox-tests/slot-{}", slot.config().slot);
    let thread = std::fs::read_to_string(format!("/proc/self/task/{tid}/cgroup")).unwrap();
    let me = std::fs::read_to_string("/proc/thread-self/cgroup").unwrap();
    for h in HIERARCHIES {
        assert!(cgroup_of(&thread, h).ends_with(&want), "{h}: {thread}");
        assert!(!cgroup_of(&me, h).ends_with(&want), "{h}: {me}");
    }

    let child = slot.spawn(&sh("sleep 1000")).unwrap();
    let host_view = std::fs::read_to_string(format!("/proc/{}/cgroup", child.pid())).unwrap();
    for h in HIERARCHIES {
        assert!(
            cgroup_of(&host_view, h).ends_with(&want),
            "{h}: {host_view}"
        );
    }
    child.kill();
    child.wait().unwrap();
    let inside = run(&slot, &sh("cat /proc/self/cgroup")).stdout;
    // The cgroup namespace is rooted where the sandbox was cloned: born inside the slot
    // cgroups, it sees itself at their root (a migrated child would see `/../..`).
    for h in HIERARCHIES {
        assert_eq!(cgroup_of(&inside, h), "/", "{h}: {inside}");
    }
}

#[test]
fn cleanup_never_kills_the_worker() {
    let mut slot = slot();
    let child = slot.spawn(&sh("sleep 1000")).unwrap();
    let sandbox = child.pid();
    std::mem::forget(child); // a worker that lost track of its stage
    let me = std::process::id().to_string();
    for h in HIERARCHIES {
        let procs = std::fs::read_to_string(slot_dir(&slot, h).join("cgroup.procs")).unwrap();
        // The hazard is real: v1 lists our pid because of the spawner thread ...
        assert!(procs.lines().any(|l| l == me), "{h}: {procs}");
        assert!(
            procs.lines().any(|l| l == sandbox.to_string()),
            "{h}: {procs}"
        );
    }
    // ... but the slot never reports or kills it.
    assert!(!slot.processes().contains(&(std::process::id() as i32)));
    assert!(slot.processes().contains(&sandbox));
    slot.cleanup().unwrap();
    assert_eq!(slot.processes(), Vec::<i32>::new());
    // Still here, and so is the spawner.
    assert!(slot.spawner_thread().is_some());
    slot.prepare_workspace(1 << 20, 100).unwrap();
    assert_slot_works(&slot);
    slot.cleanup().unwrap();
    slot.cleanup().unwrap();
}

#[test]
fn the_slot_oom_killer_never_takes_the_worker() {
    // A worker far larger than the sandbox: were the OOM killer to consider the spawner
    // thread (and so this process), it would pick us.
    let mut ballast = vec![0u8; 384 << 20];
    for i in (0..ballast.len()).step_by(4096) {
        ballast[i] = 1;
    }
    let slot = slot();
    let mut spec = RunSpec::new(["python3", "-c", "x = b'x' * (512 << 20); print('survived')"]);
    spec.limits.memory_mb = 32;
    let r = run(&slot, &spec);
    assert!(r.outcome.oom_killed, "{:?} {}", r.outcome, r.stderr);
    assert_eq!(r.outcome.signal, Some(libc::SIGKILL));
    assert!(!r.stdout.contains("survived"));
    // Not done by exempting the worker from the OOM killer.
    assert_eq!(
        std::fs::read_to_string("/proc/self/oom_score_adj")
            .unwrap()
            .trim(),
        "0"
    );
    assert_eq!(std::hint::black_box(&ballast)[4096], 1);
    assert_slot_works(&slot);
}

#[test]
fn the_spawner_thread_is_not_charged_to_the_programs_pids_limit() {
    let slot = slot();
    // sh plus two children: exactly the limit.
    let mut spec = sh("sleep 0.2 & sleep 0.2 & wait; echo ok");
    spec.limits.pids = 3;
    let r = run(&slot, &spec);
    assert_eq!(r.stdout, "ok\n", "{}", r.stderr);
    assert!(!r.outcome.pids_limit_hit);
    // One more is refused.
    let mut spec = sh("sleep 0.2 & sleep 0.2 & sleep 0.2 & wait; echo ok");
    spec.limits.pids = 3;
    let r = run(&slot, &spec);
    assert!(r.outcome.pids_limit_hit, "{:?} {}", r.outcome, r.stderr);
}

#[test]
fn dropping_the_slot_ends_the_spawner_and_removes_the_cgroups() {
    let slot = slot();
    let tid = slot.spawner_thread().unwrap();
    assert_slot_works(&slot);
    let dirs: Vec<PathBuf> = HIERARCHIES.iter().map(|h| slot_dir(&slot, h)).collect();
    assert!(dirs.iter().all(|d| d.is_dir()));
    drop(slot);
    for d in &dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    assert!(!PathBuf::from(format!("/proc/self/task/{tid}")).exists());
}

#[test]
fn v2_spawner_thread_stays_out_of_the_slot_cgroup() {
    let unified = std::path::Path::new("/sys/fs/cgroup/unified");
    if !unified.join("cgroup.procs").exists() {
        return;
    }
    let mut cfg = config(CgroupConfig::V2 {
        root: unified.into(),
    });
    cfg.require_controllers = false;
    let mut slot = Slot::new(cfg).unwrap();
    let tid = slot
        .spawner_thread()
        .expect("v2 slots have a spawner thread too");
    let cg = std::fs::read_to_string(format!("/proc/self/task/{tid}/cgroup")).unwrap();
    let name = format!("slot-{}", slot.config().slot);
    assert!(
        !cg.lines()
            .any(|l| l.starts_with("0::") && l.ends_with(&name)),
        "{cg}"
    );
    slot.prepare_workspace(1 << 20, 100).unwrap();
    assert_slot_works(&slot);
}

#[test]
fn sandboxes_share_the_slots_empty_network_namespace_and_leave_nothing_in_it() {
    let slot = slot();
    let tid = slot.spawner_thread().unwrap();
    let slot_net = std::fs::read_link(format!("/proc/self/task/{tid}/ns/net")).unwrap();
    let host_net = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert_ne!(slot_net, host_net);
    let r = run(&slot, &sh("readlink /proc/self/ns/net"));
    assert_eq!(r.stdout.trim(), slot_net.to_str().unwrap(), "{}", r.stderr);

    // A stage listens on an abstract unix socket and a TCP port and leaves a holder behind;
    // it cannot configure the namespace (owned by the host user namespace).
    let leave = r#"
import os, socket, subprocess
u = socket.socket(socket.AF_UNIX); u.bind("\0leak"); u.listen()
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("0.0.0.0", 4444)); t.listen()
r = subprocess.run(["ip", "link", "set", "lo", "up"], capture_output=True)
print("ip", r.returncode != 0)
if os.fork() == 0:
    import time; time.sleep(1000)
print("left")
"#;
    let r = run(&slot, &RunSpec::new(["python3", "-c", leave]));
    assert!(r.stdout.contains("left"), "{} {}", r.stdout, r.stderr);
    if r.stdout.contains("ip ") {
        assert!(r.stdout.contains("ip True"), "{}", r.stdout);
    }
    // The next stage finds nothing: the holder died with its stage, and with it the sockets.
    let probe = r#"
import socket
u = socket.socket(socket.AF_UNIX)
try:
    u.connect("\0leak"); print("unix CONNECTED")
except OSError as e:
    print("unix", e.errno)
t = socket.socket()
t.bind(("0.0.0.0", 4444)); print("port free")
print(open("/proc/net/unix").read().count("@leak"), open("/proc/net/tcp").read().count(":115C"))
print(sorted(n for _, n in socket.if_nameindex()))
"#;
    let r = run(&slot, &RunSpec::new(["python3", "-c", probe]));
    assert_eq!(
        r.stdout,
        format!("unix {}\nport free\n0 0\n['lo']\n", libc::ECONNREFUSED),
        "{}",
        r.stderr
    );
}
