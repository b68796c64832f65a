//! Every row of every endpoint table of the spec, over real HTTP against a server bound to
//! port 0, once with the in-process broker and once with Redis (fresh key prefix per test).
//! No worker runs here: jobs stay queued, which is what these contract rows need.

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use executor_api::{ApiConfig, AppState, BlobService, Secret};
use executor_broker::jobs::JobStore;
use executor_broker::{Broker, MemoryBroker, RedisBroker};
use executor_languages::{Language, Registry};
use executor_types::{
    BlobCheckResponse, BlobFinalizeResponse, BlobUpload, Manifest, SchemaValidator,
};
use serde_json::{json, Value};

const TOKEN: &str = "test-token-123";

struct Server {
    base: String,
    http: reqwest::Client,
    broker: Arc<dyn Broker>,
}

fn manifest(name: &str, version: &str, aliases: &[&str]) -> Language {
    let m: Manifest = serde_json::from_value(json!({
        "language": name, "version": version, "aliases": aliases, "image": "host", "entrypoint": "main",
        "run": {"command": ["true"]}, "interactive": true,
        "defaultLimits": {"wallTimeMs":10000,"idleMs":10000,"cpuMs":10000,"memoryMb":256,"pids":64,"outputKb":1024,"maxArtifacts":16,"maxArtifactBytes":10485760}
    }))
    .unwrap();
    Language {
        manifest: m,
        version: version.into(),
        dir: Default::default(),
    }
}

struct FakeBlobs;

#[async_trait]
impl BlobService for FakeBlobs {
    async fn check(&self, hashes: Vec<String>) -> anyhow::Result<BlobCheckResponse> {
        Ok(BlobCheckResponse {
            missing: hashes
                .iter()
                .map(|h| BlobUpload {
                    hash: h.clone(),
                    upload_url: format!("http://store/{h}"),
                })
                .collect(),
            present: vec![],
        })
    }
    async fn finalize(&self, hashes: Vec<String>) -> anyhow::Result<BlobFinalizeResponse> {
        Ok(BlobFinalizeResponse { finalized: hashes })
    }
}

async fn start(broker: Arc<dyn Broker>, tweak: impl FnOnce(&mut ApiConfig), blobs: bool) -> Server {
    let mut config = ApiConfig::new(Secret::new(TOKEN));
    config.enable_channel_auth = true;
    tweak(&mut config);
    let languages = Registry::from_languages(vec![
        manifest("python", "3.9.2", &["py", "python3"]),
        manifest("python", "3.10.1", &["py", "python3"]),
        manifest("bash", "5.2.15", &["sh"]),
    ]);
    let state = Arc::new(AppState {
        config,
        jobs: JobStore::new(broker.clone()),
        languages: Arc::new(languages),
        validator: Arc::new(SchemaValidator::new()),
        blobs: if blobs {
            Some(Arc::new(FakeBlobs))
        } else {
            None
        },
        events: None,
        signer: Some(Arc::new(|s: &str, c: &str| format!("key:{s}:{c}"))),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, executor_api::router(state))
            .await
            .unwrap()
    });
    Server {
        base,
        http: reqwest::Client::new(),
        broker,
    }
}

impl Server {
    async fn req(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = self
            .http
            .request(method.parse().unwrap(), format!("{}{}", self.base, path))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let v = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("non-JSON body for {method} {path}: {text:?}"));
        (status, v)
    }

    async fn raw(
        &self,
        method: &str,
        path: &str,
        body: &'static str,
        auth: Option<&str>,
    ) -> (u16, Value) {
        let mut r = self
            .http
            .request(method.parse().unwrap(), format!("{}{}", self.base, path))
            .body(body);
        if let Some(a) = auth {
            r = r.header("Authorization", a);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("non-JSON body: {text:?}")),
        )
    }

    async fn submit(&self) -> String {
        let (s, v) = self.req("POST", "/v1/execute", Some(hello())).await;
        assert_eq!(s, 202, "{v}");
        v["jobId"].as_str().unwrap().to_owned()
    }
}

