//! The embedded S3 server of the one-command start: `s3s-fs` (a file-system S3 implementation
//! that checks SigV4 signatures and presigned-URL expiry) served by hyper on a loopback port,
//! with random credentials. The rest of the service talks to it exactly as to AWS, MinIO or R2:
//! same client, same presigned URLs, same code path.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use hyper_util::rt::TokioIo;
use rand::distr::{Alphanumeric, SampleString as _};
use reqwest::Url;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::config::{BlobConfig, Secret};

/// Bucket name used by the embedded store.
pub const EMBEDDED_BUCKET: &str = "executor";

/// The embedded server could not start.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedS3Error {
    /// Creating the data directory or reading the listener failed.
    #[error("{op}")]
    Io {
        /// What was being done.
        op: String,
        /// The cause.
        #[source]
        err: std::io::Error,
    },
    /// `s3s-fs` refused the data directory.
    #[error("s3s-fs cannot use data directory {dir}: {reason}")]
    FileSystem {
        /// The directory.
        dir: PathBuf,
        /// Its message.
        reason: String,
    },
}

/// A running embedded S3 server. Dropping it stops the server and closes its connections.
#[derive(Debug)]
pub struct EmbeddedS3 {
    addr: SocketAddr,
    data_dir: PathBuf,
    task: JoinHandle<()>,
}

impl EmbeddedS3 {
    /// Serves an S3 store kept in `data_dir` (created if needed; objects persist across
    /// restarts, but the credentials are new each time) on `listener`, and returns the
    /// configuration to reach it. The bucket [`EMBEDDED_BUCKET`] is created if absent. A listener
    /// bound to an unspecified address (`0.0.0.0`) is advertised as `127.0.0.1`; set
    /// `config.endpoint` to a public URL if clients reach it through another name (the host is
    /// part of the signature).
    pub async fn start(
        data_dir: impl AsRef<Path>,
        listener: TcpListener,
    ) -> Result<(Self, BlobConfig), EmbeddedS3Error> {
        let data_dir = data_dir.as_ref().to_path_buf();
        let io = |op: String| move |err| EmbeddedS3Error::Io { op, err };
        tokio::fs::create_dir_all(data_dir.join(EMBEDDED_BUCKET))
            .await
            .map_err(io(format!(
                "creating blob data directory {}",
                data_dir.display()
            )))?;
        let fs = s3s_fs::FileSystem::new(&data_dir).map_err(|e| EmbeddedS3Error::FileSystem {
            dir: data_dir.clone(),
            reason: format!("{e:?}"),
        })?;

        let mut rng = rand::rng();
        let access_key = Alphanumeric.sample_string(&mut rng, 20);
        let secret_key = Alphanumeric.sample_string(&mut rng, 40);
        let service = {
            let mut b = S3ServiceBuilder::new(fs);
            b.set_auth(SimpleAuth::from_single(
                access_key.clone(),
                secret_key.clone(),
            ));
            b.build()
        };

        let mut addr = listener
            .local_addr()
            .map_err(io("reading the blob listener's address".to_owned()))?;
        if addr.ip().is_unspecified() {
            addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        let task = tokio::spawn(async move {
            let mut conns = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let service = service.clone();
                            conns.spawn(async move {
                                let conn = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(TokioIo::new(stream), service);
                                if let Err(err) = conn.await {
                                    tracing::debug!(error = %err, "embedded S3 connection ended");
                                }
                            });
                        }
                        Err(err) => {
                            tracing::warn!(error = %err, "embedded S3 accept failed");
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        }
                    },
                    Some(_) = conns.join_next(), if !conns.is_empty() => {}
                }
            }
        });

        let endpoint = Url::parse(&format!("http://{addr}/")).expect("socket address URL");
        let config = BlobConfig::new(
            endpoint,
            EMBEDDED_BUCKET,
            access_key,
            Secret::new(secret_key),
        );
        tracing::info!(%addr, dir = %data_dir.display(), "embedded S3 store listening");
        Ok((
            Self {
                addr,
                data_dir,
                task,
            },
            config,
        ))
    }

    /// The address the server is reachable at.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where the objects are kept.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }
}

impl Drop for EmbeddedS3 {
    fn drop(&mut self) {
        self.task.abort();
    }
}
