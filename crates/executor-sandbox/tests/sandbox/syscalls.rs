//! The seccomp policy, exercised by a real program.

use executor_sandbox::RunSpec;

use crate::common::*;

const PROBE: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TRY(name, call) do { errno = 0; long r = (call); printf("%s %ld %d\n", name, r, r < 0 ? errno : 0); } while (0)

int main(void) {
    char buf[64] = {0};
    TRY("ptrace", ptrace(PTRACE_TRACEME, 0, 0, 0));
    TRY("mount", mount("none", "/tmp", "tmpfs", 0, 0));
    TRY("umount2", umount2("/proc", MNT_DETACH));
    TRY("unshare", unshare(CLONE_NEWUSER));
    TRY("unshare_ns", unshare(CLONE_NEWNS));
    TRY("setns", setns(0, 0));
    TRY("clone_newuser", syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
    TRY("clone3", syscall(435, buf, 64));
    TRY("keyctl", syscall(SYS_keyctl, 0, 0, 0, 0, 0));
    TRY("add_key", syscall(SYS_add_key, "user", "k", "v", 1, -2));
    TRY("bpf", syscall(SYS_bpf, 0, buf, 64));
    TRY("io_uring_setup", syscall(425, 8, buf));
    TRY("userfaultfd", syscall(SYS_userfaultfd, 0));
    TRY("perf_event_open", syscall(SYS_perf_event_open, buf, 0, -1, -1, 0));
    TRY("personality", personality(READ_IMPLIES_EXEC));
    TRY("ioctl_tiocsti", ioctl(0, TIOCSTI, "x"));
    TRY("x32_getpid", syscall(39 | 0x40000000));
    TRY("process_vm_readv", syscall(SYS_process_vm_readv, 1, 0, 0, 0, 0, 0));
    TRY("open_by_handle_at", syscall(SYS_open_by_handle_at, 0, 0, 0));
    TRY("pivot_root", syscall(SYS_pivot_root, "/", "/"));
    TRY("fsopen", syscall(430, "tmpfs", 0));
    /* Still allowed: */
    TRY("personality_query", personality(0xffffffff));
    pid_t p = fork();
    if (p == 0) _exit(0);
    printf("fork %d\n", p > 0);
    return 0;
}
"#;

#[test]
fn dangerous_syscalls_are_denied() {
    let slot = slot();
    let bin = install_c(&slot, "probe", PROBE);
    let r = run(&slot, &RunSpec::new([bin.as_str()]));
    assert_eq!(r.outcome.exit_code, Some(0), "{}", r.stderr);
    let result = |name: &str| -> (i64, i32) {
        let line = r
            .stdout
            .lines()
            .find(|l| l.split(' ').next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing: {}", r.stdout));
        let f: Vec<&str> = line.split(' ').collect();
        (f[1].parse().unwrap(), f[2].parse().unwrap())
    };
    for name in [
        "ptrace",
        "mount",
        "umount2",
        "unshare",
        "unshare_ns",
        "setns",
        "clone_newuser",
        "keyctl",
        "add_key",
        "bpf",
        "userfaultfd",
        "perf_event_open",
        "personality",
        "ioctl_tiocsti",
        "process_vm_readv",
        "open_by_handle_at",
        "pivot_root",
    ] {
        assert_eq!(result(name), (-1, libc::EPERM), "{name}");
    }
    for name in ["clone3", "io_uring_setup", "x32_getpid", "fsopen"] {
        assert_eq!(result(name), (-1, libc::ENOSYS), "{name}");
    }
    assert!(result("personality_query").0 >= 0);
    assert!(r.stdout.contains("fork 1"), "{}", r.stdout);
    assert_slot_works(&slot);
}

#[test]
fn threads_and_subprocesses_still_work() {
    // glibc's pthread_create and posix_spawn use clone3 first and must fall back to clone.
    let slot = slot();
    let script = "import threading, subprocess; t = threading.Thread(target=print, args=('thread',)); \
                  t.start(); t.join(); print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())";
    let r = run(&slot, &RunSpec::new(["python3", "-c", script]));
    assert_eq!(r.stdout, "thread\nchild\n", "{}", r.stderr);
}
