//! The embedded Pusher-protocol server for the one-command start.
//!
//! It serves, on its own port, the WebSocket endpoint clients connect to
//! (`/app/<key>?protocol=7`, see `ws`) and the signed HTTP events API (see `api`), and hands
//! out an [`InProcessPublisher`] that delivers straight to subscribers without HTTP.

mod api;
mod hub;
mod ws;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use axum::extract::{Path, Query, State, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use self::hub::Hub;
use crate::sign::AppCredentials;
use crate::stats::{PushStats, PushStatsSnapshot};
use crate::{Publisher, PushError, PushEvent};

/// Settings of the embedded server; `Default` gives Pusher's values.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Idle time after which the server pings a client; sent to clients as
    /// `activity_timeout` (default 120 s).
    pub activity_timeout: Duration,
    /// Time a client has to answer a ping before it is closed with 4201 (default 30 s).
    pub pong_timeout: Duration,
    /// Largest event `data`, in bytes (default 10 240, Pusher's 10 KB).
    pub max_event_bytes: usize,
    /// Most events per `/batch_events` call (default 10).
    pub max_batch_events: usize,
    /// How long a cache channel keeps its last event (default 30 min, as Pusher).
    pub cache_ttl: Duration,
    /// Frames queued per connection before a slow client is closed with 4100 (default 10 000).
    pub client_queue: usize,
    /// Allowed clock difference for `auth_timestamp` (default 600 s).
    pub timestamp_skew: Duration,
    /// Largest message a client may send, in bytes (default 64 KiB).
    pub max_client_message: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            activity_timeout: Duration::from_secs(120),
            pong_timeout: Duration::from_secs(30),
            max_event_bytes: 10_240,
            max_batch_events: 10,
            cache_ttl: Duration::from_secs(30 * 60),
            client_queue: 10_000,
            timestamp_skew: Duration::from_secs(600),
            max_client_message: 64 * 1024,
        }
    }
}

/// Why the embedded server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Binding the listening socket failed.
    #[error("binding the push server to {addr} failed")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        #[source]
        err: std::io::Error,
    },
    /// Reading the listener's address failed.
    #[error("reading the push server's local address failed")]
    LocalAddr(#[source] std::io::Error),
}

pub(crate) struct AppState {
    creds: AppCredentials,
    config: ServerConfig,
    hub: Arc<Hub>,
    shutdown: watch::Receiver<bool>,
    /// Held by every connection task; shutdown waits for all clones to drop.
    conn_guard: mpsc::Sender<()>,
    /// First half of socket ids (`<prefix>.<counter>`), distinct per server start.
    socket_prefix: u64,
}

/// A running embedded push server. Dropping it leaves the server running until the runtime
/// ends; call [`EmbeddedServer::shutdown`] to stop it.
pub struct EmbeddedServer {
    addr: SocketAddr,
    hub: Arc<Hub>,
    config: ServerConfig,
    shutdown_tx: watch::Sender<bool>,
    conn_done: mpsc::Receiver<()>,
    task: JoinHandle<()>,
    sweeper: JoinHandle<()>,
    publisher: InProcessPublisher,
}

impl std::fmt::Debug for EmbeddedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

async fn ws_route(
    State(state): State<Arc<AppState>>,
    Path(key): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let protocol = query.get("protocol").cloned();
    let max = state.config.max_client_message;
    upgrade
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| ws::serve_connection(socket, state, key, protocol))
}

