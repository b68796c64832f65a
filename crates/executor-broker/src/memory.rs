//! The in-process broker for the one-command start: the same semantics as Redis (expiring
//! keys, lists with a blocking move, sets, fire-and-forget pub/sub) in one mutex-guarded map.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use crate::{Broker, BrokerError, Message, Result, Subscription};

enum Val {
    Str(String),
    List(VecDeque<String>),
    Set(BTreeSet<String>),
}

struct Entry {
    val: Val,
    expires: Option<Instant>,
}

#[derive(Default)]
struct State {
    map: HashMap<String, Entry>,
    subscribers: HashMap<String, Vec<mpsc::Sender<Message>>>,
}

impl State {
    fn live(&mut self, key: &str) -> Option<&mut Entry> {
        let expired =
            matches!(self.map.get(key), Some(e) if e.expires.is_some_and(|t| t <= Instant::now()));
        if expired {
            self.map.remove(key);
        }
        self.map.get_mut(key)
    }

    fn list(&mut self, key: &str) -> Result<Option<&mut VecDeque<String>>> {
        match self.live(key) {
            None => Ok(None),
            Some(Entry {
                val: Val::List(l), ..
            }) => Ok(Some(l)),
            Some(_) => Err(BrokerError::WrongType { key: key.into() }),
        }
    }

    fn list_or_new(&mut self, key: &str) -> Result<&mut VecDeque<String>> {
        if self.list(key)?.is_none() {
            self.map.insert(
                key.into(),
                Entry {
                    val: Val::List(VecDeque::new()),
                    expires: None,
                },
            );
        }
        Ok(self.list(key)?.expect("just inserted"))
    }

    /// Redis deletes a list or set when it becomes empty.
    fn drop_if_empty(&mut self, key: &str) {
        let empty = match self.map.get(key) {
            Some(Entry {
                val: Val::List(l), ..
            }) => l.is_empty(),
            Some(Entry {
                val: Val::Set(s), ..
            }) => s.is_empty(),
            _ => false,
        };
        if empty {
            self.map.remove(key);
        }
    }

    fn purge_expired(&mut self) {
        let now = Instant::now();
        self.map.retain(|_, e| e.expires.is_none_or(|t| t > now));
        self.subscribers.retain(|_, subs| {
            subs.retain(|s| !s.is_closed());
            !subs.is_empty()
        });
    }
}

/// In-process [`Broker`].
#[derive(Clone)]
pub struct MemoryBroker {
    state: Arc<Mutex<State>>,
    pushed: Arc<Notify>,
}

impl Default for MemoryBroker {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBroker {
    /// A new empty broker. Inside a Tokio runtime it also starts a task that drops expired
    /// keys once a minute (keys are otherwise expired when touched).
    pub fn new() -> Self {
        let b = Self {
            state: Arc::default(),
            pushed: Arc::new(Notify::new()),
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let weak: Weak<Mutex<State>> = Arc::downgrade(&b.state);
            rt.spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    match weak.upgrade() {
                        Some(s) => s.lock().unwrap().purge_expired(),
                        None => break,
                    }
                }
            });
        }
        b
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }
}

fn deadline(ttl: Option<Duration>) -> Option<Instant> {
    ttl.map(|t| Instant::now() + t)
}

fn index(i: i64, len: usize) -> i64 {
    if i < 0 {
        len as i64 + i
    } else {
        i
    }
}

#[async_trait]
impl Broker for MemoryBroker {
    async fn set(&self, key: &str, value: &str, ttl: Option<Duration>) -> Result<()> {
        self.with(|s| {
            s.map.insert(
                key.into(),
                Entry {
                    val: Val::Str(value.into()),
                    expires: deadline(ttl),
                },
            );
        });
        Ok(())
    }

    async fn set_nx(&self, key: &str, value: &str, ttl: Option<Duration>) -> Result<bool> {
        Ok(self.with(|s| {
            if s.live(key).is_some() {
                return false;
            }
            s.map.insert(
                key.into(),
                Entry {
                    val: Val::Str(value.into()),
                    expires: deadline(ttl),
                },
            );
            true
        }))
    }

