//! `executor serve` as a real process over Redis (fresh key prefix, own ports and slots), and
//! the HTTP calls the suites make. Shared by the `e2e` and `languages` test binaries.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const TOKEN: &str = "test-token";
pub const APP_ID: &str = "test";
pub const APP_KEY: &str = "testkey";
pub const APP_SECRET: &str = "testsecret";
static NEXT: AtomicU32 = AtomicU32::new(0);

/// The repository's shipped manifests.
pub fn shipped_languages_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../languages")
}

/// How to start a server.
pub struct Options<'a> {
    pub languages: &'a Path,
    /// First slot number; the server uses it and the next one. Test binaries run one after
    /// another, but each picks its own range (e2e 100+, languages 300+) all the same.
    pub first_slot: u32,
    pub blobs: bool,
    pub start_wait_ms: u32,
    pub env: Vec<(&'static str, String)>,
}

pub struct Server {
    pub child: Child,
    /// Separate `executor worker` processes (scaled-out mode).
    pub workers: Vec<Child>,
    /// The Redis key prefix of this server.
    pub prefix: String,
    pub base: String,
    pub push_port: u16,
    pub http: reqwest::Client,
    /// Where the server's log (stdout and stderr) goes.
    pub log: PathBuf,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        for w in &mut self.workers {
            let _ = w.kill();
            let _ = w.wait();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A private scratch directory for this process and `what`.
pub fn scratch(what: &str) -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!(
        "executor-languages-{}-{what}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `executor serve` and waits until it is healthy.
pub async fn start(opts: Options<'_>) -> Server {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let (port, push_port) = (free_port(), free_port());
    let dir = scratch("server");
    let log = dir.join("serve.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let prefix = format!(
        "test:{}:{n}:{}:",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let child = Command::new(env!("CARGO_BIN_EXE_executor"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--push-listen", &format!("127.0.0.1:{push_port}")])
        .arg("--languages")
        .arg(opts.languages)
        .args(["--redis-url", &redis_url(), "--redis-prefix", &prefix])
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["--slots", "2", "--first-slot", &opts.first_slot.to_string()])
        .args(["--start-wait-ms", &opts.start_wait_ms.to_string()])
        .env(
            "EXECUTOR_NO_BLOBS",
            if opts.blobs { "false" } else { "true" },
        )
        .envs(opts.env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("EXECUTOR_API_TOKEN", TOKEN)
        .env("ENABLE_CHANNEL_AUTH", "true")
        .env("PUSHER_APP_ID", APP_ID)
        .env("PUSHER_APP_KEY", APP_KEY)
        .env("PUSHER_APP_SECRET", APP_SECRET)
        .env("NO_COLOR", "1")
        .env_remove("S3_ENDPOINT")
        .env_remove("PUSHER_HOST")
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .expect("executor binary");
    let s = Server {
        child,
        workers: Vec::new(),
        prefix,
        base: format!("http://127.0.0.1:{port}"),
        push_port,
        http: reqwest::Client::new(),
        log,
        dir,
    };
    s.wait_healthy().await;
    s
}

/// The scaled-out topology on one host: `executor api` (which also hosts the push server,
/// PUSHER_HOST being unset for it) and `workers` separate `executor worker` processes that
/// publish to it over the Pusher HTTP API, all meeting in Redis.
pub async fn start_split(languages: &Path, first_slot: u32, workers: u32) -> Server {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let (port, push_port) = (free_port(), free_port());
    let dir = scratch("split");
    let log = dir.join("api.log");
    let prefix = format!("split:{}:{n}:", std::process::id());
    let common = |cmd: &mut Command| {
        cmd.arg("--languages")
            .arg(languages)
            .args(["--redis-url", &redis_url(), "--redis-prefix", &prefix])
            .env("PUSHER_APP_ID", APP_ID)
            .env("PUSHER_APP_KEY", APP_KEY)
            .env("PUSHER_APP_SECRET", APP_SECRET)
            .env("NO_COLOR", "1")
            .env_remove("S3_ENDPOINT");
    };
    let mut api = Command::new(env!("CARGO_BIN_EXE_executor"));
    api.args(["api", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--push-listen", &format!("127.0.0.1:{push_port}")])
        .env("EXECUTOR_API_TOKEN", TOKEN)
        .env("ENABLE_CHANNEL_AUTH", "true")
        .env_remove("PUSHER_HOST")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join("api.err")).unwrap());
    common(&mut api);
    let child = api.spawn().expect("executor api");
    let mut procs = Vec::new();
    for i in 0..workers {
        let mut w = Command::new(env!("CARGO_BIN_EXE_executor"));
        w.arg("worker")
            .arg("--data-dir")
            .arg(dir.join(format!("worker-{i}")))
            .args([
                "--slots",
                "1",
                "--first-slot",
                &(first_slot + i).to_string(),
            ])
            .args(["--start-wait-ms", "3000"])
            .env("PUSHER_HOST", "127.0.0.1")
            .env("PUSHER_PORT", push_port.to_string())
            .stdout(std::fs::File::create(dir.join(format!("worker-{i}.log"))).unwrap())
            .stderr(std::fs::File::create(dir.join(format!("worker-{i}.err"))).unwrap());
        common(&mut w);
        procs.push(w.spawn().expect("executor worker"));
    }
    let s = Server {
        child,
        workers: procs,
        prefix,
        base: format!("http://127.0.0.1:{port}"),
        push_port,
        http: reqwest::Client::new(),
        log,
        dir,
    };
    s.wait_healthy().await;
    wait_workers(&s.prefix, workers as usize).await;
    s
}

/// Waits until `n` workers have registered in Redis.
async fn wait_workers(prefix: &str, n: usize) {
    for _ in 0..600 {
        let out = Command::new("redis-cli")
            .arg("-u")
            .arg(redis_url())
            .args(["SCARD", &format!("{prefix}workers")])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<usize>()
            .unwrap_or(0)
            >= n
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{n} workers did not register");
}

impl Server {
    async fn wait_healthy(&self) {
        for _ in 0..600 {
            if let Ok(r) = self.http.get(format!("{}/health", self.base)).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the server did not become healthy; its log:\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    /// The scratch directory holding this server's logs and data.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if !body.is_null() {
            req = req.json(&body);
        }
        let r = req.send().await.unwrap();
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let st = r.status().as_u16();
        (st, r.json().await.unwrap_or(Value::Null))
    }

    /// Submits with collectOutput; returns the job id and its channel.
    pub async fn execute(&self, language: &str, files: Value) -> Result<(String, String), String> {
        let body = json!({"language": language, "files": files, "collectOutput": true});
        let (st, v) = self.post("/v1/execute", body).await;
        if st != 202 {
            return Err(format!("POST /v1/execute answered {st}: {v}"));
        }
        Ok((
            v["jobId"].as_str().unwrap_or_default().to_owned(),
            v["channel"].as_str().unwrap_or_default().to_owned(),
        ))
    }

    pub async fn expect_ok(&self, path: &str, body: Value) -> Result<(), String> {
        let (st, v) = self.post(path, body).await;
        if (200..300).contains(&st) {
            Ok(())
        } else {
            Err(format!("POST {path} answered {st}: {v}"))
        }
    }

    /// Waits for the job to end and returns its collected result.
    pub async fn result(&self, id: &str) -> Result<Value, String> {
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            let (_, v) = self.get(&format!("/v1/jobs/{id}")).await;
            match v["state"].as_str().unwrap_or("") {
                "done" => break,
                "killed" | "error" => return Err(format!("job ended as {v}")),
                _ if Instant::now() > until => return Err(format!("job stuck: {v}")),
                _ => tokio::time::sleep(Duration::from_millis(40)).await,
            }
        }
        match self.get(&format!("/v1/jobs/{id}/output")).await {
            (200, out) => Ok(out),
            (st, v) => Err(format!("GET output answered {st}: {v}")),
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
