//! The Redis broker: the spec's key names (under an optional prefix), a small pool of
//! auto-reconnecting multiplexed connections, dedicated connections for blocking moves, and
//! pub/sub subscriptions that re-subscribe after Redis comes back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::{AsyncCommands, Client, Script};
use tokio::sync::mpsc;

use crate::{Broker, Message, Result, Subscription};

const POOL_SIZE: usize = 4;

/// [`Broker`] over Redis (or Valkey). Requires Redis 6.2+ (`LMOVE`/`BLMOVE`).
pub struct RedisBroker {
    client: Client,
    prefix: String,
    pool: Vec<ConnectionManager>,
    next: AtomicUsize,
    blocking: Mutex<Vec<MultiplexedConnection>>,
    rpush_bounded: Script,
    incr_ttl: Script,
    lmove_value: Script,
}

impl RedisBroker {
    /// Connects to `url` (`redis://host:port/db`); every key and channel gets `prefix`.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self> {
        let client = Client::open(url)?;
        let cfg = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(6)
            .set_max_delay(Duration::from_secs(2));
        let mut pool = Vec::with_capacity(POOL_SIZE);
        for _ in 0..POOL_SIZE {
            pool.push(
                client
                    .get_connection_manager_with_config(cfg.clone())
                    .await?,
            );
        }
        Ok(Self {
            client,
            prefix: prefix.to_owned(),
            pool,
            next: AtomicUsize::new(0),
            blocking: Mutex::new(Vec::new()),
            rpush_bounded: Script::new(
                "if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return -1 end \
                 return redis.call('RPUSH', KEYS[1], ARGV[1])",
            ),
            incr_ttl: Script::new(
                "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) \
                 if tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) == -1 then \
                   redis.call('PEXPIRE', KEYS[1], ARGV[2]) end \
                 return v",
            ),
            lmove_value: Script::new(
                "if redis.call('LREM', KEYS[1], 1, ARGV[1]) > 0 then \
                   redis.call('LPUSH', KEYS[2], ARGV[1]) return 1 end return 0",
            ),
        })
    }

    fn k(&self, key: &str) -> String {
        format!("{}{}", self.prefix, key)
    }

    fn conn(&self) -> ConnectionManager {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.pool.len();
        self.pool[i].clone()
    }

    async fn blocking_conn(&self) -> Result<MultiplexedConnection> {
        if let Some(c) = self.blocking.lock().unwrap().pop() {
            return Ok(c);
        }
        let cfg = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(None);
        Ok(self
            .client
            .get_multiplexed_async_connection_with_config(&cfg)
            .await?)
    }
}

fn px(ttl: Duration) -> u64 {
    (ttl.as_millis() as u64).max(1)
}

