//! Template mount namespaces (see `src/spawner.rs`): each stage copies a prepared image
//! namespace of its slot and adds only its own mounts. These check what must not leak from
//! one stage, job or image to the next, and that the template is read-only.

use std::path::PathBuf;

use executor_sandbox::{Image, RunSpec};

use crate::common::{assert_slot_works, run, sh, slot};

fn with_binds(script: &str, binds: &[(&str, &str)]) -> RunSpec {
    let mut spec = sh(script);
    spec.image = Image::Host {
        extra_ro_binds: binds
            .iter()
            .map(|(a, b)| (PathBuf::from(a), PathBuf::from(b)))
            .collect(),
    };
    spec
}

#[test]
fn images_with_different_binds_alternate_in_one_slot() {
    let slot = slot();
    let a = with_binds(
        "test -d /opt/a && test ! -e /opt/b && echo a",
        &[("/usr/bin", "/opt/a")],
    );
    let b = with_binds(
        "test -d /opt/b && test ! -e /opt/a && echo b",
        &[("/usr/lib", "/opt/b")],
    );
    let none = sh("test ! -e /opt/a && test ! -e /opt/b && echo none");
    for (spec, want) in [
        (&a, "a\n"),
        (&b, "b\n"),
        (&none, "none\n"),
        (&a, "a\n"),
        (&b, "b\n"),
    ] {
        let r = run(&slot, spec);
        assert_eq!(r.outcome.exit_code, Some(0), "stderr: {}", r.stderr);
        assert_eq!(r.stdout, want);
    }
    assert_slot_works(&slot);
}

#[test]
fn each_job_sees_its_own_workspace() {
    let mut slot = slot();
    slot.write_file("first", b"1", 0o644).unwrap();
    let r = run(&slot, &sh("cat /workspace/first"));
    assert_eq!(r.stdout, "1");
    slot.prepare_workspace(1 << 20, 100).unwrap();
    slot.write_file("second", b"2", 0o644).unwrap();
    let r = run(
        &slot,
        &sh("test ! -e /workspace/first && cat /workspace/second"),
    );
    assert_eq!(r.outcome.exit_code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout, "2");
}

#[test]
fn the_shared_image_is_read_only_and_stage_mounts_are_fresh() {
    let slot = slot();
    // A stage cannot write the template's root or /dev, and what it leaves in its own /tmp,
    // /dev/shm and /workspace-less places is gone for the next one.
    let r = run(
        &slot,
        &sh(
            "touch /x 2>/dev/null || touch /dev/x 2>/dev/null || touch /etc/x 2>/dev/null \
             || echo ro; echo t > /tmp/t; echo s > /dev/shm/s",
        ),
    );
    assert_eq!(r.stdout, "ro\n", "stderr: {}", r.stderr);
    let r = run(
        &slot,
        &sh("test ! -e /tmp/t && test ! -e /dev/shm/s && echo clean"),
    );
    assert_eq!(r.stdout, "clean\n", "stderr: {}", r.stderr);
}

#[test]
fn proc_lists_only_the_stage_and_cannot_be_unmounted() {
    let slot = slot();
    // Our /proc is the stage's own (its init is 1, the shell 2); the program cannot unmount it
    // to reach the procfs the template keeps under it (of an empty pid namespace; the mount
    // is also locked, being copied into the sandbox's user namespace).
    let r = run(
        &slot,
        &sh("ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '; \
             umount /proc 2>/dev/null || umount -l /proc 2>/dev/null || echo locked"),
    );
    assert_eq!(r.outcome.exit_code, Some(0), "stderr: {}", r.stderr);
    let pids: Vec<u32> = r
        .stdout
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(
        pids.contains(&1) && pids.iter().all(|&p| p < 100),
        "{}",
        r.stdout
    );
    assert!(r.stdout.ends_with("locked\n"), "{}", r.stdout);
}

#[test]
fn ended_fd_is_the_status_pipe_and_wait_still_reports() {
    use std::os::unix::fs::FileTypeExt;
    // (Readiness itself is not polled here: tests have no `unsafe` and std has no poll.)
    let slot = slot();
    for (script, code) in [("exit 3", 3), ("sleep 0.2 & exit 0", 0)] {
        let mut child = slot.spawn(&sh(script)).expect("spawn");
        drop(child.stdout.take());
        drop(child.stderr.take());
        let dup = std::fs::File::from(child.ended_fd().try_clone_to_owned().unwrap());
        assert!(dup.metadata().unwrap().file_type().is_fifo());
        drop(dup);
        let outcome = child.wait().expect("wait");
        assert_eq!(outcome.exit_code, Some(code));
        // The deferred init is reaped before the slot reports its processes.
        assert!(slot.processes().is_empty(), "{:?}", slot.processes());
    }
    let child = slot.spawn(&sh("sleep 30")).expect("spawn");
    child.kill();
    assert_eq!(child.wait().expect("wait").signal, Some(libc::SIGKILL));
    assert_slot_works(&slot);
}