fn hello() -> Value {
    json!({"language": "python", "files": [{"name": "main.py", "content": "print('hi')"}]})
}

async fn memory() -> Arc<dyn Broker> {
    Arc::new(MemoryBroker::new())
}

async fn redis() -> Arc<dyn Broker> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    Arc::new(
        RedisBroker::connect(&url, &format!("apitest:{}:", uuid::Uuid::new_v4()))
            .await
            .expect("Redis running"),
    )
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod in_process { $( #[tokio::test] async fn $name() { super::$name(super::memory().await).await } )* }
        mod redis { $( #[tokio::test] async fn $name() { super::$name(super::redis().await).await } )* }
    };
}

both!(
    health_and_docs_are_public,
    auth_is_required_on_every_v1_route,
    execute_accepts_and_status_reads_back,
    execute_400_rows,
    execute_413_counts_decoded_bytes,
    execute_429_after_resolution,
    start_records_durable_flag,
    stdin_rows,
    stdin_close_kill_and_late_rows,
    status_alias_and_404_text,
    output_404_rows,
    languages_lists_manifests,
    blob_routes_501_without_store,
    blob_routes_with_store,
    channel_auth_rows,
    unknown_routes_methods_and_bad_json_are_json_errors,
);

async fn health_and_docs_are_public(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, false).await;
    let (st, v) = s.raw("GET", "/health", "", None).await;
    assert_eq!((st, v), (200, json!({"status": "ok"})));
    let (st, v) = s.raw("GET", "/openapi.json", "", None).await;
    assert_eq!(st, 200);
    assert_eq!(v["openapi"], "3.1.0");
    assert!(v["components"]["schemas"]["ExecuteRequest"].is_object());
    assert_eq!(
        v["paths"]["/v1/execute"]["post"]["requestBody"]["content"]["application/json"]["schema"]
            ["$ref"],
        "#/components/schemas/ExecuteRequest"
    );
    let (st, v) = s.raw("GET", "/schema.json", "", None).await;
    assert_eq!(st, 200);
    assert!(v["$defs"]["RunResult"].is_object());
}

async fn auth_is_required_on_every_v1_route(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, true).await;
    let id = uuid::Uuid::new_v4();
    let routes = [
        ("POST", "/v1/execute".to_string()),
        ("POST", format!("/v1/jobs/{id}/start")),
        ("POST", format!("/v1/jobs/{id}/stdin")),
        ("POST", format!("/v1/jobs/{id}/stdin/close")),
        ("POST", format!("/v1/jobs/{id}/kill")),
        ("GET", format!("/v1/jobs/{id}")),
        ("GET", format!("/v1/jobs/{id}/status")),
        ("GET", format!("/v1/jobs/{id}/output")),
        ("GET", "/v1/languages".to_string()),
        ("POST", "/v1/blobs/check".to_string()),
        ("POST", "/v1/blobs/finalize".to_string()),
        ("POST", "/v1/channel-auth".to_string()),
    ];
    for (m, p) in routes {
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("Bearer test-token-12"),
            Some("Basic test-token-123"),
            Some(TOKEN),
        ] {
            let path: &'static str = Box::leak(p.clone().into_boxed_str());
            let (st, v) = s.raw(m, path, "{}", auth).await;
            assert_eq!(
                (st, v),
                (401, json!({"error": "unauthorized"})),
                "{m} {p} with {auth:?}"
            );
        }
    }
}

