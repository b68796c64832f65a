//! Who is subscribed to what, and the last event of each cache channel.
//!
//! One mutex over a map of channels, held only to copy out the subscriber list or to insert
//! one: a frame is serialized once per event and its bytes shared by every subscriber's queue.
//! Delivery to a connection is a non-blocking `try_send`; a connection whose queue is full is
//! too slow to keep up and is told to close (4100, "over capacity", pusher-js reconnects) rather
//! than silently lose events.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::ws::Utf8Bytes;
use serde::Serialize;
use tokio::sync::{mpsc, Notify};

/// A connection as the hub sees it.
#[derive(Clone)]
pub(crate) struct Subscriber {
    pub socket_id: Arc<str>,
    pub tx: mpsc::Sender<Utf8Bytes>,
    /// Notified when the connection must close because its queue overflowed.
    pub overflow: Arc<Notify>,
}

#[derive(Default)]
struct ChannelState {
    subscribers: HashMap<u64, Subscriber>,
    cached: Option<(Utf8Bytes, Instant)>,
}

pub(crate) struct Hub {
    channels: Mutex<HashMap<String, ChannelState>>,
    cache_ttl: Duration,
    next_conn: AtomicU64,
}

#[derive(Serialize)]
struct Frame<'a> {
    event: &'a str,
    channel: &'a str,
    data: &'a str,
}

/// A server-to-client frame on a channel: `{"event","channel","data"}` with data a string.
pub(crate) fn channel_frame(event: &str, channel: &str, data: &str) -> Utf8Bytes {
    // Serializing borrowed strings cannot fail.
    Utf8Bytes::from(
        serde_json::to_string(&Frame {
            event,
            channel,
            data,
        })
        .unwrap_or_default(),
    )
}

/// True for Pusher cache channels (`cache-*`, `private-cache-*`).
pub(crate) fn is_cache_channel(channel: &str) -> bool {
    channel.starts_with("private-cache-") || channel.starts_with("cache-")
}

impl Hub {
    pub fn new(cache_ttl: Duration) -> Self {
        Self {
            channels: Mutex::new(HashMap::new()),
            cache_ttl,
            next_conn: AtomicU64::new(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, ChannelState>> {
        self.channels.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn next_conn_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// Adds a subscriber; returns the channel's cached frame (cache channels, fresh only),
    /// read under the same lock so the subscriber gets it or the live events, never both.
    pub fn subscribe(&self, channel: &str, conn: u64, sub: Subscriber) -> Option<Utf8Bytes> {
        let mut channels = self.lock();
        let state = channels.entry(channel.to_owned()).or_default();
        state.subscribers.insert(conn, sub);
        state
            .cached
            .as_ref()
            .filter(|(_, at)| at.elapsed() < self.cache_ttl)
            .map(|(frame, _)| frame.clone())
    }

    pub fn unsubscribe(&self, channel: &str, conn: u64) {
        let mut channels = self.lock();
        if let Some(state) = channels.get_mut(channel) {
            state.subscribers.remove(&conn);
            if state.subscribers.is_empty() && state.cached.is_none() {
                channels.remove(channel);
            }
        }
    }

    /// Sends an event to the channel's subscribers (except `except_socket`); returns how many
    /// connections it was queued for.
    pub fn broadcast(
        &self,
        channel: &str,
        event: &str,
        data: &str,
        except_socket: Option<&str>,
    ) -> usize {
        let frame = channel_frame(event, channel, data);
        let cache = is_cache_channel(channel);
        let mut channels = self.lock();
        let state = match channels.get_mut(channel) {
            Some(state) => state,
            None if cache => channels.entry(channel.to_owned()).or_default(),
            None => return 0,
        };
        if cache {
            state.cached = Some((frame.clone(), Instant::now()));
        }
        let mut sent = 0;
        state.subscribers.retain(|_, sub| {
            if except_socket == Some(&*sub.socket_id) {
                return true;
            }
            match sub.tx.try_send(frame.clone()) {
                Ok(()) => {
                    sent += 1;
                    true
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    sub.overflow.notify_one();
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
        sent
    }

    /// Drops expired cache entries and channels left with nothing.
    pub fn sweep(&self) {
        let ttl = self.cache_ttl;
        self.lock().retain(|_, state| {
            if state
                .cached
                .as_ref()
                .is_some_and(|(_, at)| at.elapsed() >= ttl)
            {
                state.cached = None;
            }
            !state.subscribers.is_empty() || state.cached.is_some()
        });
    }

    pub fn channel_count(&self) -> usize {
        self.lock().len()
    }
}
