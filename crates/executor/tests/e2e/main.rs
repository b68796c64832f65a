//! End to end: `executor serve` as a real process over Redis (fresh key prefix), driven over
//! HTTP like a client; hostile programs included. Each test has its own server and slots.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use sha2::Digest;

#[path = "../common/mod.rs"]
mod common;

use common::serve::{
    redis_url, shipped_languages_dir, start, Options, Server, APP_ID, APP_KEY, APP_SECRET, TOKEN,
};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A server on slots 100+, with the embedded blob store, a short start wait, and collected
/// output kept 4 s so its expiry can be observed.
async fn server() -> Server {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let languages = shipped_languages_dir();
    start(Options {
        languages: &languages,
        first_slot: 100 + n * 2,
        blobs: true,
        start_wait_ms: 3000,
        env: vec![("EXECUTOR_OUTPUT_TTL_SECS", "4".to_string())],
    })
    .await
}

impl Server {
    /// Submits with collectOutput, starts, and returns the job id.
    async fn submit(&self, language: &str, files: Value, limits: Value) -> String {
        let mut body = json!({"language": language, "files": files, "collectOutput": true});
        if !limits.is_null() {
            body["limits"] = limits;
        }
        let (st, v) = self.post("/v1/execute", body).await;
        assert_eq!(st, 202, "{v}");
        let id = v["jobId"].as_str().unwrap().to_owned();
        let (st, _) = self
            .post(&format!("/v1/jobs/{id}/start"), Value::Null)
            .await;
        assert_eq!(st, 202);
        id
    }