async fn execute_accepts_and_status_reads_back(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, false).await;
    let (st, v) = s.req("POST", "/v1/execute", Some(hello())).await;
    assert_eq!(st, 202);
    let id = v["jobId"].as_str().unwrap();
    uuid::Uuid::parse_str(id).unwrap();
    assert_eq!(
        v,
        json!({"jobId": id, "channel": format!("private-run-{id}"), "status": "queued"})
    );
    let (st, v) = s.req("GET", &format!("/v1/jobs/{id}"), None).await;
    assert_eq!(st, 200);
    assert_eq!(v["jobId"], id);
    assert_eq!(v["channel"], format!("private-run-{id}"));
    assert_eq!(v["state"], "queued");
    assert_eq!(v["language"], "python");
    assert_eq!(
        v["version"], "3.10.1",
        "most recent version, compared numerically"
    );
    assert!(v["updatedAtMs"].as_u64().unwrap() > 1_600_000_000_000);
    // enqueued under the spec's key with the spec record
    assert_eq!(s.broker.lrange("jobs:queue", 0, -1).await.unwrap(), [id]);
    let spec: Value = serde_json::from_str(
        &s.broker
            .get(&format!("job:{id}:spec"))
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(spec["limits"]["wallTimeMs"], 10000);
    // exact version and alias; limits override within maxima; base64 and ref files
    let body = json!({"language": "py", "version": "3.9.2", "collectOutput": true, "limits": {"wallTimeMs": 2000},
        "files": [{"name": "src/main.py", "content": base64::engine::general_purpose::STANDARD.encode("print(1)"), "encoding": "base64"},
                  {"name": "data.csv", "ref": format!("sha256:{}", "0".repeat(64))}]});
    let (st, v) = s.req("POST", "/v1/execute", Some(body)).await;
    assert_eq!(st, 202, "{v}");
    let (_, v) = s
        .req(
            "GET",
            &format!("/v1/jobs/{}", v["jobId"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(v["version"], "3.9.2");
}

async fn execute_400_rows(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, false).await;
    let h = format!("sha256:{}", "a".repeat(64));
    let cases: Vec<(Value, &str)> = vec![
        (json!({"files": [{"name": "a", "content": "x"}]}), "/"),
        (json!({"language": "python"}), "/"),
        (json!({"language": "python", "files": []}), "/files"),
        (
            json!({"language": "python", "files": [{"name": "a", "content": 5}]}),
            "/files/0/content",
        ),
        (
            json!({"language": "python", "files": [{"name": "a", "content": "x"}], "bogus": 1}),
            "/",
        ),
        (
            json!({"language": "cobol", "files": [{"name": "a", "content": "x"}]}),
            "/language",
        ),
        (
            json!({"language": "python", "version": "2.7", "files": [{"name": "a", "content": "x"}]}),
            "/version",
        ),
        (
            json!({"language": "python", "files": [{"name": "a", "content": "%%%", "encoding": "base64"}]}),
            "/files/0/content",
        ),
        (
            json!({"language": "python", "files": [{"name": "/etc/passwd", "content": "x"}]}),
            "/files/0/name",
        ),
        (
            json!({"language": "python", "files": [{"name": "a/../../x", "content": "x"}]}),
            "/files/0/name",
        ),
        (
            json!({"language": "python", "files": [{"name": "", "content": "x"}]}),
            "/files/0/name",
        ),
        (
            json!({"language": "python", "files": [{"name": "a".repeat(256), "content": "x"}]}),
            "/files/0/name",
        ),
        (
            json!({"language": "python", "files": [{"name": "a", "content": "x", "ref": h}]}),
            "/files/0",
        ),
        (
            json!({"language": "python", "files": [{"name": "a"}]}),
            "/files/0",
        ),
        (
            json!({"language": "python", "files": [{"name": "a", "ref": "sha256:ABC"}]}),
            "/files/0/ref",
        ),
        (
            json!({"language": "python", "files": [{"name": "a", "ref": format!("md5:{}", "a".repeat(32))}]}),
            "/files/0/ref",
        ),
        (
            json!({"language": "python", "files": [{"name": "a", "content": "x"}], "limits": {"memoryMb": 1_000_000}}),
            "/limits/memoryMb",
        ),
        (
            json!({"language": "python", "files": [{"name": "a", "content": "x"}], "limits": {"cpuMs": -1}}),
            "/limits/cpuMs",
        ),
        (
            json!({"language": "python", "files": [{"name": "a", "content": "x"}, {"name": "a", "content": "y"}]}),
            "/files/1/name",
        ),
    ];
    for (body, path) in cases {
        let (st, v) = s.req("POST", "/v1/execute", Some(body.clone())).await;
        assert_eq!(st, 400, "{body} -> {v}");
        assert!(v["error"].is_string());
        let details = v["details"].as_array().expect("details array");
        assert!(
            details
                .iter()
                .any(|d| d["path"] == path && d["message"].is_string()),
            "{body}: expected a detail at {path}, got {v}"
        );
    }
    assert_eq!(
        s.broker.llen("jobs:queue").await.unwrap(),
        0,
        "nothing invalid was enqueued"
    );
}

async fn execute_413_counts_decoded_bytes(b: Arc<dyn Broker>) {
    let s = start(b, |c| c.max_files_bytes = 1000, false).await;
    // 900 decoded bytes are 1200 base64 characters: accepted, since the decoded size counts.
    let ok = base64::engine::general_purpose::STANDARD.encode([7u8; 900]);
    let (st, _) = s.req("POST", "/v1/execute", Some(json!({"language": "python", "files": [{"name": "a", "content": ok, "encoding": "base64"}]}))).await;
    assert_eq!(st, 202);
    let (st, v) = s
        .req(
            "POST",
            "/v1/execute",
            Some(json!({"language": "python", "files": [
        {"name": "a", "content": "x".repeat(600)}, {"name": "b", "content": "y".repeat(401)}]})),
        )
        .await;
    assert_eq!(st, 413);
    assert!(v["error"].as_str().unwrap().contains("MAX_FILES_BYTES"));
    assert!(v.get("details").is_none());
    let big = base64::engine::general_purpose::STANDARD.encode([7u8; 1001]);
    let (st, _) = s.req("POST", "/v1/execute", Some(json!({"language": "python", "files": [{"name": "a", "content": big, "encoding": "base64"}]}))).await;
    assert_eq!(st, 413);
    // A body far over any limit is 413 JSON too, not a dropped connection.
    let (st, v) = s.req("POST", "/v1/execute", Some(json!({"language": "python", "files": [{"name": "a", "content": "z".repeat(3_000_000)}]}))).await;
    assert_eq!(st, 413, "{v}");
}

async fn execute_429_after_resolution(b: Arc<dyn Broker>) {
    let s = start(b, |c| c.max_queue_depth = 2, false).await;
    s.submit().await;
    s.submit().await;
    let (st, v) = s.req("POST", "/v1/execute", Some(hello())).await;
    assert_eq!(st, 429);
    assert!(v["retryAfterMs"].as_u64().unwrap() > 0);
    assert!(v["error"].is_string());
    // an invalid body still gets 400, not 429
    let (st, _) = s
        .req(
            "POST",
            "/v1/execute",
            Some(json!({"language": "cobol", "files": [{"name": "a", "content": "x"}]})),
        )
        .await;
    assert_eq!(st, 400);
    assert_eq!(s.broker.llen("jobs:queue").await.unwrap(), 2);
}

async fn start_records_durable_flag(b: Arc<dyn Broker>) {
    let s = start(b.clone(), |_| {}, false).await;
    let id = s.submit().await;
    let mut sub = b.subscribe(&[format!("ctrl:{id}")]).await.unwrap();
    let (st, v) = s.req("POST", &format!("/v1/jobs/{id}/start"), None).await;
    assert_eq!((st, v), (202, json!({"ok": true})));
    assert_eq!(
        b.get(&format!("start:{id}")).await.unwrap().as_deref(),
        Some("1")
    );
    let ttl = b
        .ttl(&format!("start:{id}"))
        .await
        .unwrap()
        .expect("start flag expires");
    assert!(ttl <= std::time::Duration::from_secs(600));
    let m = tokio::time::timeout(std::time::Duration::from_secs(5), sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&m.payload).unwrap(),
        json!({"type": "start"})
    );
    let (st, v) = s
        .req(
            "POST",
            &format!("/v1/jobs/{}/start", uuid::Uuid::new_v4()),
            None,
        )
        .await;
    assert_eq!(st, 404);
    assert!(v["error"].as_str().unwrap().starts_with("Job not found: "));
}

async fn stdin_rows(b: Arc<dyn Broker>) {
    let s = start(b.clone(), |_| {}, false).await;
    let id = s.submit().await;
    let mut sub = b.subscribe(&[format!("stdin:{id}")]).await.unwrap();
    let (st, v) = s
        .req(
            "POST",
            &format!("/v1/jobs/{id}/stdin"),
            Some(json!({"chunk": "hello\n"})),
        )
        .await;
    assert_eq!((st, v), (200, json!({"ok": true})));
    let m = tokio::time::timeout(std::time::Duration::from_secs(5), sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&m.payload).unwrap(),
        json!({"chunk": "hello\n"})
    );
    // recorded durably too, for a worker that subscribes later
    assert_eq!(
        b.lrange(&format!("job:{id}:input"), 0, -1)
            .await
            .unwrap()
            .len(),
        1
    );
    for body in [json!({}), json!({"chunk": 5}), json!({"data": "x"})] {
        let (st, v) = s
            .req("POST", &format!("/v1/jobs/{id}/stdin"), Some(body))
            .await;
        assert_eq!(st, 400);
        assert!(v["details"].is_array());
    }
    // pending-byte cap: 64 KiB accepted and not yet consumed
    let big = "x".repeat(40 * 1024);
    let (st, _) = s
        .req(
            "POST",
            &format!("/v1/jobs/{id}/stdin"),
            Some(json!({"chunk": big})),
        )
        .await;
    assert_eq!(st, 200);
    let (st, v) = s
        .req(
            "POST",
            &format!("/v1/jobs/{id}/stdin"),
            Some(json!({"chunk": big})),
        )
        .await;
    assert_eq!(st, 429);
    assert_eq!(v["capBytes"], 65536);
    // frame rate cap: 30 frames per second
    let id2 = s.submit().await;
    let mut limited = None;
    for _ in 0..70 {
        let (st, v) = s
            .req(
                "POST",
                &format!("/v1/jobs/{id2}/stdin"),
                Some(json!({"chunk": "."})),
            )
            .await;
        if st == 429 {
            limited = Some(v);
            break;
        }
        assert_eq!(st, 200);
    }
    let v = limited.expect("the 30 frames/s cap must trip within 70 quick frames");
    let retry = v["retryAfterMs"].as_u64().unwrap();
    assert!(retry > 0 && retry <= 1000);
    let (st, _) = s
        .req(
            "POST",
            &format!("/v1/jobs/{}/stdin", uuid::Uuid::new_v4()),
            Some(json!({"chunk": "x"})),
        )
        .await;
    assert_eq!(st, 404);
}

