//! The client helpers (`upload_file` and `scripts/executor-upload.sh`) against a minimal API
//! serving `/v1/blobs/check` and `/v1/blobs/finalize` over `BlobService`, as the real API does.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use executor_blob::{
    upload_file, BlobFinalizeResponse, BlobHash, BlobHashesRequest, BlobService, UploadError,
};
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

use crate::Env;

const TOKEN: &str = "test-token";

struct Api {
    addr: SocketAddr,
    finalizes: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Api {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    service: BlobService,
    finalizes: Arc<AtomicUsize>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = |status: u16, body: String| {
        Ok(Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap())
    };
    if req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {TOKEN}"))
    {
        return reply(401, r#"{"error":"unauthorized"}"#.to_owned());
    }
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let Ok(parsed) = serde_json::from_slice::<BlobHashesRequest>(&body) else {
        return reply(400, r#"{"error":"bad body","details":[]}"#.to_owned());
    };
    let Ok(hashes) = parsed
        .hashes
        .iter()
        .map(|h| BlobHash::parse(h))
        .collect::<Result<Vec<_>, _>>()
    else {
        return reply(400, r#"{"error":"bad hash","details":[]}"#.to_owned());
    };
    match path.as_str() {
        "/v1/blobs/check" => {
            let r = service.check(&hashes).await.unwrap();
            reply(200, serde_json::to_string(&r).unwrap())
        }
        "/v1/blobs/finalize" => {
            finalizes.fetch_add(1, Ordering::SeqCst);
            let finalized = service.finalize(&hashes).await.unwrap();
            let r = BlobFinalizeResponse {
                finalized: finalized.iter().map(ToString::to_string).collect(),
            };
            reply(200, serde_json::to_string(&r).unwrap())
        }
        _ => reply(404, r#"{"error":"not found"}"#.to_owned()),
    }
}

async fn api(env: &Env) -> Api {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = env.service.clone();
    let finalizes = Arc::new(AtomicUsize::new(0));
    let counter = finalizes.clone();
    let task = tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let service = service.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    handle(service.clone(), counter.clone(), req)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Api {
        addr,
        finalizes,
        task,
    }
}

#[tokio::test]
async fn upload_file_uploads_once_then_skips() {
    let env = Env::embedded().await;
    let api = api(&env).await;
    let base = format!("http://{}", api.addr);
    let content: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let path = env.work.path().join("data.bin");
    tokio::fs::write(&path, &content).await.unwrap();

    let r = upload_file(&base, TOKEN, &path).await.unwrap();
    let hash = BlobHash::of_bytes(&content);
    assert_eq!(r, hash.to_string());
    assert_eq!(api.finalizes.load(Ordering::SeqCst), 1);
    let mut out = Vec::new();
    env.store
        .fetch_verified(&hash, &mut out, 1 << 20)
        .await
        .unwrap();
    assert_eq!(out, content);

    // Present now: no second upload, no second finalize.
    assert_eq!(upload_file(&base, TOKEN, &path).await.unwrap(), r);
    assert_eq!(api.finalizes.load(Ordering::SeqCst), 1);

    let err = upload_file(&base, "wrong", &path).await.unwrap_err();
    assert!(
        matches!(err, UploadError::Status { status: 401, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn upload_script_uploads_once_then_skips() {
    let env = Env::embedded().await;
    let api = api(&env).await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/executor-upload.sh"
    );
    let content = b"#!/usr/bin/env python3\nprint('uploaded by curl')\n".repeat(1000);
    let path = env.work.path().join("main.py");
    tokio::fs::write(&path, &content).await.unwrap();
    let run = || {
        tokio::process::Command::new("bash")
            .arg(script)
            .arg(&path)
            .env("EXECUTOR_API_URL", format!("http://{}", api.addr))
            .env("EXECUTOR_API_TOKEN", TOKEN)
            .output()
    };
    let hash = BlobHash::of_bytes(&content);
    let out = run().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        hash.to_string()
    );
    assert_eq!(api.finalizes.load(Ordering::SeqCst), 1);
    let mut got = Vec::new();
    env.store
        .fetch_verified(&hash, &mut got, 1 << 20)
        .await
        .unwrap();
    assert_eq!(got, content);

    let out = run().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        hash.to_string()
    );
    assert_eq!(api.finalizes.load(Ordering::SeqCst), 1, "present: skipped");
}
