//! Integration tests of executor-blob against a real S3 server (s3s-fs, which checks SigV4
//! signatures and presigned-URL expiry), both embedded in the test process and as a separate
//! process (`executor-s3-server`).

mod api;
mod artifacts;
mod flow;
mod integrity;
mod large;
mod mime;
mod signatures;
mod sweeper;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use executor_blob::{
    BlobConfig, BlobHash, BlobService, BlobStore, EmbeddedS3, MemoryLiveness, Secret,
    CHECKSUM_HEADER,
};
use tokio::io::AsyncBufReadExt;

/// A fresh directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "executor-blob-test-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

enum Server {
    Embedded(#[allow(dead_code)] EmbeddedS3),
    Process(#[allow(dead_code)] tokio::process::Child),
}

/// A store with its own server, data directory and liveness records.
pub struct Env {
    pub store: BlobStore,
    pub liveness: Arc<MemoryLiveness>,
    pub service: BlobService,
    pub work: TempDir,
    _server: Server,
    _data: TempDir,
}

impl Env {
    /// s3s-fs in this process.
    pub async fn embedded() -> Self {
        let data = TempDir::new("s3");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (server, config) = EmbeddedS3::start(data.path(), listener).await.unwrap();
        Self::with(config, Server::Embedded(server), data)
    }

    /// s3s-fs in a separate process (the `executor-s3-server` binary).
    pub async fn separate_process() -> Self {
        let data = TempDir::new("s3proc");
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_executor-s3-server"))
            .arg(data.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        tokio::io::BufReader::new(stdout)
            .read_line(&mut line)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).expect("server's JSON line");
        let mut config = BlobConfig::new(
            v["endpoint"].as_str().unwrap().parse().unwrap(),
            v["bucket"].as_str().unwrap(),
            v["accessKeyId"].as_str().unwrap(),
            Secret::new(v["secretAccessKey"].as_str().unwrap()),
        );
        config.region = v["region"].as_str().unwrap().to_owned();
        Self::with(config, Server::Process(child), data)
    }

    fn with(config: BlobConfig, server: Server, data: TempDir) -> Self {
        let store = BlobStore::new(config).unwrap();
        let liveness = Arc::new(MemoryLiveness::new());
        let service = BlobService::new(store.clone(), liveness.clone());
        Self {
            store,
            liveness,
            service,
            work: TempDir::new("work"),
            _server: server,
            _data: data,
        }
    }

    /// Uploads `bytes` the way a client does: PUT to the presigned URL with the checksum header.
    pub async fn client_put(&self, url: &str, hash: &BlobHash, bytes: Vec<u8>) -> u16 {
        reqwest::Client::new()
            .put(url)
            .header(CHECKSUM_HEADER, hash.checksum_header_value())
            .body(bytes)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// Writes `bytes` to a file in the work directory and opens it.
    pub async fn file_with(&self, name: &str, bytes: &[u8]) -> (tokio::fs::File, u64) {
        let p = self.work.path().join(name);
        tokio::fs::write(&p, bytes).await.unwrap();
        (tokio::fs::File::open(&p).await.unwrap(), bytes.len() as u64)
    }
}

/// Runs a test body against the embedded store and against the separate process.
#[macro_export]
macro_rules! both_servers {
    ($name:ident, $body:path) => {
        mod $name {
            #[tokio::test]
            async fn embedded() {
                $body(&$crate::Env::embedded().await).await;
            }
            #[tokio::test]
            async fn separate_process() {
                $body(&$crate::Env::separate_process().await).await;
            }
        }
    };
}
