//! cgroup v2 paths on this host's (controller-less) unified mount: CLONE_INTO_CGROUP,
//! cpu.stat accounting, cgroup.kill cleanup.

use std::path::Path;
use std::time::{Duration, Instant};

use executor_sandbox::{CgroupConfig, Slot};

use crate::common::*;

const UNIFIED: &str = "/sys/fs/cgroup/unified";

fn v2_slot() -> Option<Slot> {
    if !Path::new(UNIFIED).join("cgroup.procs").exists() {
        eprintln!("no cgroup2 mount at {UNIFIED}: skipped");
        return None;
    }
    let mut cfg = config(CgroupConfig::V2 {
        root: UNIFIED.into(),
    });
    cfg.require_controllers = false;
    let mut slot = Slot::new(cfg).expect("Slot::new (v2)");
    slot.prepare_workspace(16 << 20, 1000).unwrap();
    Some(slot)
}

#[test]
fn v2_spawns_into_the_slot_cgroup_and_cleans_up() {
    let Some(mut slot) = v2_slot() else { return };
    assert!(slot.cgroup_v2());
    let child = slot
        .spawn(&sh("(sleep 1000 &); while :; do :; done"))
        .unwrap();
    // Created inside the slot cgroup (CLONE_INTO_CGROUP), not moved there.
    let cg = std::fs::read_to_string(format!("/proc/{}/cgroup", child.pid())).unwrap();
    let slot_name = format!("/executor-sandbox-tests/slot-{}\n", slot.config().slot);
    assert!(
        cg.lines()
            .any(|l| l.starts_with("0::") && l.ends_with(slot_name.trim_end())),
        "{cg}"
    );
    let start = Instant::now();
    while child.cpu_usage_ms() < 100 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no cpu accounted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(slot.processes().len() >= 2);
    child.kill();
    let outcome = child.wait().unwrap();
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert!(outcome.cpu_ms >= 100);
    assert!(!outcome.oom_killed);
    assert_eq!(slot.processes(), Vec::<i32>::new());
    assert_slot_works(&slot);
    slot.cleanup().unwrap();
}

#[test]
fn v2_cleanup_kills_whatever_is_left_and_the_slot_still_works() {
    let Some(mut slot) = v2_slot() else { return };
    let child = slot.spawn(&sh("sleep 1000")).unwrap();
    // A worker that lost track of its child: its leftovers must still go.
    std::mem::forget(child);
    assert!(!slot.processes().is_empty());
    slot.cleanup().unwrap();
    assert_eq!(slot.processes(), Vec::<i32>::new());
    slot.prepare_workspace(1 << 20, 100).unwrap();
    assert_slot_works(&slot);
}
