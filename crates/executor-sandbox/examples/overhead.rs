//! Added latency of the sandbox, against a bare fork/exec and against bubblewrap.
//!
//! `cargo run -p executor-sandbox --release --example overhead [runs]` (as root). Runs are
//! interleaved (bare, sandbox, bwrap, bare, ...) so machine noise hits all alike; the slot is
//! reused across runs as the worker does. Prints median and minimum wall time per variant,
//! and once, the cold costs: `Slot::new` (on v1 this includes moving the slot's spawner thread
//! into the slot cgroups) and the first spawn of a fresh slot.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use executor_sandbox::{CgroupConfig, RunSpec, Slot, SlotConfig};

fn bare(argv: &[&str]) -> Duration {
    let t = Instant::now();
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    assert!(status.success());
    t.elapsed()
}

fn sandbox(slot: &Slot, argv: &[&str]) -> Duration {
    let t = Instant::now();
    let mut child = slot
        .spawn(&RunSpec::new(argv.iter().copied()))
        .expect("spawn");
    drop(child.stdout.take());
    drop(child.stderr.take());
    let outcome = child.wait().expect("wait");
    assert_eq!(outcome.exit_code, Some(0));
    t.elapsed()
}

fn bwrap(workspace: &str, argv: &[&str]) -> Duration {
    let t = Instant::now();
    let status = Command::new("bwrap")
        .args([
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/sbin",
            "/sbin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--ro-bind",
            "/etc/ld.so.cache",
            "/etc/ld.so.cache",
            "--ro-bind",
            "/etc/alternatives",
            "/etc/alternatives",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--bind",
            workspace,
            "/workspace",
            "--chdir",
            "/workspace",
            "--hostname",
            "sandbox",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--cap-drop",
            "ALL",
            "--",
        ])
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("bwrap (apt-get install bubblewrap)");
    assert!(status.success());
    t.elapsed()
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(v[v.len() / 2]), ms(v[0]))
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let mut cfg = SlotConfig::new(900, "/run/executor-bench");
    cfg.cgroup_parent = "executor-bench".into();
    if let Some(v) = std::env::args().nth(2) {
        if v == "v2" {
            cfg.cgroup = CgroupConfig::V2 {
                root: "/sys/fs/cgroup/unified".into(),
            };
            cfg.require_controllers = false;
        }
    }
    let t = Instant::now();
    let mut slot = Slot::new(cfg).expect("Slot::new");
    let slot_new = t.elapsed();
    let ws = slot
        .prepare_workspace(64 << 20, 10_000)
        .expect("workspace")
        .to_owned();
    let first = sandbox(&slot, &["true"]);
    println!(
        "cold: Slot::new {:.2} ms, first spawn of `true` {:.2} ms ({} cgroups)",
        slot_new.as_secs_f64() * 1000.0,
        first.as_secs_f64() * 1000.0,
        if slot.cgroup_v2() { "v2" } else { "v1" }
    );
    let bw_ws = std::env::temp_dir().join("executor-bench-bwrap");
    std::fs::create_dir_all(&bw_ws).unwrap();
    let bw_ws = bw_ws.to_str().unwrap().to_owned();
    let _ = ws;

    for (label, argv) in [
        ("true", &["true"][..]),
        ("python3 -c pass", &["python3", "-c", "pass"][..]),
    ] {
        // Warm up caches.
        bare(argv);
        sandbox(&slot, argv);
        bwrap(&bw_ws, argv);
        let (mut b, mut s, mut w) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            b.push(bare(argv));
            s.push(sandbox(&slot, argv));
            w.push(bwrap(&bw_ws, argv));
        }
        let (bm, bmin) = stats(b);
        let (sm, smin) = stats(s);
        let (wm, wmin) = stats(w);
        println!(
            "{label} ({runs} runs each, {} cgroups)",
            if slot.cgroup_v2() { "v2" } else { "v1" }
        );
        println!("  bare     median {bm:7.2} ms  min {bmin:7.2} ms");
        println!("  sandbox  median {sm:7.2} ms  min {smin:7.2} ms  added median {:+.2} ms, min {:+.2} ms", sm - bm, smin - bmin);
        println!("  bwrap    median {wm:7.2} ms  min {wmin:7.2} ms  added median {:+.2} ms, min {:+.2} ms", wm - bm, wmin - bmin);
    }
    slot.cleanup().unwrap();
}
