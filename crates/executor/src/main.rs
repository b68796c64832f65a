//! `executor`: the one binary. `serve` runs API, worker, push server and blob store in one
//! process on embedded defaults; `api` and `worker` are the scaled-out halves over Redis.

mod blobs;
mod embedded {
    //! The shipped language manifests, embedded at build time (see build.rs).
    include!(concat!(env!("OUT_DIR"), "/manifests.rs"));
}
mod client;
mod config;
mod env;

use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use executor_api::{ApiConfig, AppState};
use executor_broker::jobs::JobStore;
use executor_broker::{Broker, MemoryBroker, RedisBroker};
use executor_languages::Registry;
use executor_types::SchemaValidator;

use config::{ApiArgs, ClientArgs, CommonArgs, PushArgs, WorkerArgs};

#[derive(Parser)]
#[command(
    name = "executor",
    version,
    about = "Run untrusted code in a sandbox, stream its output"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Everything in one process on embedded defaults: API, worker, push server, blob store.
    Serve {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        api: ApiArgs,
        #[command(flatten)]
        push: PushArgs,
        #[command(flatten)]
        worker: WorkerArgs,
        /// Run without a blob store (the blob routes answer 501).
        #[arg(long, env = "EXECUTOR_NO_BLOBS", value_parser = clap::builder::BoolishValueParser::new(), default_value = "false")]
        no_blobs: bool,
    },
    /// The HTTP API only (stateless; run several behind a load balancer, all on one Redis).
    Api {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        api: ApiArgs,
        #[command(flatten)]
        push: PushArgs,
    },
    /// A worker only: claims jobs from Redis and runs them in sandboxes.
    Worker {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        push: PushArgs,
        #[command(flatten)]
        worker: WorkerArgs,
    },
    /// Runs files on a server and prints the program's output; exits with its exit code.
    Run {
        /// Source files; the first is the entrypoint unless the manifest names another.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Language name or alias (default: from the first file's extension).
        #[arg(long, short)]
        language: Option<String>,
        /// Exact language version.
        #[arg(long)]
        version: Option<String>,
        /// Send this process's stdin to the program.
        #[arg(long)]
        stdin: bool,
        /// A limit override, e.g. `--limit wallTimeMs=2000` (repeatable).
        #[arg(long = "limit", value_parser = parse_limit)]
        limits: Vec<(String, u64)>,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Uploads a file to the blob store (check, PUT, finalize; skipped when present) and
    /// prints its `sha256:` ref for a file's `ref` field.
    Upload {
        /// The file to upload.
        file: std::path::PathBuf,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Lists the languages the manifests directory offers on this host.
    Languages {
        #[command(flatten)]
        common: CommonArgs,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env(env::LOG).unwrap_or_else(|_| "info".into()),
        )
        .init();
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(cli))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve {
            common,
            api,
            push,
            worker,
            no_blobs,
        } => serve(common, api, push, Some(worker), no_blobs).await,
        Command::Api { common, api, push } => {
            anyhow::ensure!(common.redis_url.is_some(), "`executor api` needs --redis-url (or REDIS_URL): the API and the workers meet in Redis");
            serve(common, api, push, None, false).await
        }
        Command::Worker {
            common,
            push,
            worker,
        } => {
            anyhow::ensure!(
                common.redis_url.is_some(),
                "`executor worker` needs --redis-url (or REDIS_URL)"
            );
            anyhow::ensure!(push.pusher_host.is_some(), "`executor worker` needs --pusher-host (or PUSHER_HOST) and the PUSHER_APP_* credentials of the push server");
            let broker = broker(&common).await?;
            let validator = SchemaValidator::new();
            let languages = Arc::new(Registry::load(&languages_dir(&common)?, &validator));
            let (publisher, _server) = publisher(&push).await?;
            let blob = blob_store(&common, false, false, broker.clone()).await?;
            let w = start_worker(
                &common,
                &worker,
                broker,
                languages,
                publisher,
                blob.as_ref(),
            )?;
            w.run(shutdown_signal()).await;
            Ok(())
        }
        Command::Run {
            files,
            language,
            version,
            stdin,
            limits,
            client: ClientArgs { api, token },
        } => {
            let code = client::run(client::RunArgs {
                api,
                token,
                language,
                version,
                files,
                stdin,
                limits,
            })
            .await;
            match code {
                Ok(code) => std::process::exit(code),
                Err(e) => {
                    eprintln!("executor: {e:#}");
                    std::process::exit(2);
                }
            }
        }
        Command::Upload {
            file,
            client: ClientArgs { api, token },
        } => {
            let r = executor_blob::upload_file(&api, &token, &file)
                .await
                .with_context(|| format!("uploading {}", file.display()))?;
            println!("{r}");
            Ok(())
        }
        Command::Languages { common } => {
            let reg = Registry::load(&languages_dir(&common)?, &SchemaValidator::new());
            for l in reg.all() {
                println!(
                    "{:<12} {:<12} {}",
                    l.name(),
                    l.version,
                    l.manifest.aliases.join(", ")
                );
            }
            for s in &reg.skipped {
                println!("unavailable: {} ({})", s.path.display(), s.reason);
            }
            Ok(())
        }
    }
}