async fn stdin_close_kill_and_late_rows(b: Arc<dyn Broker>) {
    let s = start(b.clone(), |_| {}, false).await;
    let id = s.submit().await;
    let mut sub = b.subscribe(&[format!("ctrl:{id}")]).await.unwrap();
    let (st, v) = s
        .req("POST", &format!("/v1/jobs/{id}/stdin/close"), None)
        .await;
    assert_eq!((st, v), (200, json!({"ok": true})));
    let m = tokio::time::timeout(std::time::Duration::from_secs(5), sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&m.payload).unwrap(),
        json!({"type": "stdin_close"})
    );
    let (st, v) = s.req("POST", &format!("/v1/jobs/{id}/kill"), None).await;
    assert_eq!((st, v), (200, json!({"ok": true})));
    let m = tokio::time::timeout(std::time::Duration::from_secs(5), sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&m.payload).unwrap(),
        json!({"type": "kill"})
    );
    // killed while queued: it leaves the queue and ends `killed`
    let (_, v) = s.req("GET", &format!("/v1/jobs/{id}"), None).await;
    assert_eq!(v["state"], "killed");
    assert!(!b.lrange("jobs:queue", 0, -1).await.unwrap().contains(&id));
    // a finished job takes no more input; a second kill is a no-op
    let (st, _) = s
        .req(
            "POST",
            &format!("/v1/jobs/{id}/stdin"),
            Some(json!({"chunk": "x"})),
        )
        .await;
    assert_eq!(st, 409);
    let (st, _) = s.req("POST", &format!("/v1/jobs/{id}/kill"), None).await;
    assert_eq!(st, 200);
    for p in ["stdin/close", "kill"] {
        let (st, _) = s
            .req(
                "POST",
                &format!("/v1/jobs/{}/{p}", uuid::Uuid::new_v4()),
                None,
            )
            .await;
        assert_eq!(st, 404);
    }
}

