//! Hostile programs: each is contained, and the slot works for the next job afterwards.

use std::time::{Duration, Instant};

use executor_sandbox::RunSpec;

use crate::common::*;

const FORK_BOMB: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    int n = 0;
    for (;;) {
        pid_t p = fork();
        if (p == 0) { for (;;) pause(); }
        if (p < 0) { printf("fork failed after %d: %s\n", n, strerror(errno)); fflush(stdout); return 0; }
        n++;
    }
}
"#;

#[test]
fn fork_bomb_hits_the_pids_limit_and_dies_with_the_program() {
    let slot = slot();
    let bin = install_c(&slot, "forkbomb", FORK_BOMB);
    let mut spec = RunSpec::new([bin.as_str()]);
    spec.limits.pids = 16;
    let r = run(&slot, &spec);
    assert_eq!(r.outcome.exit_code, Some(0), "{}", r.stderr);
    assert!(r.outcome.pids_limit_hit);
    let n: u32 = r
        .stdout
        .strip_prefix("fork failed after ")
        .and_then(|s| s.split(':').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output {:?}", r.stdout));
    assert!(n < 16, "{n} forks succeeded");
    assert!(
        r.stdout.contains("Resource temporarily unavailable"),
        "{}",
        r.stdout
    );
    // The children it left are gone.
    assert_eq!(slot.processes(), Vec::<i32>::new());
    assert_slot_works(&slot);

    // A classic shell fork bomb, killed from outside, also leaves nothing.
    let mut spec = sh("f() { f | f & }; f; sleep 1000");
    spec.limits.pids = 32;
    let _ = run_with(&slot, &spec, Duration::from_millis(500));
    assert_eq!(slot.processes(), Vec::<i32>::new());
    assert_slot_works(&slot);
}

#[test]
fn memory_bomb_is_oom_killed() {
    let slot = slot();
    let mut spec = RunSpec::new(["python3", "-c", "x = b'x' * (512 << 20); print('survived')"]);
    spec.limits.memory_mb = 64;
    let r = run(&slot, &spec);
    assert_eq!(
        r.outcome.signal,
        Some(libc::SIGKILL),
        "{:?} {}",
        r.outcome,
        r.stderr
    );
    assert!(r.outcome.oom_killed);
    assert!(!r.stdout.contains("survived"));
    let peak = r.outcome.memory_peak_bytes.expect("v1 reports the peak");
    assert!(peak > 32 << 20 && peak <= 64 << 20, "peak {peak}");
    assert_slot_works(&slot);
    // The next stage does not inherit the verdict.
    let r = run(&slot, &sh("true"));
    assert!(!r.outcome.oom_killed);
}

#[test]
fn output_flood_blocked_on_a_full_pipe_can_be_killed() {
    let slot = slot();
    let mut child = slot.spawn(&RunSpec::new(["yes", "flood"])).unwrap();
    let stdout = child.stdout.take(); // never read: the program blocks on the full pipe
    let killer = child.killer();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        killer.kill();
    });
    let outcome = child.wait().unwrap();
    t.join().unwrap();
    drop(stdout);
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert_eq!(slot.processes(), Vec::<i32>::new());
    assert_slot_works(&slot);
}

#[test]
fn filling_tmp_workspace_and_shm_gives_enospc() {
    let slot = slot();
    let mut spec = sh(
        "dd if=/dev/zero of=/tmp/big bs=1M count=100 2>&1 | head -1; \
         dd if=/dev/zero of=/dev/shm/big bs=1M count=100 2>&1 | head -1; \
         dd if=/dev/zero of=/workspace/big bs=1M count=100 2>&1 | head -1; \
         i=0; while touch /tmp/f$i 2>/dev/null; do i=$((i+1)); done; echo inodes $i",
    );
    spec.limits.tmp_bytes = 8 << 20;
    spec.limits.tmp_inodes = 100;
    spec.limits.shm_bytes = 4 << 20;
    spec.limits.file_size_bytes = 1 << 30;
    let r = run(&slot, &spec);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", r.stdout);
    for line in &lines[..3] {
        assert!(line.contains("No space left on device"), "{}", r.stdout);
    }
    let inodes: u32 = lines[3].strip_prefix("inodes ").unwrap().parse().unwrap();
    assert!(inodes < 100, "{inodes}");
    assert_slot_works(&slot);
}

