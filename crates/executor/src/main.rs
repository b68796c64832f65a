//! `executor`: the one binary. `serve` runs API, worker, push server and blob store in one
//! process on embedded defaults; `api` and `worker` are the scaled-out halves over Redis.

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

use config::{ApiArgs, CommonArgs, PushArgs};

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
    },
    /// Lists the languages the manifests directory offers on this host.
    Languages {
        #[command(flatten)]
        common: CommonArgs,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
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
        Command::Serve { common, api, push } => serve(common, api, push, true).await,
        Command::Api { common, api, push } => {
            anyhow::ensure!(common.redis_url.is_some(), "`executor api` needs --redis-url (or REDIS_URL): the API and the workers meet in Redis");
            serve(common, api, push, false).await
        }
        Command::Worker { common } => {
            anyhow::ensure!(
                common.redis_url.is_some(),
                "`executor worker` needs --redis-url (or REDIS_URL)"
            );
            eprintln!("executor worker: the sandboxed worker is not part of this build yet; jobs stay queued.");
            shutdown_signal().await;
            Ok(())
        }
        Command::Languages { common } => {
            let reg = Registry::load(&common.languages, &SchemaValidator::new());
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
    embedded: bool,
) -> anyhow::Result<()> {
    let validator = Arc::new(SchemaValidator::new());
    let languages = Arc::new(Registry::load(&common.languages, &validator));
    if languages.all().is_empty() {
        tracing::warn!(dir = %common.languages.display(), "no language is available; check --languages");
    }
    let broker = broker(&common).await?;
    let (token, generated) = match &api.token {
        Some(t) if !t.is_empty() => (t.clone(), false),
        _ => (hex::encode(rand::random::<[u8; 24]>()), true),
    };
    let creds = push.credentials();
    let mut config = ApiConfig::new(executor_api::Secret::new(token.clone()));
    config.max_files_bytes = api.max_files_bytes;
    config.max_queue_depth = api.max_queue_depth;
    config.enable_channel_auth = api.enable_channel_auth;
    config.max_limits = api.max_limits();
    let (key, secret) = (creds.key.clone(), creds.secret.clone());
    let signer: executor_api::ChannelSigner = Arc::new(move |socket_id: &str, channel: &str| {
        config::channel_auth(&key, &secret, socket_id, channel)
    });
    let state = Arc::new(AppState {
        config,
        jobs: JobStore::new(broker.clone()),
        languages: languages.clone(),
        validator,
        blobs: None,
        events: None,
        signer: Some(signer),
    });
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
        "Try: curl -s -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' \\\n  -d '{{\"language\":\"python\",\"files\":[{{\"name\":\"main.py\",\"content\":\"print(42)\"}}]}}' http://{addr}/v1/execute",
        if generated { token.as_str() } else { "$EXECUTOR_API_TOKEN" }
    );
    let app = executor_api::router(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await
        .context("HTTP server failed")?;
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