async fn status_alias_and_404_text(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, false).await;
    let id = s.submit().await;
    let (_, a) = s.req("GET", &format!("/v1/jobs/{id}"), None).await;
    let (st, b2) = s.req("GET", &format!("/v1/jobs/{id}/status"), None).await;
    assert_eq!(st, 200);
    assert_eq!(a, b2);
    let unknown = uuid::Uuid::new_v4();
    for p in [
        format!("/v1/jobs/{unknown}"),
        format!("/v1/jobs/{unknown}/status"),
    ] {
        let (st, v) = s.req("GET", &p, None).await;
        assert_eq!(
            (st, v),
            (404, json!({"error": format!("Job not found: {unknown}")}))
        );
    }
    let (st, v) = s.req("GET", "/v1/jobs/not-a-uuid", None).await;
    assert_eq!(
        (st, v),
        (404, json!({"error": "Job not found: not-a-uuid"}))
    );
}

async fn output_404_rows(b: Arc<dyn Broker>) {
    let s = start(b.clone(), |_| {}, false).await;
    let (st, v) = s
        .req(
            "GET",
            &format!("/v1/jobs/{}/output", uuid::Uuid::new_v4()),
            None,
        )
        .await;
    assert_eq!(st, 404);
    assert!(v["error"].is_string());
    let id = s.submit().await; // collectOutput false
    let (st, v) = s.req("GET", &format!("/v1/jobs/{id}/output"), None).await;
    assert_eq!(st, 404);
    assert!(v["error"].as_str().unwrap().contains("not collected"));
    let (_, v) = s.req("POST", "/v1/execute", Some(json!({"language": "python", "collectOutput": true, "files": [{"name": "a", "content": "x"}]}))).await;
    let id = v["jobId"].as_str().unwrap().to_owned();
    let (st, v) = s.req("GET", &format!("/v1/jobs/{id}/output"), None).await;
    assert_eq!(st, 404, "not ready yet: {v}");
    // stored (as the worker does) → 200 with the RunResult
    let result = json!({"exitCode": 0, "signal": null, "timedOut": false, "idleTimedOut": false, "truncated": false,
        "durationMs": 12, "stdout": "hi\n", "stderr": "", "artifacts": [], "artifactsTruncated": false});
    b.set(
        &format!("job:{id}:output"),
        &result.to_string(),
        Some(std::time::Duration::from_millis(300)),
    )
    .await
    .unwrap();
    let (st, v) = s.req("GET", &format!("/v1/jobs/{id}/output"), None).await;
    assert_eq!((st, v), (200, result));
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let (st, _) = s.req("GET", &format!("/v1/jobs/{id}/output"), None).await;
    assert_eq!(st, 404, "expired output is gone");
}