#[test]
fn file_size_limit_stops_a_large_write() {
    let slot = slot();
    let mut spec = sh("dd if=/dev/zero of=/workspace/big bs=1M count=10; echo status $?");
    spec.limits.file_size_bytes = 1 << 20;
    let r = run(&slot, &spec);
    // SIGXFSZ kills dd; the shell reports it.
    assert!(
        r.stdout.contains("status 153"),
        "{} / {}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn infinite_loop_accumulates_cpu_and_is_killed() {
    let slot = slot();
    let child = slot.spawn(&sh("while :; do :; done")).unwrap();
    let start = Instant::now();
    while child.cpu_usage_ms() < 300 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no cpu accounted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill();
    let outcome = child.wait().unwrap();
    assert_eq!(outcome.signal, Some(libc::SIGKILL));
    assert!(outcome.cpu_ms >= 300, "{}", outcome.cpu_ms);
    assert_slot_works(&slot);
}

#[test]
fn rlimit_cpu_is_a_backstop() {
    let slot = slot();
    let mut spec = sh("exec sh -c 'while :; do :; done'");
    spec.limits.cpu_ms = 500; // soft RLIMIT_CPU = 2 s
    let r = run(&slot, &spec);
    assert_eq!(r.outcome.signal, Some(libc::SIGXCPU), "{:?}", r.outcome);
    // The kernel checks RLIMIT_CPU per tick; cgroup accounting differs slightly.
    assert!(r.outcome.cpu_ms >= 1500, "{}", r.outcome.cpu_ms);
    assert_slot_works(&slot);
}

#[test]
fn host_files_and_processes_are_invisible() {
    let slot = slot();
    let r = run(
        &slot,
        &sh("cat /etc/shadow; ls /root /home /sys /run; ls /; \
             echo; echo cmdline $(tr '\\0' ' ' </proc/1/cmdline); \
             cat /proc/1/environ | tr '\\0' '\\n' | grep -c CARGO; \
             echo pids $(ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '); \
             ps -e -o pid= | wc -l; \
             echo x > /usr/x; echo x > /etc/x; echo x > /x; cat /etc/passwd | grep -c :"),
    );
    let out = &r.stdout;
    let err = &r.stderr;
    assert!(err.contains("/etc/shadow: No such file"), "{err}");
    for dir in ["/root", "/home", "/sys", "/run"] {
        assert!(
            err.contains(&format!("cannot access '{dir}'")),
            "{dir}: {err}"
        );
    }
    let root_listing: Vec<&str> = out.split("\n\n").next().unwrap().lines().collect();
    for entry in &root_listing {
        assert!(
            [
                "bin",
                "dev",
                "etc",
                "lib",
                "lib32",
                "lib64",
                "libx32",
                "proc",
                "sbin",
                "tmp",
                "usr",
                "workspace"
            ]
            .contains(entry),
            "unexpected / entry {entry}"
        );
    }
    assert!(out.contains("cmdline sandbox-init"), "{out}");
    assert!(out.contains("\n0\n"), "host environment leaked: {out}");
    let pids = out.lines().find(|l| l.starts_with("pids ")).unwrap();
    let pids: Vec<u32> = pids[5..]
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids[0], 1);
    assert!(pids.iter().all(|&p| p < 20), "{pids:?}");
    for path in ["/usr/x", "/etc/x", "/x"] {
        assert!(
            err.contains(&format!("{path}: Read-only file system")),
            "{path}: {err}"
        );
    }
    assert!(out.trim_end().ends_with('3'), "passwd: {out}");
}

#[test]
fn there_is_no_network() {
    let slot = slot();
    let script = r#"
import socket
for addr in [("127.0.0.1", 6379), ("8.8.8.8", 53), ("10.0.0.1", 80)]:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(addr)
        print(addr, "CONNECTED")
    except OSError as e:
        print(addr, "failed", e.errno)
print(sorted(n for _, n in socket.if_nameindex()))
"#;
    let r = run(&slot, &RunSpec::new(["python3", "-c", script]));
    assert!(!r.stdout.contains("CONNECTED"), "{}", r.stdout);
    assert_eq!(
        r.stdout.matches("failed").count(),
        3,
        "{} {}",
        r.stdout,
        r.stderr
    );
    assert!(r.stdout.contains("['lo']"), "{}", r.stdout);
}

#[test]
fn processes_outliving_the_program_are_killed() {
    let slot = slot();
    let r = run(&slot, &sh("(setsid sleep 1000 &); (sleep 1000 &) ; nohup sleep 1000 >/dev/null 2>&1 & echo started"));
    assert_eq!(r.stdout, "started\n");
    assert_eq!(r.outcome.exit_code, Some(0));
    assert_eq!(slot.processes(), Vec::<i32>::new());
    assert_slot_works(&slot);
}

#[test]
fn nothing_of_a_job_is_visible_to_the_next() {
    let mut slot = slot();
    let r = run(
        &slot,
        &sh("echo s > /workspace/secret; echo s > /tmp/secret; echo s > /dev/shm/secret; sleep 1000 & echo ok"),
    );
    assert_eq!(r.stdout, "ok\n");
    slot.cleanup().unwrap();
    slot.prepare_workspace(1 << 20, 100).unwrap();
    let r = run(
        &slot,
        &sh("ls -A /workspace /tmp /dev/shm; cat /workspace/secret /tmp/secret /dev/shm/secret"),
    );
    assert_eq!(
        r.stdout, "/dev/shm:\n\n/tmp:\n\n/workspace:\n",
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.matches("No such file").count(), 3, "{}", r.stderr);
}