async fn broker(common: &CommonArgs) -> anyhow::Result<Arc<dyn Broker>> {
    Ok(match &common.redis_url {
        Some(url) => Arc::new(
            RedisBroker::connect(url, &common.redis_prefix)
                .await
                .with_context(|| format!("cannot connect to Redis at {url}"))?,
        ),
        None => Arc::new(MemoryBroker::new()),
    })
}

async fn serve(
    common: CommonArgs,
    api: ApiArgs,
    push: PushArgs,
    worker: Option<WorkerArgs>,
    no_blobs: bool,
) -> anyhow::Result<()> {
    let embedded = worker.is_some();
    let validator = Arc::new(SchemaValidator::new());
    let languages = Arc::new(Registry::load(&languages_dir(&common)?, &validator));
    if languages.all().is_empty() {
        tracing::warn!(dir = %common.languages.display(), "no language is available; check --languages");
    }
    let broker = broker(&common).await?;
    let (token, generated) = match &api.token {
        Some(t) if !t.is_empty() => (t.clone(), false),
        _ => (hex::encode(rand::random::<[u8; 24]>()), true),
    };
    let creds = push.credentials_fixed();
    let mut config = ApiConfig::new(executor_api::Secret::new(token.clone()));
    config.max_files_bytes = api.max_files_bytes;
    config.max_queue_depth = api.max_queue_depth;
    config.enable_channel_auth = api.enable_channel_auth;
    config.max_limits = api.max_limits();
    config.output_ttl = std::time::Duration::from_secs(common.output_ttl_secs.max(1));
    let (key, secret) = (creds.key.clone(), creds.secret.clone());
    let signer: executor_api::ChannelSigner = Arc::new(move |socket_id: &str, channel: &str| {
        executor_push::channel_auth(&key, &secret, socket_id, channel)
    });
    let (publisher, push_server) = publisher(&push).await?;
    let blob = blob_store(&common, no_blobs, embedded, broker.clone()).await?;
    let state = Arc::new(AppState {
        config,
        jobs: JobStore::new(broker.clone()),
        languages: languages.clone(),
        validator,
        blobs: blob.as_ref().map(|b| {
            Arc::new(blobs::ApiBlobs(b.service.clone())) as Arc<dyn executor_api::BlobService>
        }),
        events: Some(Arc::new(Events(publisher.clone()))),
        signer: Some(signer),
    });
    if let Some(b) = &blob {
        let sweeper = executor_blob::Sweeper::new(b.store.clone(), b.liveness.clone());
        tokio::spawn(sweeper.run(std::future::pending()));
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|v| *v).await;
        }
    };
    let worker_task = match &worker {
        Some(wa) => {
            let w = start_worker(
                &common,
                wa,
                broker.clone(),
                languages.clone(),
                publisher.clone(),
                blob.as_ref(),
            )?;
            Some(tokio::spawn(w.run(stopped())))
        }
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(&api.listen)
        .await
        .with_context(|| format!("cannot listen on {}", api.listen))?;
    let addr = listener.local_addr()?;
    let mode = if embedded {
        "serve (embedded broker, worker and push server)"
    } else {
        "api"
    };
    println!("Executor {mode} listening on http://{addr}");
    if generated {
        println!(
            "API token (generated; set {} to choose one): {token}",
            env::API_TOKEN
        );
    } else {
        println!("API token: from {}", env::API_TOKEN);
    }
    println!(
        "Try: curl -s -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' \\\n  -d '{{\"language\":\"python\",\"collectOutput\":true,\"files\":[{{\"name\":\"main.py\",\"content\":\"print(42)\"}}]}}' http://{addr}/v1/execute",
        if generated { token.as_str() } else { "$EXECUTOR_API_TOKEN" }
    );
    println!("Then: GET http://{addr}/v1/jobs/<jobId> (state) and /v1/jobs/<jobId>/output (result); `executor run FILE` does it all.");
    if let Some(srv) = &push_server {
        println!(
            "Push server (Pusher protocol): ws://{}/app/{}  (app id {}, key {})",
            srv.local_addr(),
            creds.key,
            creds.app_id,
            creds.key
        );
    }
    let app = executor_api::router(state);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(stopped())
        .await
        .context("HTTP server failed")?;
    if let Some(t) = worker_task {
        // Running jobs finish (bounded); jobs waiting for their start go back to the queue.
        let _ = t.await;
    }
    if let Some(srv) = push_server {
        srv.shutdown().await;
    }
    tracing::info!("shut down cleanly");
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term.recv() => {},
    }
    tracing::info!("shutdown signal received");
}