#[async_trait]
impl Broker for RedisBroker {
    async fn set(&self, key: &str, value: &str, ttl: Option<Duration>) -> Result<()> {
        let mut c = self.conn();
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.k(key)).arg(value);
        if let Some(t) = ttl {
            cmd.arg("PX").arg(px(t));
        }
        cmd.query_async::<()>(&mut c).await?;
        Ok(())
    }

    async fn set_nx(&self, key: &str, value: &str, ttl: Option<Duration>) -> Result<bool> {
        let mut c = self.conn();
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.k(key)).arg(value).arg("NX");
        if let Some(t) = ttl {
            cmd.arg("PX").arg(px(t));
        }
        let r: Option<String> = cmd.query_async(&mut c).await?;
        Ok(r.is_some())
    }

    async fn get(&self, key: &str) -> Result<Option<String>> {
        Ok(self.conn().get(self.k(key)).await?)
    }

    async fn del(&self, key: &str) -> Result<()> {
        self.conn().del::<_, ()>(self.k(key)).await?;
        Ok(())
    }

    async fn expire(&self, key: &str, ttl: Duration) -> Result<bool> {
        Ok(self.conn().pexpire(self.k(key), px(ttl) as i64).await?)
    }

    async fn ttl(&self, key: &str) -> Result<Option<Duration>> {
        let t: i64 = self.conn().pttl(self.k(key)).await?;
        Ok((t >= 0).then(|| Duration::from_millis(t as u64)))
    }

    async fn incr_by(&self, key: &str, delta: i64, ttl: Option<Duration>) -> Result<i64> {
        let mut c = self.conn();
        Ok(self
            .incr_ttl
            .key(self.k(key))
            .arg(delta)
            .arg(ttl.map_or(0, px))
            .invoke_async(&mut c)
            .await?)
    }

    async fn rpush(&self, key: &str, value: &str) -> Result<u64> {
        Ok(self.conn().rpush(self.k(key), value).await?)
    }

    async fn rpush_bounded(&self, key: &str, value: &str, max: u64) -> Result<Option<u64>> {
        let mut c = self.conn();
        let n: i64 = self
            .rpush_bounded
            .key(self.k(key))
            .arg(value)
            .arg(max)
            .invoke_async(&mut c)
            .await?;
        Ok((n >= 0).then_some(n as u64))
    }

    async fn llen(&self, key: &str) -> Result<u64> {
        Ok(self.conn().llen(self.k(key)).await?)
    }

    async fn lrange(&self, key: &str, start: i64, stop: i64) -> Result<Vec<String>> {
        Ok(self
            .conn()
            .lrange(self.k(key), start as isize, stop as isize)
            .await?)
    }

    async fn ltrim(&self, key: &str, start: i64, stop: i64) -> Result<()> {
        self.conn()
            .ltrim::<_, ()>(self.k(key), start as isize, stop as isize)
            .await?;
        Ok(())
    }

    async fn lrem(&self, key: &str, count: i64, value: &str) -> Result<u64> {
        Ok(self.conn().lrem(self.k(key), count as isize, value).await?)
    }

    async fn blmove(&self, src: &str, dst: &str, timeout: Duration) -> Result<Option<String>> {
        let mut c = self.blocking_conn().await?;
        let r: redis::RedisResult<Option<String>> = redis::cmd("BLMOVE")
            .arg(self.k(src))
            .arg(self.k(dst))
            .arg("LEFT")
            .arg("RIGHT")
            .arg(timeout.as_secs_f64().max(0.01))
            .query_async(&mut c)
            .await;
        match r {
            Ok(v) => {
                self.blocking.lock().unwrap().push(c);
                Ok(v)
            }
            // The connection is dropped rather than pooled: it may be broken.
            Err(e) => Err(e.into()),
        }
    }

    async fn lmove_value(&self, src: &str, dst: &str, value: &str) -> Result<bool> {
        let mut c = self.conn();
        let n: i64 = self
            .lmove_value
            .key(self.k(src))
            .key(self.k(dst))
            .arg(value)
            .invoke_async(&mut c)
            .await?;
        Ok(n == 1)
    }

    async fn sadd(&self, key: &str, member: &str) -> Result<bool> {
        Ok(self.conn().sadd(self.k(key), member).await?)
    }

    async fn srem(&self, key: &str, member: &str) -> Result<bool> {
        Ok(self.conn().srem(self.k(key), member).await?)
    }

    async fn smembers(&self, key: &str) -> Result<Vec<String>> {
        Ok(self.conn().smembers(self.k(key)).await?)
    }

    async fn publish(&self, channel: &str, payload: &str) -> Result<()> {
        self.conn()
            .publish::<_, _, ()>(self.k(channel), payload)
            .await?;
        Ok(())
    }

    async fn subscribe(&self, channels: &[String]) -> Result<Subscription> {
        let names: Vec<String> = channels.iter().map(|c| self.k(c)).collect();
        let mut ps = self.client.get_async_pubsub().await?;
        ps.subscribe(&names).await?;
        let (tx, rx) = mpsc::channel(1024);
        let client = self.client.clone();
        let prefix = self.prefix.clone();
        let task = tokio::spawn(async move {
            let mut ps = Some(ps);
            let mut backoff = Duration::from_millis(50);
            loop {
                let conn = match ps.take() {
                    Some(p) => Some(p),
                    None => match client.get_async_pubsub().await {
                        Ok(mut p) => match p.subscribe(&names).await {
                            Ok(()) => Some(p),
                            Err(_) => None,
                        },
                        Err(_) => None,
                    },
                };
                if let Some(p) = conn {
                    backoff = Duration::from_millis(50);
                    let mut stream = p.into_on_message();
                    while let Some(m) = stream.next().await {
                        let channel = m.get_channel_name();
                        let channel = channel
                            .strip_prefix(prefix.as_str())
                            .unwrap_or(channel)
                            .to_owned();
                        let payload: String = m.get_payload().unwrap_or_default();
                        if tx.send(Message { channel, payload }).await.is_err() {
                            return;
                        }
                    }
                    tracing::warn!("redis pub/sub connection lost; re-subscribing");
                }
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        });
        Ok(Subscription {
            rx,
            _guard: Some(task),
        })
    }

    async fn ping(&self) -> Result<()> {
        redis::cmd("PING")
            .query_async::<String>(&mut self.conn())
            .await?;
        Ok(())
    }
}