    async fn wait_state(&self, id: &str, pred: impl Fn(&str) -> bool) -> Value {
        let until = Instant::now() + Duration::from_secs(90);
        loop {
            let (_, v) = self.get(&format!("/v1/jobs/{id}")).await;
            if pred(v["state"].as_str().unwrap_or("")) {
                return v;
            }
            assert!(Instant::now() < until, "job {id} stuck in {v}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn finished(&self, id: &str) -> (String, Value) {
        let st = self
            .wait_state(id, |s| matches!(s, "done" | "killed" | "error"))
            .await;
        let (code, out) = self.get(&format!("/v1/jobs/{id}/output")).await;
        assert_eq!(code, 200, "{out}");
        (st["state"].as_str().unwrap().to_owned(), out)
    }

    async fn run(
        &self,
        language: &str,
        name: &str,
        source: &str,
        limits: Value,
    ) -> (String, Value) {
        let id = self
            .submit(language, json!([{"name": name, "content": source}]), limits)
            .await;
        self.finished(&id).await
    }
}

fn py(src: &str) -> (&'static str, &'static str, String) {
    ("python", "main.py", src.to_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn hello_errors_and_exit_codes() {
    let s = server().await;
    let (st, r) = s
        .run("py", "main.py", "print('hello, world')", Value::Null)
        .await;
    assert_eq!(st, "done");
    assert_eq!(r["stdout"], "hello, world\n");
    let expiring = s
        .submit(
            "python",
            json!([{"name": "main.py", "content": "print(1)"}]),
            Value::Null,
        )
        .await;
    assert_eq!(r["exitCode"], 0);
    assert_eq!(r["signal"], Value::Null);
    assert!(r.get("compile").is_none(), "no compile step for python");
    let (st, r) = s
        .run(
            "python",
            "main.py",
            "import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)",
            Value::Null,
        )
        .await;
    assert_eq!(
        (st.as_str(), &r["exitCode"], &r["stderr"]),
        ("done", &json!(3), &json!("oops\n"))
    );
    let (_, r) = s
        .run("python", "main.py", "raise ValueError('bad')", Value::Null)
        .await;
    assert_eq!(r["exitCode"], 1);
    assert!(r["stderr"].as_str().unwrap().contains("ValueError: bad"));
    // compiled: success, compile error, crash
    let (_, r) = s
        .run(
            "c",
            "main.c",
            "#include <stdio.h>\nint main(){puts(\"c ok\");return 0;}",
            Value::Null,
        )
        .await;
    assert_eq!(r["stdout"], "c ok\n");
    assert_eq!(r["compile"]["exitCode"], 0);
    let (st, r) = s
        .run(
            "c",
            "main.c",
            "int main(){ return undefined_thing; }",
            Value::Null,
        )
        .await;
    assert_eq!(st, "done");
    assert_ne!(r["compile"]["exitCode"], 0);
    assert_eq!(
        r["exitCode"], r["compile"]["exitCode"],
        "exitCode reflects the compile failure"
    );
    assert!(r["compile"]["output"]
        .as_str()
        .unwrap()
        .contains("undefined_thing"));
    assert_eq!(
        (r["stdout"].as_str(), r["stderr"].as_str()),
        (Some(""), Some(""))
    );
    let (_, r) = s
        .run(
            "c",
            "main.c",
            "int main(){ int *p = 0; return *p; }",
            Value::Null,
        )
        .await;
    assert_eq!(
        (r["exitCode"].clone(), r["signal"].clone()),
        (Value::Null, json!("SIGSEGV"))
    );
    // collected output expires (EXECUTOR_OUTPUT_TTL_SECS=4 here; 24 h by default)
    let (code, _) = s.get(&format!("/v1/jobs/{expiring}/output")).await;
    assert_eq!(code, 200);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (code, v) = s.get(&format!("/v1/jobs/{expiring}/output")).await;
    assert_eq!(code, 404, "{v}");
    assert!(v["error"].as_str().unwrap().contains("expired"), "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_round_trip_close_and_kill() {
    let s = server().await;
    let (lang, name, src) = py("import sys\nname = input('name? ')\nprint('hi', name)\nrest = sys.stdin.read()\nprint('rest', len(rest))");
    let id = s
        .submit(lang, json!([{"name": name, "content": src}]), Value::Null)
        .await;
    s.wait_state(&id, |st| st == "running").await;
    let (st, _) = s
        .post(&format!("/v1/jobs/{id}/stdin"), json!({"chunk": "bob\n"}))
        .await;
    assert_eq!(st, 200);
    let (st, _) = s
        .post(&format!("/v1/jobs/{id}/stdin"), json!({"chunk": "abc"}))
        .await;
    assert_eq!(st, 200);
    let (st, _) = s
        .post(&format!("/v1/jobs/{id}/stdin/close"), Value::Null)
        .await;
    assert_eq!(st, 200);
    let (state, r) = s.finished(&id).await;
    assert_eq!(state, "done");
    assert_eq!(r["stdout"], "name? hi bob\nrest 3\n");
    // stdin sent before the job even starts is not lost
    let (st, v) = s.post("/v1/execute", json!({"language": "python", "collectOutput": true, "files": [{"name": "main.py", "content": "print(input()[::-1])"}]})).await;
    assert_eq!(st, 202);
    let id = v["jobId"].as_str().unwrap();
    s.post(&format!("/v1/jobs/{id}/stdin"), json!({"chunk": "early\n"}))
        .await;
    s.post(&format!("/v1/jobs/{id}/start"), Value::Null).await;
    let (_, r) = s.finished(id).await;
    assert_eq!(r["stdout"], "ylrae\n");
    // kill mid-run
    let id = s.submit("python", json!([{"name": "main.py", "content": "import time\nprint('up', flush=True)\ntime.sleep(60)"}]), Value::Null).await;
    s.wait_state(&id, |st| st == "running").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (st, _) = s.post(&format!("/v1/jobs/{id}/kill"), Value::Null).await;
    assert_eq!(st, 200);
    let (state, r) = s.finished(&id).await;
    assert_eq!(state, "killed");
    assert_eq!(r["signal"], "SIGKILL");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_limit_has_its_own_outcome() {
    let s = server().await;
    let (_, r) = s
        .run(
            "python",
            "main.py",
            "import time\ntime.sleep(30)",
            json!({"wallTimeMs": 1000, "idleMs": 20000}),
        )
        .await;
    assert_eq!(
        (r["timedOut"].clone(), r["limitExceeded"].clone()),
        (json!(true), json!("wallTime"))
    );
    let (_, r) = s
        .run(
            "python",
            "main.py",
            "import time\nprint('x', flush=True)\ntime.sleep(30)",
            json!({"idleMs": 700}),
        )
        .await;
    assert_eq!(
        (
            r["idleTimedOut"].clone(),
            r["timedOut"].clone(),
            r["limitExceeded"].clone()
        ),
        (json!(true), json!(false), json!("idle"))
    );
    let (_, r) = s
        .run(
            "python",
            "main.py",
            "while True: pass",
            json!({"cpuMs": 500, "wallTimeMs": 20000}),
        )
        .await;
    assert_eq!(r["limitExceeded"], "cpu");
    let (_, r) = s
        .run(
            "python",
            "main.py",
            "x = bytearray(400 * 1024 * 1024)\nprint(len(x))",
            json!({"memoryMb": 64}),
        )
        .await;
    assert_eq!(
        (r["signal"].clone(), r["limitExceeded"].clone()),
        (json!("SIGKILL"), json!("memory")),
        "{r}"
    );
    let (_, r) = s
        .run(
            "python",
            "main.py",
            "while True: print('y' * 100)",
            json!({"outputKb": 8}),
        )
        .await;
    assert_eq!(
        (r["truncated"].clone(), r["limitExceeded"].clone()),
        (json!(true), json!("output"))
    );
    assert!(r["stdout"].as_str().unwrap().len() <= 8 * 1024);
    let (_, r) = s
        .run(
            "bash",
            "main.sh",
            "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived",
            json!({"pids": 16, "wallTimeMs": 5000}),
        )
        .await;
    assert_eq!(r["limitExceeded"], "pids", "{r}");
    // and the worker is healthy afterwards
    let (_, r) = s
        .run("python", "main.py", "print('still fine')", Value::Null)
        .await;
    assert_eq!(r["stdout"], "still fine\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_programs_are_contained() {
    let s = server().await;
    let probe = r#"
import os, socket
def tryit(f):
    try:
        return repr(f())
    except Exception as e:
        return 'ERR ' + type(e).__name__
print('redis', tryit(lambda: socket.create_connection(('127.0.0.1', 6379), timeout=2)))
print('net', tryit(lambda: socket.create_connection(('1.1.1.1', 80), timeout=2)))
print('shadow', tryit(lambda: open('/etc/shadow').read()))
print('environ', tryit(lambda: open('/proc/1/environ', 'rb').read().count(b'EXECUTOR')))
print('pids', sorted(int(p) for p in os.listdir('/proc') if p.isdigit())[:3])
print('uid', os.getuid())
print('root', sorted(os.listdir('/')))
"#;
    let (_, r) = s.run("python", "main.py", probe, Value::Null).await;
    let out = r["stdout"].as_str().unwrap();
    assert!(out.contains("redis ERR"), "{out}");
    assert!(out.contains("net ERR"), "{out}");
    assert!(out.contains("shadow ERR"), "{out}");
    assert!(
        out.contains("environ 0") || out.contains("environ ERR"),
        "{out}"
    );
    assert!(out.contains("pids [1, "), "{out}");
    assert!(out.contains("uid 1000"), "{out}");
    assert!(!out.contains("'root'") && !out.contains("'home'"), "{out}");
    // leftovers do not reach the next job in the same slot
    let (_, _) = s
        .run(
            "bash",
            "main.sh",
            "echo secret > /workspace/leak; echo secret > /tmp/leak; (sleep 100 &) ; disown",
            Value::Null,
        )
        .await;
    let (_, r) = s
        .run(
            "bash",
            "main.sh",
            "ls /workspace /tmp; ps -e -o comm= | grep -c sleep || true",
            Value::Null,
        )
        .await;
    let out = r["stdout"].as_str().unwrap();
    assert!(!out.contains("leak"), "{out}");
    assert!(out.trim_end().ends_with('0'), "{out}");
    // symlink and FIFO tricks in artifacts are not followed
    let (_, r) = s.run("bash", "main.sh", "mkdir -p artifacts; ln -s /etc/passwd artifacts/passwd; mkfifo artifacts/fifo; echo ok > artifacts/real.txt", Value::Null).await;
    let names: Vec<&str> = r["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["real.txt"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_path_traversal_injected_into_the_queue_ends_in_error() {
    let s = server().await;
    let id = format!("00000000-0000-4000-8000-{:012x}", std::process::id());
    let spec = json!({"jobId": id, "language": "python", "version": "3.11.2", "collectOutput": true, "createdAtMs": 1,
        "files": [{"name": "../../etc/evil", "content": "x"}],
        "limits": {"wallTimeMs":1000,"idleMs":1000,"cpuMs":1000,"memoryMb":64,"pids":8,"outputKb":8,"maxArtifacts":0,"maxArtifactBytes":0}});
    let status = json!({"jobId": id, "channel": format!("private-run-{id}"), "language": "python", "version": "3.11.2", "state": "queued", "updatedAtMs": 1});
    let url = redis_url();
    let p = &s.prefix;
    for args in [
        vec![
            "SET".to_string(),
            format!("{p}job:{id}:spec"),
            spec.to_string(),
        ],
        vec![
            "SET".to_string(),
            format!("{p}job:{id}:status"),
            status.to_string(),
        ],
        vec!["SET".to_string(), format!("{p}start:{id}"), "1".into()],
        vec!["RPUSH".to_string(), format!("{p}jobs:queue"), id.clone()],
    ] {
        let out = Command::new("redis-cli")
            .arg("-u")
            .arg(&url)
            .args(&args)
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let st = s
        .wait_state(&id, |st| matches!(st, "done" | "killed" | "error"))
        .await;
    assert_eq!(st["state"], "error");
    assert!(st["reason"].as_str().unwrap().contains("`..`"), "{st}");
    assert!(!std::path::Path::new("/etc/evil").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn blob_upload_once_then_artifact_download() {
    let s = server().await;
    let csv = "x,y\n1,2\n3,4\n".repeat(1000);
    let hash = format!("sha256:{}", hex(&sha2::Sha256::digest(csv.as_bytes())));
    let (st, v) = s
        .post("/v1/blobs/check", json!({"hashes": [hash, hash]}))
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["missing"].as_array().unwrap().len(),
        1,
        "duplicates answered once"
    );
    let url = v["missing"][0]["uploadUrl"].as_str().unwrap();
    let checksum =
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(csv.as_bytes()));
    let put = s
        .http
        .put(url)
        .header("x-amz-checksum-sha256", &checksum)
        .body(csv.clone())
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.text().await.unwrap());
    let (st, v) = s
        .post("/v1/blobs/finalize", json!({"hashes": [hash]}))
        .await;
    assert_eq!((st, v), (200, json!({"finalized": [hash]})));
    let (_, v) = s.post("/v1/blobs/check", json!({"hashes": [hash]})).await;
    assert_eq!(v["present"], json!([hash]), "second upload skipped");
    let png = r#"
import zlib, struct
rows = open('data.csv').read().strip().split('\n')[1:]
w, h = 4, 4
raw = b''.join(b'\x00' + bytes([len(rows) % 256, 0, 0]) * w for _ in range(h))
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
img = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
open('artifacts/plot.png', 'wb').write(img)
print(len(rows))
"#;
    let id = s
        .submit(
            "python",
            json!([{"name": "main.py", "content": png}, {"name": "data.csv", "ref": hash}]),
            Value::Null,
        )
        .await;
    let (state, r) = s.finished(&id).await;
    assert_eq!(state, "done", "{r}");
    assert_eq!(r["stdout"], "2999\n");
    let a = &r["artifacts"][0];
    assert_eq!(
        (a["name"].as_str(), a["mimeType"].as_str()),
        (Some("plot.png"), Some("image/png"))
    );
    let bytes = s
        .http
        .get(a["url"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(a["bytes"].as_u64().unwrap(), bytes.len() as u64);
    // a missing ref ends the job `error` with a clear reason
    let missing = format!("sha256:{}", "e".repeat(64));
    let id = s
        .submit(
            "python",
            json!([{"name": "main.py", "content": "print(1)"}, {"name": "d", "ref": missing}]),
            Value::Null,
        )
        .await;
    let st = s
        .wait_state(&id, |st| matches!(st, "done" | "killed" | "error"))
        .await;
    assert_eq!(st["state"], "error");
    assert!(
        st["reason"].as_str().unwrap().contains(&missing[7..]),
        "{st}"
    );
}

/// The official pusher-js client receives every event of a real job, in `seq` order, after
/// authorizing through /v1/channel-auth and the start handshake.
#[tokio::test(flavor = "multi_thread")]
async fn pusher_js_receives_every_event_in_order() {
    let s = server().await;
    pusher_js_job(&s, 3000);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// SIGTERM: a running job finishes, a job waiting for its start goes back to the queue, and
/// the process exits 0 — nothing accepted is lost.
#[tokio::test(flavor = "multi_thread")]
async fn graceful_shutdown_loses_no_job() {
    let mut s = server().await;
    let running = s
        .submit(
            "bash",
            json!([{"name": "main.sh", "content": "sleep 1; echo finished"}]),
            Value::Null,
        )
        .await;
    s.wait_state(&running, |st| st == "running").await;
    let (st, v) = s
        .post(
            "/v1/execute",
            json!({"language": "bash", "files": [{"name": "main.sh", "content": "echo later"}]}),
        )
        .await;
    assert_eq!(st, 202);
    let waiting = v["jobId"].as_str().unwrap().to_owned();
    s.wait_state(&waiting, |st| st == "starting").await;
    let pid = s.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = tokio::task::block_in_place(|| s.child.wait()).unwrap();
    assert!(status.success(), "exit status {status:?}");
    let get = |k: String| {
        let out = Command::new("redis-cli")
            .arg("-u")
            .arg(redis_url())
            .args(["GET", &k])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let st: Value =
        serde_json::from_str(&get(format!("{}job:{running}:status", s.prefix))).unwrap();
    assert_eq!(st["state"], "done");
    let st: Value =
        serde_json::from_str(&get(format!("{}job:{waiting}:status", s.prefix))).unwrap();
    assert_eq!(st["state"], "queued");
    let out = Command::new("redis-cli")
        .arg("-u")
        .arg(redis_url())
        .args(["LRANGE", &format!("{}jobs:queue", s.prefix), "0", "-1"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), waiting);
}

fn vm_hwm_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

/// A large blob flows from the store into the workspace without the server holding it in memory.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_blob_is_streamed_into_the_workspace() {
    let s = server().await;
    let data: Vec<u8> = (0..96u32 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let digest = sha2::Sha256::digest(&data);
    let hash = format!("sha256:{}", hex(&digest));
    let (_, v) = s.post("/v1/blobs/check", json!({"hashes": [hash]})).await;
    let url = v["missing"][0]["uploadUrl"].as_str().unwrap().to_owned();
    let checksum = base64::engine::general_purpose::STANDARD.encode(digest);
    let put = s
        .http
        .put(url)
        .header("x-amz-checksum-sha256", checksum)
        .body(data)
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success());
    s.post("/v1/blobs/finalize", json!({"hashes": [hash]}))
        .await;
    let before = vm_hwm_kb(s.child.id());
    let id = s
        .submit(
            "bash",
            json!([{"name": "main.sh", "content": "wc -c < big.bin; sha256sum big.bin | cut -c1-16"}, {"name": "big.bin", "ref": hash}]),
            json!({"memoryMb": 64}),
        )
        .await;
    let (state, r) = s.finished(&id).await;
    assert_eq!(state, "done", "{r}");
    assert_eq!(
        r["stdout"],
        format!("{}\n{}\n", 96 * 1024 * 1024, &hash[7..23])
    );
    let growth_mb = (vm_hwm_kb(s.child.id()).saturating_sub(before)) / 1024;
    assert!(
        growth_mb < 32,
        "the server's peak memory grew by {growth_mb} MiB for a 96 MiB blob"
    );
}

/// `executor run`: the command-line client prints the output and leaves with the program's
/// exit code; a refused submission is explained.
#[tokio::test(flavor = "multi_thread")]
async fn the_run_command_prints_output_and_exit_code() {
    let s = server().await;
    let dir = common::serve::scratch("run-cli");
    let src = dir.join("sum.py");
    std::fs::write(
        &src,
        "import sys\nprint('sum', sum(int(x) for x in sys.stdin.read().split()))\nsys.exit(4)\n",
    )
    .unwrap();
    let cli = |args: &[&str], stdin: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_executor"))
            .arg("run")
            .args(args)
            .env("EXECUTOR_API_URL", &s.base)
            .env("EXECUTOR_API_TOKEN", TOKEN)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let src = src.to_str().unwrap().to_owned();
    let out = tokio::task::block_in_place(|| cli(&["--stdin", &src], "1 2 3\n"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 6\n");
    assert_eq!(out.status.code(), Some(4));
    let out = tokio::task::block_in_place(|| cli(&["-l", "cobol", &src], ""));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown language \"cobol\""));
}

/// Scaled out on one host: `executor api` plus two `executor worker` processes over Redis, the
/// workers publishing through the Pusher HTTP API (the path used with Sockudo or Pusher). Jobs
/// run on both workers, and pusher-js receives a job's every event in order.
#[tokio::test(flavor = "multi_thread")]
async fn scaled_out_api_and_workers_over_redis_and_the_http_push_path() {
    let languages = shipped_languages_dir();
    let s = common::serve::start_split(&languages, 140, 2).await;
    let mut ids = Vec::new();
    for i in 0..4 {
        let src = format!("import time\ntime.sleep(0.5)\nprint('job {i}')");
        ids.push(
            s.submit(
                "python",
                json!([{"name": "main.py", "content": src}]),
                Value::Null,
            )
            .await,
        );
    }
    for (i, id) in ids.iter().enumerate() {
        let (state, r) = s.finished(id).await;
        assert_eq!(
            (state.as_str(), r["stdout"].as_str()),
            ("done", Some(format!("job {i}\n").as_str()))
        );
    }
    // Both workers took part.
    for i in 0..2 {
        let log = std::fs::read_to_string(s.dir().join(format!("worker-{i}.log")))
            .unwrap_or_default()
            + &std::fs::read_to_string(s.dir().join(format!("worker-{i}.err"))).unwrap_or_default();
        assert!(log.contains("job ended"), "worker {i} ran no job:\n{log}");
    }
    pusher_js_job(&s, 2000);
}

/// Runs `tests/node/e2e.mjs` in api mode against `s`: pusher-js subscribes through
/// `/v1/channel-auth`, calls start, and checks every event of a job printing `lines` lines
/// arrives in `seq` order, `stage{queued}` first and `result` last.
fn pusher_js_job(s: &Server, lines: u32) {
    let node_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/node");
    if !std::path::Path::new(node_dir)
        .join("node_modules/pusher-js")
        .exists()
    {
        let st = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(node_dir)
            .status()
            .unwrap();
        assert!(st.success(), "npm ci in tests/node");
    }
    let out = Command::new("node")
        .arg("e2e.mjs")
        .current_dir(node_dir)
        .env("MODE", "api")
        .env("EXECUTOR_API_URL", &s.base)
        .env("EXECUTOR_API_TOKEN", TOKEN)
        .env("PUSHER_HOST", "127.0.0.1")
        .env("PUSHER_PORT", s.push_port.to_string())
        .env("PUSHER_TLS", "false")
        .env("PUSHER_KEY", APP_KEY)
        .env("PUSHER_APP_ID", APP_ID)
        .env("PUSHER_SECRET", APP_SECRET)
        .env("LINES", lines.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node e2e failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["status"], "done", "{summary}");
    assert_eq!(summary["stages"], json!(["queued", "running"]), "{summary}");
}