async fn languages_lists_manifests(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, false).await;
    let (st, v) = s.req("GET", "/v1/languages", None).await;
    assert_eq!(st, 200);
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 3);
    for l in list {
        assert!(
            l["language"].is_string()
                && l["version"].is_string()
                && l["aliases"].is_array()
                && l["interactive"].is_boolean()
        );
    }
    assert!(list
        .iter()
        .any(|l| l["language"] == "bash" && l["aliases"] == json!(["sh"])));
}

async fn blob_routes_501_without_store(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, false).await;
    for p in ["/v1/blobs/check", "/v1/blobs/finalize"] {
        let (st, v) = s
            .req(
                "POST",
                p,
                Some(json!({"hashes": [format!("sha256:{}", "a".repeat(64))]})),
            )
            .await;
        assert_eq!(st, 501);
        assert!(v["error"].is_string());
    }
}

async fn blob_routes_with_store(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, true).await;
    let h = format!("sha256:{}", "b".repeat(64));
    let (st, v) = s
        .req("POST", "/v1/blobs/check", Some(json!({"hashes": [h]})))
        .await;
    assert_eq!(st, 200);
    assert_eq!(v["missing"][0]["hash"], h);
    let (st, v) = s
        .req("POST", "/v1/blobs/finalize", Some(json!({"hashes": [h]})))
        .await;
    assert_eq!((st, v), (200, json!({"finalized": [h]})));
    for p in ["/v1/blobs/check", "/v1/blobs/finalize"] {
        for bad in [
            json!({"hashes": ["sha256:xyz"]}),
            json!({"hashes": [h, "nope"]}),
            json!({"hashes": "x"}),
            json!({}),
        ] {
            let (st, v) = s.req("POST", p, Some(bad.clone())).await;
            assert_eq!(st, 400, "{p} {bad}");
            assert!(
                v["details"].as_array().is_some_and(|d| !d.is_empty()),
                "{v}"
            );
        }
    }
}