    async fn get(&self, key: &str) -> Result<Option<String>> {
        self.with(|s| match s.live(key) {
            None => Ok(None),
            Some(Entry {
                val: Val::Str(v), ..
            }) => Ok(Some(v.clone())),
            Some(_) => Err(BrokerError::WrongType { key: key.into() }),
        })
    }

    async fn del(&self, key: &str) -> Result<()> {
        self.with(|s| s.map.remove(key));
        Ok(())
    }

    async fn expire(&self, key: &str, ttl: Duration) -> Result<bool> {
        Ok(self.with(|s| match s.live(key) {
            Some(e) => {
                e.expires = deadline(Some(ttl));
                true
            }
            None => false,
        }))
    }

    async fn ttl(&self, key: &str) -> Result<Option<Duration>> {
        Ok(self.with(|s| {
            s.live(key)
                .and_then(|e| e.expires)
                .map(|t| t.saturating_duration_since(Instant::now()))
        }))
    }

    async fn incr_by(&self, key: &str, delta: i64, ttl: Option<Duration>) -> Result<i64> {
        self.with(|s| match s.live(key) {
            None => {
                s.map.insert(
                    key.into(),
                    Entry {
                        val: Val::Str(delta.to_string()),
                        expires: deadline(ttl),
                    },
                );
                Ok(delta)
            }
            Some(Entry {
                val: Val::Str(v), ..
            }) => {
                let n = v
                    .parse::<i64>()
                    .map_err(|_| BrokerError::WrongType { key: key.into() })?
                    + delta;
                *v = n.to_string();
                Ok(n)
            }
            Some(_) => Err(BrokerError::WrongType { key: key.into() }),
        })
    }

    async fn rpush(&self, key: &str, value: &str) -> Result<u64> {
        let n = self.with(|s| {
            let l = s.list_or_new(key)?;
            l.push_back(value.into());
            Ok::<_, BrokerError>(l.len() as u64)
        })?;
        self.pushed.notify_waiters();
        Ok(n)
    }

    async fn rpush_bounded(&self, key: &str, value: &str, max: u64) -> Result<Option<u64>> {
        let n = self.with(|s| {
            let len = s.list(key)?.map_or(0, |l| l.len() as u64);
            if len >= max {
                return Ok::<_, BrokerError>(None);
            }
            let l = s.list_or_new(key)?;
            l.push_back(value.into());
            Ok(Some(l.len() as u64))
        })?;
        if n.is_some() {
            self.pushed.notify_waiters();
        }
        Ok(n)
    }

    async fn llen(&self, key: &str) -> Result<u64> {
        self.with(|s| Ok(s.list(key)?.map_or(0, |l| l.len() as u64)))
    }

    async fn lrange(&self, key: &str, start: i64, stop: i64) -> Result<Vec<String>> {
        self.with(|s| {
            let Some(l) = s.list(key)? else {
                return Ok(vec![]);
            };
            let len = l.len();
            let (a, b) = (
                index(start, len).max(0),
                index(stop, len).min(len as i64 - 1),
            );
            if a > b {
                return Ok(vec![]);
            }
            Ok(l.range(a as usize..=b as usize).cloned().collect())
        })
    }

    async fn ltrim(&self, key: &str, start: i64, stop: i64) -> Result<()> {
        self.with(|s| {
            let Some(l) = s.list(key)? else { return Ok(()) };
            let len = l.len();
            let (a, b) = (
                index(start, len).max(0),
                index(stop, len).min(len as i64 - 1),
            );
            if a > b {
                l.clear();
            } else {
                l.truncate(b as usize + 1);
                l.drain(..a as usize);
            }
            s.drop_if_empty(key);
            Ok(())
        })
    }