/// The API's `stage{queued}` events go through the same publisher as the worker's.
struct Events(Arc<dyn executor_push::Publisher>);

#[async_trait::async_trait]
impl executor_api::EventSink for Events {
    async fn publish(&self, channel: &str, event: &str, data: serde_json::Value) {
        if let Err(e) = self
            .0
            .publish(vec![executor_push::PushEvent::new(channel, event, data)])
            .await
        {
            tracing::warn!(error = %e, "publish failed");
        }
    }
}

/// The external push server's HTTP API when `PUSHER_HOST` is set, else the embedded server
/// (published to in-process).
async fn publisher(
    push: &PushArgs,
) -> anyhow::Result<(
    Arc<dyn executor_push::Publisher>,
    Option<executor_push::EmbeddedServer>,
)> {
    let c = push.credentials_fixed();
    let creds = executor_push::AppCredentials::new(c.app_id, c.key, c.secret);
    match &push.pusher_host {
        Some(host) => {
            let cfg = executor_push::HttpPublisherConfig::new(
                creds,
                host.clone(),
                push.pusher_port,
                push.pusher_use_tls,
            );
            Ok((Arc::new(executor_push::HttpPublisher::new(cfg)?), None))
        }
        None => {
            let srv = executor_push::EmbeddedServer::bind(push.push_listen, creds)
                .await
                .with_context(|| format!("cannot start the push server on {}", push.push_listen))?;
            Ok((Arc::new(srv.publisher()), Some(srv)))
        }
    }
}

pub struct Blob {
    pub store: executor_blob::BlobStore,
    pub service: Arc<executor_blob::BlobService>,
    pub liveness: Arc<dyn executor_blob::LivenessStore>,
    _embedded: Option<executor_blob::EmbeddedS3>,
}

