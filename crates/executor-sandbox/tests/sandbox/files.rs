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

#[test]
fn create_file_streams_in_and_refuses_planted_entries() {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let slot = slot();
    let r = run(
        &slot,
        &sh(
            "ln -s /tmp/x planted-link && ln -s /etc link-dir && mkfifo planted-fifo && \
             echo old > existing && mkdir dir",
        ),
    );
    assert_eq!(r.outcome.exit_code, Some(0), "{}", r.stderr);
    for bad in [
        "planted-link", // a dangling symlink: O_EXCL, nothing created at its target
        "planted-fifo", // would block an O_WRONLY open
        "existing",     // never truncated
        "dir",
        "link-dir/escape",
        "../escape",
        "a/../../escape",
        "/etc/escape",
        "",
    ] {
        assert!(slot.create_file(bad, 0o644).is_err(), "{bad:?} was created");
    }
    assert!(!std::path::Path::new("/escape").exists());
    assert!(!std::path::Path::new("/etc/escape").exists());
    assert_eq!(slot.read_file("existing", 100).unwrap(), b"old\n");

    // Streamed in chunks (never whole in memory), setuid bits dropped, owned by the sandbox.
    let mut f = slot.create_file("blobs/deep/input.bin", 0o4755).unwrap();
    let chunk = vec![b'z'; 1 << 20];
    for _ in 0..8 {
        f.write_all(&chunk).unwrap();
    }
    drop(f);
    let meta = std::fs::metadata(slot.workspace().join("blobs/deep/input.bin")).unwrap();
    assert_eq!(meta.uid(), slot.config().host_uid);
    assert_eq!(meta.mode() & 0o7777, 0o755);
    assert!(slot.create_file("blobs/deep/input.bin", 0o644).is_err());
    let r = run(
        &slot,
        &sh(
            "stat -c '%u %a' blobs && stat -c '%u %a %s' blobs/deep/input.bin && \
             echo more >> blobs/deep/input.bin",
        ),
    );
    assert_eq!(r.stdout, "1000 755\n1000 755 8388608\n", "{}", r.stderr);
    assert_eq!(r.outcome.exit_code, Some(0));
}

#[test]
fn open_file_streams_out_regular_files_only() {
    use std::io::Read;
    let slot = slot();
    let r = run(
        &slot,
        &sh(
            "mkdir -p artifacts && head -c 3000000 /dev/zero > artifacts/big && \
             ln -s /etc/passwd artifacts/link && ln -s /etc artifacts/etc && \
             mkfifo artifacts/fifo && ln -s .. artifacts/up",
        ),
    );
    assert_eq!(r.outcome.exit_code, Some(0), "{}", r.stderr);
    let (f, size) = slot.open_file("artifacts/big").unwrap();
    assert_eq!(size, 3_000_000);
    let mut n = 0u64;
    let mut buf = [0u8; 65536];
    let mut f = f.take(size);
    loop {
        let k = f.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        assert!(buf[..k].iter().all(|&b| b == 0));
        n += k as u64;
    }
    assert_eq!(n, size);
    // A FIFO nobody writes to must not block us; links are not followed.
    for bad in [
        "artifacts/fifo",
        "artifacts/link",
        "artifacts/etc",
        "artifacts",
    ] {
        assert!(
            matches!(slot.open_file(bad), Err(SandboxError::NotRegular(_))),
            "{bad} was opened"
        );
    }
    for bad in [
        "artifacts/etc/passwd",
        "artifacts/up/artifacts/big",
        "../etc/passwd",
        "/etc/passwd",
        "artifacts/../artifacts/big",
    ] {
        assert!(slot.open_file(bad).is_err(), "{bad} was opened");
    }
}