async fn channel_auth_rows(b: Arc<dyn Broker>) {
    let s = start(b.clone(), |_| {}, false).await;
    let (st, v) = s
        .req(
            "POST",
            "/v1/channel-auth",
            Some(json!({"socket_id": "1.2", "channel_name": "private-run-abc"})),
        )
        .await;
    assert_eq!((st, v), (200, json!({"auth": "key:1.2:private-run-abc"})));
    // the form encoding pusher-js sends
    let resp = s
        .http
        .post(format!("{}/v1/channel-auth", s.base))
        .bearer_auth(TOKEN)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("socket_id=3.4&channel_name=private-run-x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({"auth": "key:3.4:private-run-x"})
    );
    for body in [
        json!({"socket_id": "1.2"}),
        json!({"channel_name": "private-run-x"}),
        json!({}),
    ] {
        let (st, v) = s.req("POST", "/v1/channel-auth", Some(body)).await;
        assert_eq!(st, 400);
        assert_eq!(
            v["error"],
            "Missing required fields: socket_id, channel_name"
        );
    }
    for ch in [
        "private-foo",
        "presence-run-x",
        "run-x",
        "private-cache-run-x",
    ] {
        let (st, v) = s
            .req(
                "POST",
                "/v1/channel-auth",
                Some(json!({"socket_id": "1.2", "channel_name": ch})),
            )
            .await;
        assert_eq!(
            (st, v),
            (
                403,
                json!({"error": "Only private-run-<jobId> channels can be authorized here"})
            )
        );
    }
    // not registered unless ENABLE_CHANNEL_AUTH
    let s = start(b, |c| c.enable_channel_auth = false, false).await;
    let (st, v) = s
        .req(
            "POST",
            "/v1/channel-auth",
            Some(json!({"socket_id": "1.2", "channel_name": "private-run-x"})),
        )
        .await;
    assert_eq!(st, 404);
    assert!(v["error"].is_string());
}

async fn unknown_routes_methods_and_bad_json_are_json_errors(b: Arc<dyn Broker>) {
    let s = start(b, |_| {}, false).await;
    let (st, v) = s.req("GET", "/v1/nope", None).await;
    assert_eq!(st, 404);
    assert!(v["error"].is_string());
    let (st, v) = s.raw("GET", "/nope", "", None).await;
    assert_eq!(st, 404);
    assert!(v["error"].is_string());
    let (st, v) = s.req("GET", "/v1/execute", None).await;
    assert_eq!(st, 405);
    assert!(v["error"].is_string());
    let (st, v) = s.req("DELETE", "/v1/languages", None).await;
    assert_eq!(st, 405);
    assert!(v["error"].is_string());
    for body in ["{not json", "", "[1,2]", "null", "\"str\""] {
        let (st, v) = s
            .raw("POST", "/v1/execute", body, Some("Bearer test-token-123"))
            .await;
        assert_eq!(st, 400, "{body:?}");
        assert!(v["error"].is_string() && v["details"].is_array());
    }
}