/// An external S3 store when `S3_ENDPOINT` is set; else, for `serve` (`allow_embedded`), the
/// embedded s3s-fs server under the data directory. None with `--no-blobs`, and none for a
/// separate `api` or `worker` without `S3_ENDPOINT`: an embedded store in one process is not
/// reachable by the others, so the blob routes answer 501 and refs fail clearly instead.
async fn blob_store(
    common: &CommonArgs,
    off: bool,
    allow_embedded: bool,
    b: Arc<dyn Broker>,
) -> anyhow::Result<Option<Blob>> {
    if off {
        return Ok(None);
    }
    let (cfg, embedded) = match executor_blob::BlobConfig::from_env()? {
        Some(cfg) => (cfg, None),
        None if !allow_embedded => {
            tracing::warn!(
                "no S3_ENDPOINT: blobs and artifacts are off (the blob routes answer 501); \
                 scaled-out processes share an external S3-compatible store"
            );
            return Ok(None);
        }
        None => {
            let dir = absolute(&common.data_dir)?.join("blobs");
            std::fs::create_dir_all(&dir)?;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let (srv, cfg) = executor_blob::EmbeddedS3::start(&dir, listener).await?;
            tracing::info!(endpoint = %cfg.endpoint, "embedded S3 store started");
            (cfg, Some(srv))
        }
    };
    let store = executor_blob::BlobStore::new(cfg)?;
    let liveness: Arc<dyn executor_blob::LivenessStore> = Arc::new(blobs::BrokerLiveness(b));
    let service = Arc::new(executor_blob::BlobService::new(
        store.clone(),
        liveness.clone(),
    ));
    Ok(Some(Blob {
        store,
        service,
        liveness,
        _embedded: embedded,
    }))
}

fn absolute(p: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

fn start_worker(
    common: &CommonArgs,
    wa: &WorkerArgs,
    broker: Arc<dyn Broker>,
    languages: Arc<Registry>,
    publisher: Arc<dyn executor_push::Publisher>,
    blob: Option<&Blob>,
) -> anyhow::Result<Arc<executor_worker::Worker>> {
    let mut cfg = executor_worker::WorkerConfig::default();
    if let Some(n) = wa.slots {
        cfg.slots = n.max(1);
    }
    cfg.max_waiting = wa.max_waiting.unwrap_or(cfg.slots);
    cfg.start_wait = std::time::Duration::from_millis(wa.start_wait_ms);
    cfg.first_slot = wa.first_slot;
    cfg.output_ttl = std::time::Duration::from_secs(common.output_ttl_secs.max(1));
    cfg.state_dir = absolute(&common.data_dir)?.join("run");
    cfg.cgroup = match wa.cgroup.as_str() {
        "v1" => executor_sandbox::CgroupConfig::V1 {
            root: "/sys/fs/cgroup".into(),
        },
        "v2" => executor_sandbox::CgroupConfig::V2 {
            root: "/sys/fs/cgroup".into(),
        },
        _ => executor_sandbox::CgroupConfig::Auto,
    };
    let blobs = blob.map(|b| {
        Arc::new(blobs::WorkerBlobs {
            service: b.service.clone(),
            store: b.store.clone(),
        }) as Arc<dyn executor_worker::BlobAccess>
    });
    executor_worker::Worker::new(cfg, broker, languages, publisher, blobs)
}

fn parse_limit(s: &str) -> Result<(String, u64), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or("expected name=value, e.g. wallTimeMs=2000")?;
    Ok((
        k.to_owned(),
        v.parse().map_err(|_| format!("{v:?} is not a number"))?,
    ))
}

/// The manifests directory: the configured one, or — when it does not exist (an installed
/// binary run outside the repository) — the embedded shipped manifests, written under the data
/// directory.
fn languages_dir(common: &CommonArgs) -> anyhow::Result<std::path::PathBuf> {
    if common.languages.is_dir() {
        return Ok(common.languages.clone());
    }
    anyhow::ensure!(
        common.languages == std::path::Path::new("./languages"),
        "languages directory {} does not exist",
        common.languages.display()
    );
    let dir = absolute(&common.data_dir)?.join("languages");
    for (name, manifest) in embedded::MANIFESTS {
        let d = dir.join(name);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join("manifest.json"), manifest)?;
    }
    tracing::info!(
        missing = %common.languages.display(),
        using = %dir.display(),
        "languages directory not found; using the embedded manifests"
    );
    Ok(dir)
}
