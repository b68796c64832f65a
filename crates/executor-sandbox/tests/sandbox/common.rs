//! Test harness: a private slot per test, and a runner that collects output.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use executor_sandbox::{CgroupConfig, Outcome, RunSpec, Slot, SlotConfig};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A slot number, state dir and cgroup unique to this test (tests run in parallel, also
/// as separate processes under nextest).
pub fn config(cgroup: CgroupConfig) -> SlotConfig {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let slot = (std::process::id() % 1_000_000) * 1000 + n;
    let mut cfg = SlotConfig::new(slot, PathBuf::from("/run/executor-sandbox-tests"));
    cfg.host_uid = 300_000 + slot % 1_000_000;
    cfg.cgroup = cgroup;
    cfg.cgroup_parent = "executor-sandbox-tests".to_string();
    cfg
}

/// A v1 slot with a mounted 64 MiB workspace.
pub fn slot() -> Slot {
    let mut slot = Slot::new(config(CgroupConfig::V1 {
        root: "/sys/fs/cgroup".into(),
    }))
    .expect("Slot::new");
    slot.prepare_workspace(64 << 20, 10_000)
        .expect("prepare_workspace");
    slot
}

pub struct Run {
    pub outcome: Outcome,
    pub stdout: String,
    pub stderr: String,
}

fn drain(fd: Option<OwnedFd>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(fd) = fd {
            let _ = std::fs::File::from(fd).read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    })
}

/// Runs `spec` to the end; a watchdog kills it after `limit` (a safety net, not an assertion).
pub fn run_with(slot: &Slot, spec: &RunSpec, limit: Duration) -> Run {
    let mut child = slot.spawn(spec).expect("spawn");
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let killer = child.killer();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(limit).is_err() {
            killer.kill();
        }
    });
    let outcome = child.wait().expect("wait");
    let _ = done_tx.send(());
    watchdog.join().unwrap();
    Run {
        outcome,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

pub fn run(slot: &Slot, spec: &RunSpec) -> Run {
    run_with(slot, spec, Duration::from_secs(60))
}

pub fn sh(script: &str) -> RunSpec {
    RunSpec::new(["/bin/sh", "-c", script])
}

/// The slot still runs a normal program correctly.
pub fn assert_slot_works(slot: &Slot) {
    let r = run(slot, &sh("echo alive; id -u"));
    assert_eq!(r.outcome.exit_code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout, "alive\n1000\n");
}

/// Compiles a C program with gcc (at test time) and puts it into the workspace as
/// `bin/<name>`; returns the path inside the sandbox.
pub fn install_c(slot: &Slot, name: &str, source: &str) -> String {
    let dir =
        std::env::temp_dir().join(format!("executor-sandbox-cc-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    let bin = dir.join(name);
    std::fs::write(&src, source).unwrap();
    let out = std::process::Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .expect("gcc");
    assert!(
        out.status.success(),
        "gcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&bin).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    slot.write_file(&format!("bin/{name}"), &bytes, 0o755)
        .unwrap();
    format!("/workspace/bin/{name}")
}
