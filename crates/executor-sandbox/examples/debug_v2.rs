use executor_sandbox::*;
fn main() {
    let mut cfg = SlotConfig::new(999, "/run/executor-dbg");
    if std::env::args().nth(1).is_none() { cfg.cgroup = CgroupConfig::V2 { root: "/sys/fs/cgroup/unified".into() }; } else { cfg.cgroup = CgroupConfig::V1 { root: "/sys/fs/cgroup".into() }; }
    cfg.require_controllers = false;
    cfg.cgroup_parent = "dbg".into();
    let mut slot = Slot::new(cfg).unwrap();
    slot.prepare_workspace(1 << 20, 100).unwrap();
    let child = slot.spawn(&RunSpec::new(["/bin/sh", "-c", "while :; do :; done"])).unwrap();
    for _ in 0..3 {
        let st = std::fs::read_to_string(format!("/proc/{}/status", child.pid())).unwrap();
        println!("{}", st.lines().filter(|l| l.starts_with("State") || l.starts_with("SigQ")).collect::<Vec<_>>().join(" "));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    println!("pid {} cpu {}", child.pid(), child.cpu_usage_ms());
    println!("{}", std::fs::read_to_string("/sys/fs/cgroup/unified/dbg/slot-999/cpu.stat").unwrap());
    println!("{}", std::fs::read_to_string("/sys/fs/cgroup/unified/dbg/slot-999/cgroup.procs").unwrap());
    println!("{}", std::fs::read_to_string(format!("/proc/{}/cgroup", child.pid())).unwrap());
    let _ = std::process::Command::new("ps").args(["-o", "pid,stat,time,cmd", "--ppid", &child.pid().to_string()]).status();
    child.kill();
    println!("{:?}", child.wait());
}
