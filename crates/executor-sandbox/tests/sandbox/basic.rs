//! Ordinary programs: exit status, output, stdin, environment, identity.

use std::io::Write;

use executor_sandbox::{RunSpec, SandboxError};

use crate::common::*;

#[test]
fn runs_a_program_and_reports_its_exit_code() {
    let slot = slot();
    let r = run(&slot, &sh("echo hello; echo oops >&2; exit 3"));
    assert_eq!(r.stdout, "hello\n");
    assert_eq!(r.stderr, "oops\n");
    assert_eq!(r.outcome.exit_code, Some(3));
    assert_eq!(r.outcome.signal, None);
    assert!(!r.outcome.oom_killed);
    assert!(!r.outcome.pids_limit_hit);
    assert_slot_works(&slot);
}

#[test]
fn reports_the_signal_that_ended_the_program() {
    let slot = slot();
    let r = run(&slot, &sh("kill -SEGV $$"));
    assert_eq!(r.outcome.exit_code, None);
    assert_eq!(r.outcome.signal, Some(libc::SIGSEGV));
    assert_slot_works(&slot);
}

#[test]
fn stdin_is_piped_when_asked_and_null_otherwise() {
    let slot = slot();
    let mut spec = sh("cat; echo done");
    spec.stdin = true;
    let mut child = slot.spawn(&spec).unwrap();
    let mut stdin = std::fs::File::from(child.stdin.take().unwrap());
    stdin.write_all(b"from the client\n").unwrap();
    drop(stdin);
    let mut out = String::new();
    std::io::Read::read_to_string(
        &mut std::fs::File::from(child.stdout.take().unwrap()),
        &mut out,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().exit_code, Some(0));
    assert_eq!(out, "from the client\ndone\n");

    let r = run(&slot, &sh("cat; echo eof"));
    assert_eq!(r.stdout, "eof\n");
}

#[test]
fn environment_is_exactly_what_the_worker_passes() {
    let slot = slot();
    let mut spec = RunSpec::new(["/usr/bin/env"]);
    spec.env = vec![("ONLY".into(), "this".into())];
    let r = run(&slot, &spec);
    assert_eq!(r.stdout, "ONLY=this\n");
}

#[test]
fn runs_as_an_unprivileged_user_without_capabilities() {
    let slot = slot();
    let r = run(
        &slot,
        &sh("id; hostname; grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status"),
    );
    assert_eq!(r.outcome.exit_code, Some(0), "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "uid=1000(sandbox) gid=1000(sandbox) groups=1000(sandbox)"
    );
    assert_eq!(lines[1], "sandbox");
    let status = &r.stdout;
    assert!(status.contains("Uid:\t1000\t1000\t1000\t1000"), "{status}");
    let groups = status.lines().find(|l| l.starts_with("Groups:")).unwrap();
    assert_eq!(
        groups.trim_end(),
        "Groups:",
        "supplementary groups leaked: {status}"
    );
    for cap in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(
            status.contains(&format!("{cap}:\t0000000000000000")),
            "{cap}: {status}"
        );
    }
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    assert!(status.contains("Seccomp:\t2"), "{status}");
}

#[test]
fn setuid_binaries_do_not_elevate() {
    let slot = slot();
    let r = run(
        &slot,
        &sh("su -c id root </dev/null; passwd -S root </dev/null; id -u"),
    );
    assert!(!r.stdout.contains("uid=0"), "{}", r.stdout);
    assert!(r.stdout.ends_with("1000\n"), "{}", r.stdout);
}

#[test]
fn python_and_c_programs_run() {
    let slot = slot();
    let r = run(
        &slot,
        &RunSpec::new([
            "python3",
            "-c",
            "import sys, ssl; print(sys.version_info[0])",
        ]),
    );
    assert_eq!(r.stdout, "3\n", "{}", r.stderr);
    let bin = install_c(
        &slot,
        "hello",
        "#include <stdio.h>\nint main(){puts(\"hi from c\");return 0;}",
    );
    let r = run(&slot, &RunSpec::new([bin.as_str()]));
    assert_eq!(r.stdout, "hi from c\n", "{}", r.stderr);
}

#[test]
fn a_missing_program_is_a_clear_spawn_error() {
    let slot = slot();
    match slot.spawn(&RunSpec::new(["no-such-program"])) {
        Err(SandboxError::Exec { program, err }) => {
            assert_eq!(program, "no-such-program");
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        }
        other => panic!("expected an exec error, got {other:?}"),
    }
    let mut spec = sh("true");
    spec.cwd = "/nonexistent".into();
    assert!(matches!(
        slot.spawn(&spec),
        Err(SandboxError::ChildSetup { .. })
    ));
    assert_slot_works(&slot);
}
