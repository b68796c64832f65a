//! The worker's file helpers against links, FIFOs and escaping paths the program planted.

use executor_sandbox::SandboxError;

use crate::common::*;

#[test]
fn read_back_refuses_links_fifos_and_escapes() {
    let slot = slot();
    let r = run(
        &slot,
        &sh("mkdir -p artifacts/sub && echo ok > artifacts/ok.txt && echo deep > artifacts/sub/deep.txt && \
             ln -s /etc/passwd artifacts/passwd && ln -s /proc/self/environ artifacts/environ && \
             ln -s /etc artifacts/etcdir && ln -s ../.. artifacts/up && mkfifo artifacts/fifo && \
             (ln /etc/passwd artifacts/hard 2>&1 || true) && (ln /usr/bin/id artifacts/hard2 2>&1 || true)"),
    );
    assert_eq!(r.outcome.exit_code, Some(0), "{}", r.stderr);
    // Hard links across mounts are impossible: the workspace is its own file system.
    assert_eq!(
        r.stdout.matches("Invalid cross-device link").count(),
        2,
        "{}",
        r.stdout
    );

    let listing = slot.list_files("artifacts", 100).unwrap();
    let names: Vec<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(names, ["ok.txt", "sub/deep.txt"]);
    assert!(!listing.truncated);
    assert_eq!(slot.read_file("artifacts/ok.txt", 100).unwrap(), b"ok\n");
    assert_eq!(
        slot.read_file("artifacts/sub/deep.txt", 100).unwrap(),
        b"deep\n"
    );

    for link in [
        "artifacts/passwd",
        "artifacts/environ",
        "artifacts/fifo",
        "artifacts/etcdir",
    ] {
        assert!(
            matches!(
                slot.read_file(link, 1 << 20),
                Err(SandboxError::NotRegular(_))
            ),
            "{link} was read"
        );
    }
    for through in [
        "artifacts/etcdir/passwd",
        "artifacts/up/etc/passwd",
        "../etc/passwd",
        "/etc/passwd",
    ] {
        assert!(
            slot.read_file(through, 1 << 20).is_err(),
            "{through} was read"
        );
    }
    assert!(matches!(
        slot.read_file("artifacts/ok.txt", 2),
        Err(SandboxError::TooLarge {
            size: 3,
            max: 2,
            ..
        })
    ));
    assert!(slot.list_files("artifacts", 1).unwrap().truncated);
    assert!(slot
        .list_files("nothing-here", 10)
        .unwrap()
        .files
        .is_empty());
}

#[test]
fn write_helper_refuses_escapes_and_planted_links() {
    let slot = slot();
    let r = run(
        &slot,
        &sh("ln -s /tmp planted && ln -s /etc/hostname planted-file && mkdir real"),
    );
    assert_eq!(r.outcome.exit_code, Some(0), "{}", r.stderr);
    for bad in [
        "../escape",
        "a/../../escape",
        "/etc/escape",
        "planted/x",
        "planted-file",
        "",
    ] {
        assert!(
            slot.write_file(bad, b"x", 0o644).is_err(),
            "{bad:?} was written"
        );
    }
    assert!(!std::path::Path::new("/escape").exists());
    slot.write_file("real/nested/dir/main.py", b"print(1)\n", 0o644)
        .unwrap();
    let r = run(&slot, &sh("stat -c '%u %a %n' real/nested/dir real/nested/dir/main.py; python3 real/nested/dir/main.py"));
    assert_eq!(
        r.stdout, "1000 755 real/nested/dir\n1000 644 real/nested/dir/main.py\n1\n",
        "{}",
        r.stderr
    );
}
