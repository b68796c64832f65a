//! One contract, two brokers: every test runs against the in-process broker and against a real
//! Redis (127.0.0.1:6379, or `REDIS_URL`), each Redis test under a fresh key prefix.

use std::sync::Arc;
use std::time::Duration;

use executor_broker::{Broker, MemoryBroker, RedisBroker};

fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

async fn redis() -> Arc<dyn Broker> {
    let prefix = format!("test:{}:", uuid::Uuid::new_v4());
    Arc::new(
        RedisBroker::connect(&redis_url(), &prefix)
            .await
            .expect("Redis must be running for the broker contract (see .ci/run)"),
    )
}

fn memory() -> Arc<dyn Broker> {
    Arc::new(MemoryBroker::new())
}

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory_broker { $( #[tokio::test] async fn $name() { super::$name(super::memory()).await } )* }
        mod redis_broker { $( #[tokio::test] async fn $name() { super::$name(super::redis().await).await } )* }
    };
}

contract!(
    values_and_expiry,
    set_nx_only_once,
    counters_get_ttl_once,
    lists_behave_like_redis,
    bounded_push_refuses_when_full,
    blocking_move_waits_and_wakes,
    move_value_between_lists,
    sets,
    pubsub_delivers_in_order,
    wrong_type_is_an_error,
);

async fn values_and_expiry(b: Arc<dyn Broker>) {
    b.set("k", "v", None).await.unwrap();
    assert_eq!(b.get("k").await.unwrap().as_deref(), Some("v"));
    assert_eq!(b.ttl("k").await.unwrap(), None);
    b.set("short", "v", Some(Duration::from_millis(150)))
        .await
        .unwrap();
    let ttl = b.ttl("short").await.unwrap().expect("ttl set");
    assert!(ttl <= Duration::from_millis(150));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        b.get("short").await.unwrap(),
        None,
        "expired key must be gone"
    );
    assert!(b.expire("k", Duration::from_secs(100)).await.unwrap());
    assert!(b.ttl("k").await.unwrap().unwrap() > Duration::from_secs(90));
    assert!(!b.expire("missing", Duration::from_secs(1)).await.unwrap());
    b.del("k").await.unwrap();
    assert_eq!(b.get("k").await.unwrap(), None);
}

async fn set_nx_only_once(b: Arc<dyn Broker>) {
    assert!(b
        .set_nx("flag", "1", Some(Duration::from_secs(60)))
        .await
        .unwrap());
    assert!(!b.set_nx("flag", "2", None).await.unwrap());
    assert_eq!(b.get("flag").await.unwrap().as_deref(), Some("1"));
}

async fn counters_get_ttl_once(b: Arc<dyn Broker>) {
    assert_eq!(
        b.incr_by("c", 5, Some(Duration::from_secs(30)))
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        b.incr_by("c", -2, Some(Duration::from_secs(3000)))
            .await
            .unwrap(),
        3
    );
    let ttl = b.ttl("c").await.unwrap().unwrap();
    assert!(
        ttl <= Duration::from_secs(30),
        "ttl is set on creation only, got {ttl:?}"
    );
    assert_eq!(b.incr_by("nottl", 1, None).await.unwrap(), 1);
    assert_eq!(b.ttl("nottl").await.unwrap(), None);
}

async fn lists_behave_like_redis(b: Arc<dyn Broker>) {
    for v in ["a", "b", "c", "b"] {
        b.rpush("l", v).await.unwrap();
    }
    assert_eq!(b.llen("l").await.unwrap(), 4);
    assert_eq!(b.lrange("l", 0, -1).await.unwrap(), ["a", "b", "c", "b"]);
    assert_eq!(b.lrange("l", 1, 2).await.unwrap(), ["b", "c"]);
    assert_eq!(b.lrange("l", 3, 100).await.unwrap(), ["b"]);
    assert_eq!(b.lrange("l", 5, 10).await.unwrap(), Vec::<String>::new());
    assert_eq!(b.lrem("l", 0, "b").await.unwrap(), 2);
    assert_eq!(b.lrange("l", 0, -1).await.unwrap(), ["a", "c"]);
    for v in ["d", "e"] {
        b.rpush("l", v).await.unwrap();
    }
    b.ltrim("l", 2, -1).await.unwrap();
    assert_eq!(b.lrange("l", 0, -1).await.unwrap(), ["d", "e"]);
    b.ltrim("l", 1, 0).await.unwrap();
    assert_eq!(
        b.llen("l").await.unwrap(),
        0,
        "an empty range deletes the list"
    );
    assert_eq!(
        b.lrange("missing", 0, -1).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(b.llen("missing").await.unwrap(), 0);
}

async fn bounded_push_refuses_when_full(b: Arc<dyn Broker>) {
    assert_eq!(b.rpush_bounded("q", "1", 2).await.unwrap(), Some(1));
    assert_eq!(b.rpush_bounded("q", "2", 2).await.unwrap(), Some(2));
    assert_eq!(b.rpush_bounded("q", "3", 2).await.unwrap(), None);
    assert_eq!(b.lrange("q", 0, -1).await.unwrap(), ["1", "2"]);
}

async fn blocking_move_waits_and_wakes(b: Arc<dyn Broker>) {
    assert_eq!(
        b.blmove("src", "dst", Duration::from_millis(100))
            .await
            .unwrap(),
        None
    );
    let b2 = b.clone();
    let waiter = tokio::spawn(async move {
        b2.blmove("src", "dst", Duration::from_secs(5))
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.rpush("src", "job1").await.unwrap();
    assert_eq!(waiter.await.unwrap().as_deref(), Some("job1"));
    assert_eq!(b.lrange("dst", 0, -1).await.unwrap(), ["job1"]);
    assert_eq!(b.llen("src").await.unwrap(), 0);
    // FIFO order
    b.rpush("src", "x").await.unwrap();
    b.rpush("src", "y").await.unwrap();
    assert_eq!(
        b.blmove("src", "dst", Duration::from_secs(1))
            .await
            .unwrap()
            .as_deref(),
        Some("x")
    );
}

async fn move_value_between_lists(b: Arc<dyn Broker>) {
    b.rpush("processing", "j1").await.unwrap();
    b.rpush("processing", "j2").await.unwrap();
    b.rpush("queue", "j9").await.unwrap();
    assert!(b.lmove_value("processing", "queue", "j2").await.unwrap());
    assert!(!b.lmove_value("processing", "queue", "nope").await.unwrap());
    assert_eq!(
        b.lrange("queue", 0, -1).await.unwrap(),
        ["j2", "j9"],
        "requeued at the head"
    );
    assert_eq!(b.lrange("processing", 0, -1).await.unwrap(), ["j1"]);
}

async fn sets(b: Arc<dyn Broker>) {
    assert!(b.sadd("s", "a").await.unwrap());
    assert!(!b.sadd("s", "a").await.unwrap());
    b.sadd("s", "b").await.unwrap();
    let mut m = b.smembers("s").await.unwrap();
    m.sort();
    assert_eq!(m, ["a", "b"]);
    assert!(b.srem("s", "a").await.unwrap());
    assert!(!b.srem("s", "a").await.unwrap());
    assert_eq!(b.smembers("s").await.unwrap(), ["b"]);
}

async fn pubsub_delivers_in_order(b: Arc<dyn Broker>) {
    let mut sub = b
        .subscribe(&["ctrl:1".into(), "stdin:1".into()])
        .await
        .unwrap();
    b.publish("other", "ignored").await.unwrap();
    for i in 0..50 {
        b.publish("stdin:1", &format!("chunk{i}")).await.unwrap();
    }
    b.publish("ctrl:1", "{\"type\":\"kill\"}").await.unwrap();
    for i in 0..50 {
        let m = tokio::time::timeout(Duration::from_secs(5), sub.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (m.channel.as_str(), m.payload),
            ("stdin:1", format!("chunk{i}"))
        );
    }
    let m = tokio::time::timeout(Duration::from_secs(5), sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.channel, "ctrl:1");
}

async fn wrong_type_is_an_error(b: Arc<dyn Broker>) {
    b.rpush("list", "a").await.unwrap();
    assert!(b.get("list").await.is_err());
    b.set("str", "a", None).await.unwrap();
    assert!(b.rpush("str", "x").await.is_err());
}

/// A Redis restart: commands fail while it is down and work again once it is back, and a
/// subscription resumes without being re-created.
#[tokio::test]
async fn redis_broker_reconnects_after_a_restart() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempdir();
    let start = || {
        std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server binary (installed by scripts/setup.sh)")
    };
    let mut server = start();
    let url = format!("redis://127.0.0.1:{port}");
    let b = wait_connect(&url).await;
    b.set("k", "1", None).await.unwrap();
    let mut sub = b.subscribe(&["ctrl:x".into()]).await.unwrap();

    server.kill().unwrap();
    server.wait().unwrap();
    assert!(b.get("k").await.is_err() || b.get("k").await.unwrap().is_none());
    let mut server = start();
    let mut ok = false;
    for _ in 0..100 {
        if b.set("k", "2", None).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "broker did not reconnect after Redis came back");
    assert_eq!(b.get("k").await.unwrap().as_deref(), Some("2"));
    // The subscription re-subscribes by itself: publish until it sees a message.
    let mut got = None;
    for _ in 0..100 {
        b.publish("ctrl:x", "hello").await.unwrap();
        if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(100), sub.recv()).await {
            got = Some(m.payload);
            break;
        }
    }
    assert_eq!(got.as_deref(), Some("hello"));
    server.kill().unwrap();
    server.wait().unwrap();
}

async fn wait_connect(url: &str) -> RedisBroker {
    for _ in 0..100 {
        if let Ok(b) = RedisBroker::connect(url, "").await {
            return b;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server did not start on {url}");
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("executor-redis-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
