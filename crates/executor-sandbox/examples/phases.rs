//! Phase probe: runs one program in a reused slot `runs` times and prints, per run, the
//! CLOCK_MONOTONIC time (ns) before `spawn`, after `spawn` returned (program exec'd) and after
//! `wait` returned, so that a `perf record -k CLOCK_MONOTONIC` trace of the same run can be
//! split into phases. `cargo run -p executor-sandbox --release --example phases -- 30 [v2] [argv...]`

use std::time::Instant;

use executor_sandbox::{CgroupConfig, RunSpec, Slot, SlotConfig};

fn now_ns(origin: Instant) -> u128 {
    origin.elapsed().as_nanos()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(30);
    let mut rest: Vec<String> = args.collect();
    let mut cfg = SlotConfig::new(901, "/run/executor-bench");
    cfg.cgroup_parent = "executor-bench".into();
    if rest.first().map(String::as_str) == Some("v2") {
        rest.remove(0);
        cfg.cgroup = CgroupConfig::V2 {
            root: "/sys/fs/cgroup/unified".into(),
        };
        cfg.require_controllers = false;
    }
    if rest.is_empty() {
        rest.push("true".into());
    }
    let mut slot = Slot::new(cfg).expect("Slot::new");
    slot.prepare_workspace(64 << 20, 10_000).expect("workspace");
    let origin = Instant::now();
    let mut spawned = Vec::new();
    let mut total = Vec::new();
    for _ in 0..runs + 1 {
        let t0 = now_ns(origin);
        let mut child = slot
            .spawn(&RunSpec::new(rest.iter().cloned()))
            .expect("spawn");
        let t1 = now_ns(origin);
        let out = child.stdout.take().map(std::fs::File::from);
        let err = child.stderr.take().map(std::fs::File::from);
        let pid = child.pid();
        let outcome = child.wait().expect("wait");
        if runs == 0 {
            let mut s = String::new();
            use std::io::Read;
            let _ = out.unwrap().read_to_string(&mut s);
            let _ = err.unwrap().read_to_string(&mut s);
            println!("{s}{outcome:?}");
            break;
        }
        let t2 = now_ns(origin);
        assert_eq!(outcome.exit_code, Some(0));
        println!(
            "run pid={pid} spawn_us={} wait_us={}",
            (t1 - t0) / 1000,
            (t2 - t1) / 1000
        );
        spawned.push((t1 - t0) as f64 / 1e6);
        total.push((t2 - t0) as f64 / 1e6);
    }
    if runs == 0 {
        return;
    }
    spawned.remove(0);
    total.remove(0);
    spawned.sort_by(f64::total_cmp);
    total.sort_by(f64::total_cmp);
    println!(
        "spawn() median {:.2} ms min {:.2}; spawn+wait median {:.2} ms min {:.2}",
        spawned[spawned.len() / 2],
        spawned[0],
        total[total.len() / 2],
        total[0]
    );
    slot.cleanup().unwrap();
}