    async fn lrem(&self, key: &str, count: i64, value: &str) -> Result<u64> {
        self.with(|s| {
            let Some(l) = s.list(key)? else { return Ok(0) };
            let mut removed = 0u64;
            let limit = if count == 0 {
                u64::MAX
            } else {
                count.unsigned_abs()
            };
            if count >= 0 {
                let mut i = 0;
                while i < l.len() && removed < limit {
                    if l[i] == value {
                        l.remove(i);
                        removed += 1;
                    } else {
                        i += 1;
                    }
                }
            } else {
                let mut i = l.len();
                while i > 0 && removed < limit {
                    i -= 1;
                    if l[i] == value {
                        l.remove(i);
                        removed += 1;
                    }
                }
            }
            s.drop_if_empty(key);
            Ok(removed)
        })
    }

    async fn blmove(&self, src: &str, dst: &str, timeout: Duration) -> Result<Option<String>> {
        let until = Instant::now() + timeout;
        loop {
            let notified = self.pushed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let moved = self.with(|s| {
                let Some(v) = s.list(src)?.and_then(|l| l.pop_front()) else {
                    return Ok::<_, BrokerError>(None);
                };
                s.drop_if_empty(src);
                s.list_or_new(dst)?.push_back(v.clone());
                Ok(Some(v))
            })?;
            if moved.is_some() {
                return Ok(moved);
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                return Ok(None);
            }
        }
    }

    async fn lmove_value(&self, src: &str, dst: &str, value: &str) -> Result<bool> {
        let moved = self.with(|s| {
            let Some(l) = s.list(src)? else {
                return Ok::<_, BrokerError>(false);
            };
            let Some(pos) = l.iter().position(|v| v == value) else {
                return Ok(false);
            };
            l.remove(pos);
            s.drop_if_empty(src);
            s.list_or_new(dst)?.push_front(value.into());
            Ok(true)
        })?;
        if moved {
            self.pushed.notify_waiters();
        }
        Ok(moved)
    }

    async fn sadd(&self, key: &str, member: &str) -> Result<bool> {
        self.with(|s| {
            if s.live(key).is_none() {
                s.map.insert(
                    key.into(),
                    Entry {
                        val: Val::Set(BTreeSet::new()),
                        expires: None,
                    },
                );
            }
            match s.live(key) {
                Some(Entry {
                    val: Val::Set(set), ..
                }) => Ok(set.insert(member.into())),
                _ => Err(BrokerError::WrongType { key: key.into() }),
            }
        })
    }

    async fn srem(&self, key: &str, member: &str) -> Result<bool> {
        self.with(|s| {
            let r = match s.live(key) {
                None => Ok(false),
                Some(Entry {
                    val: Val::Set(set), ..
                }) => Ok(set.remove(member)),
                Some(_) => Err(BrokerError::WrongType { key: key.into() }),
            };
            s.drop_if_empty(key);
            r
        })
    }

    async fn smembers(&self, key: &str) -> Result<Vec<String>> {
        self.with(|s| match s.live(key) {
            None => Ok(vec![]),
            Some(Entry {
                val: Val::Set(set), ..
            }) => Ok(set.iter().cloned().collect()),
            Some(_) => Err(BrokerError::WrongType { key: key.into() }),
        })
    }

    async fn publish(&self, channel: &str, payload: &str) -> Result<()> {
        let targets: Vec<mpsc::Sender<Message>> = self.with(|s| {
            let subs = s.subscribers.entry(channel.into()).or_default();
            subs.retain(|t| !t.is_closed());
            subs.clone()
        });
        for t in targets {
            let msg = Message {
                channel: channel.into(),
                payload: payload.into(),
            };
            if t.try_send(msg).is_err() {
                tracing::warn!(channel, "subscriber is not keeping up; message dropped");
            }
        }
        Ok(())
    }

    async fn subscribe(&self, channels: &[String]) -> Result<Subscription> {
        let (tx, rx) = mpsc::channel(1024);
        self.with(|s| {
            for c in channels {
                s.subscribers.entry(c.clone()).or_default().push(tx.clone());
            }
        });
        Ok(Subscription { rx, _guard: None })
    }

    async fn ping(&self) -> Result<()> {
        Ok(())
    }
}