impl EmbeddedServer {
    /// Binds `addr` and starts serving with default settings.
    pub async fn bind(addr: SocketAddr, creds: AppCredentials) -> Result<Self, ServerError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|err| ServerError::Bind { addr, err })?;
        Self::start(listener, creds)
    }

    /// Starts serving on `listener` with default settings.
    pub fn start(listener: TcpListener, creds: AppCredentials) -> Result<Self, ServerError> {
        Self::start_with_config(listener, creds, ServerConfig::default())
    }

    /// Starts serving on `listener`.
    pub fn start_with_config(
        listener: TcpListener,
        creds: AppCredentials,
        config: ServerConfig,
    ) -> Result<Self, ServerError> {
        let addr = listener.local_addr().map_err(ServerError::LocalAddr)?;
        let hub = Arc::new(Hub::new(config.cache_ttl));
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (conn_guard, conn_done) = mpsc::channel(1);
        let socket_prefix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64 % 1_000_000_000 + d.as_secs() % 1000)
            .unwrap_or(1);
        let state = Arc::new(AppState {
            creds,
            config: config.clone(),
            hub: hub.clone(),
            shutdown: shutdown_rx.clone(),
            conn_guard,
            socket_prefix,
        });
        let app = Router::new()
            .route("/app/{key}", get(ws_route))
            .route("/apps/{app_id}/events", post(api::events))
            .route("/apps/{app_id}/batch_events", post(api::batch_events))
            .route("/up", get(api::up))
            .with_state(state);
        let mut stop = shutdown_rx.clone();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "embedded push server stopped");
            }
        });
        let sweep_hub = hub.clone();
        let mut stop = shutdown_rx;
        let sweeper = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tokio::select! {
                    _ = tick.tick() => sweep_hub.sweep(),
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        });
        tracing::info!(%addr, "embedded push server listening");
        let publisher = InProcessPublisher {
            hub: hub.clone(),
            stats: Arc::new(PushStats::default()),
            max_event_bytes: config.max_event_bytes,
        };
        Ok(Self {
            addr,
            hub,
            config,
            shutdown_tx,
            conn_done,
            task,
            sweeper,
            publisher,
        })
    }

    /// The address the server listens on (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's settings.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// A publisher that delivers straight to this server's subscribers (no HTTP).
    pub fn publisher(&self) -> InProcessPublisher {
        self.publisher.clone()
    }

    /// Channels with subscribers or a cached event.
    pub fn channel_count(&self) -> usize {
        self.hub.channel_count()
    }

    /// Stops accepting, closes every WebSocket with 4200 (pusher-js reconnects) and waits
    /// (at most 5 s) for the connections to finish.
    pub async fn shutdown(self) {
        let Self {
            shutdown_tx,
            mut conn_done,
            task,
            sweeper,
            ..
        } = self;
        let _ = shutdown_tx.send(true);
        let wait = async {
            let _ = task.await;
            let _ = sweeper.await;
            // The server task dropped its state; this returns once every connection has.
            let _ = conn_done.recv().await;
        };
        if tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .is_err()
        {
            tracing::warn!("embedded push server: connections still open after 5 s, leaving them");
        }
    }
}

/// Publishes directly to an [`EmbeddedServer`]'s subscribers, in call order. Cheap to clone.
#[derive(Clone)]
pub struct InProcessPublisher {
    hub: Arc<Hub>,
    stats: Arc<PushStats>,
    max_event_bytes: usize,
}

impl std::fmt::Debug for InProcessPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessPublisher")
            .field("stats", &self.stats.snapshot())
            .finish()
    }
}

#[async_trait]
impl Publisher for InProcessPublisher {
    async fn publish(&self, events: Vec<PushEvent>) -> Result<(), PushError> {
        let mut first_err = None;
        for event in events {
            let data = event.data_string();
            if data.len() > self.max_event_bytes {
                PushStats::add(&self.stats.oversize, 1);
                tracing::warn!(channel = %event.channel, name = %event.name, bytes = data.len(), "push event over the size limit, not sent");
                first_err.get_or_insert(PushError::EventTooLarge {
                    channel: event.channel,
                    name: event.name,
                    bytes: data.len(),
                    max: self.max_event_bytes,
                });
                continue;
            }
            self.hub.broadcast(&event.channel, &event.name, &data, None);
            PushStats::add(&self.stats.published, 1);
        }
        first_err.map_or(Ok(()), Err)
    }

    fn stats(&self) -> PushStatsSnapshot {
        self.stats.snapshot()
    }
}
