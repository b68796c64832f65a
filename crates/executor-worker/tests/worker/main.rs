//! The worker driven deterministically (`Worker::step`, `Worker::reap_once`) over the in-process
//! broker and a recording publisher, with real sandboxes: event order and sizes, the reaper,
//! a push server that is down, a kill before claim.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use executor_broker::jobs::{InputEntry, JobStore};
use executor_broker::{Broker, MemoryBroker};
use executor_languages::Registry;
use executor_push::MemoryPublisher;
use executor_types::{keys, JobSpec, JobState, SchemaValidator};
use executor_worker::{Worker, WorkerConfig};
use serde_json::json;

static NEXT: AtomicU32 = AtomicU32::new(0);

struct Env {
    worker: Arc<Worker>,
    broker: Arc<dyn Broker>,
    events: MemoryPublisher,
    languages: Arc<Registry>,
}

fn env() -> Env {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let broker: Arc<dyn Broker> = Arc::new(MemoryBroker::new());
    let languages = Arc::new(Registry::load(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../languages")),
        &SchemaValidator::new(),
    ));
    let events = MemoryPublisher::new();
    let config = WorkerConfig {
        slots: 1,
        first_slot: 600 + n,
        start_wait: Duration::from_millis(10),
        state_dir: std::env::temp_dir()
            .join(format!("executor-worker-test-{}-{n}", std::process::id())),
        ..WorkerConfig::default()
    };
    let worker = Worker::new(
        config,
        broker.clone(),
        languages.clone(),
        Arc::new(events.clone()),
        None,
    )
    .expect("worker");
    Env {
        worker,
        broker,
        events,
        languages,
    }
}

async fn submit(e: &Env, language: &str, name: &str, source: &str) -> String {
    let lang = e.languages.resolve(language, None).unwrap();
    let id = uuid::Uuid::new_v4().to_string();
    let spec: JobSpec = serde_json::from_value(json!({
        "jobId": id, "language": lang.name(), "version": lang.version, "collectOutput": true, "createdAtMs": 1,
        "files": [{"name": name, "content": source}],
        "limits": serde_json::to_value(&lang.manifest.default_limits).unwrap(),
    }))
    .unwrap();
    assert!(JobStore::new(e.broker.clone())
        .submit(&spec, 100)
        .await
        .unwrap());
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn events_are_ordered_sized_and_complete() {
    let e = env();
    let src = "import sys\nfor i in range(4000):\n    print('out', i, 'é' * 20)\n    if i % 7 == 0: print('err', i, file=sys.stderr)\n";
    let id = submit(&e, "python", "main.py", src).await;
    assert_eq!(
        e.worker.step(Duration::from_secs(5)).await.as_deref(),
        Some(id.as_str())
    );
    let events = e.events.events(&keys::channel(&id));
    assert_eq!(events.first().unwrap().name, "stage");
    assert_eq!(events.first().unwrap().data, json!({"phase": "running"}));
    assert_eq!(events.last().unwrap().name, "result");
    assert_eq!(events.iter().filter(|ev| ev.name == "result").count(), 1);
    let mut seq = 0;
    let (mut out, mut err) = (String::new(), String::new());
    for ev in &events {
        assert!(
            ev.data_string().len() <= executor_push::DEFAULT_MAX_EVENT_BYTES,
            "event over the push limit"
        );
        match ev.name.as_str() {
            "stdout" | "stderr" => {
                assert_eq!(ev.data["seq"], seq, "seq rises by one with no gap");
                seq += 1;
                let c = ev.data["chunk"].as_str().unwrap();
                if ev.name == "stdout" {
                    out.push_str(c)
                } else {
                    err.push_str(c)
                }
            }
            _ => {}
        }
    }
    let want_out: String = (0..4000)
        .map(|i| format!("out {i} {}\n", "é".repeat(20)))
        .collect();
    let want_err: String = (0..4000)
        .filter(|i| i % 7 == 0)
        .map(|i| format!("err {i}\n"))
        .collect();
    assert_eq!(out, want_out);
    assert_eq!(err, want_err);
    assert!(
        seq < 4000,
        "output was coalesced into fewer events than lines ({seq})"
    );
    // the result is also on the cache channel for late joiners, and stored
    assert_eq!(e.events.events(&keys::cache_channel(&id)).len(), 1);
    let store = JobStore::new(e.broker.clone());
    assert_eq!(
        store.status(&id).await.unwrap().unwrap().state,
        JobState::Done
    );
    assert_eq!(store.output(&id).await.unwrap().unwrap().stdout, want_out);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_server_that_is_down_does_not_fail_the_job() {
    let e = env();
    e.events.set_failing(true);
    let id = submit(&e, "bash", "main.sh", "echo still ran").await;
    e.worker.step(Duration::from_secs(5)).await.unwrap();
    let store = JobStore::new(e.broker.clone());
    assert_eq!(
        store.status(&id).await.unwrap().unwrap().state,
        JobState::Done
    );
    assert_eq!(
        store.output(&id).await.unwrap().unwrap().stdout,
        "still ran\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_sent_before_the_claim_is_honoured() {
    let e = env();
    let id = submit(&e, "bash", "main.sh", "echo should not run").await;
    let store = JobStore::new(e.broker.clone());
    store.send_input(&id, InputEntry::Kill).await.unwrap();
    e.worker.step(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        store.status(&id).await.unwrap().unwrap().state,
        JobState::Killed
    );
    let out = store.output(&id).await.unwrap().unwrap();
    assert_eq!(
        (out.stdout.as_str(), out.signal.as_deref()),
        ("", Some("SIGKILL"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reaper_requeues_unstarted_jobs_and_ends_running_ones() {
    let e = env();
    let store = JobStore::new(e.broker.clone());
    let waiting = submit(&e, "bash", "main.sh", "echo requeued and ran").await;
    let running = submit(&e, "bash", "main.sh", "echo x").await;
    // A worker "dead" claimed both, then vanished without renewing its lease.
    for id in [&waiting, &running] {
        assert_eq!(
            e.broker
                .blmove(
                    keys::QUEUE,
                    "worker:dead:processing",
                    Duration::from_secs(1)
                )
                .await
                .unwrap()
                .as_deref(),
            Some(id.as_str())
        );
    }
    e.broker.sadd("workers", "dead").await.unwrap();
    store
        .set_state(&waiting, JobState::Starting, None)
        .await
        .unwrap();
    store
        .set_state(&running, JobState::Running, None)
        .await
        .unwrap();
    // A live worker's jobs are left alone.
    e.broker.sadd("workers", "alive-one").await.unwrap();
    e.broker
        .set("worker:alive-one:alive", "1", Some(Duration::from_secs(60)))
        .await
        .unwrap();
    e.broker
        .rpush("worker:alive-one:processing", "someone-elses-job")
        .await
        .unwrap();

    assert_eq!(e.worker.reap_once().await.unwrap(), 2);
    assert_eq!(
        e.broker.lrange(keys::QUEUE, 0, -1).await.unwrap(),
        std::slice::from_ref(&waiting)
    );
    assert_eq!(
        store.status(&waiting).await.unwrap().unwrap().state,
        JobState::Queued
    );
    let st = store.status(&running).await.unwrap().unwrap();
    assert_eq!(st.state, JobState::Error);
    assert!(st.reason.unwrap().contains("worker"));
    assert!(store
        .output(&running)
        .await
        .unwrap()
        .unwrap()
        .error
        .is_some());
    assert_eq!(e.broker.llen("worker:dead:processing").await.unwrap(), 0);
    assert!(!e
        .broker
        .smembers("workers")
        .await
        .unwrap()
        .contains(&"dead".to_string()));
    assert_eq!(
        e.broker.llen("worker:alive-one:processing").await.unwrap(),
        1
    );
    // and the requeued job then runs to completion
    store.start(&waiting).await.unwrap();
    e.worker.step(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        store.output(&waiting).await.unwrap().unwrap().stdout,
        "requeued and ran\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_is_delivered_in_order_and_dropped_from_the_log_once_delivered() {
    let e = env();
    let id = submit(
        &e,
        "python",
        "main.py",
        "import sys\nfor line in sys.stdin:\n    print(line.strip().upper())",
    )
    .await;
    let store = JobStore::new(e.broker.clone());
    for i in 0..50 {
        store
            .send_input(&id, InputEntry::Chunk(format!("line {i}\n")))
            .await
            .unwrap();
    }
    store.send_input(&id, InputEntry::Close).await.unwrap();
    e.worker.step(Duration::from_secs(5)).await.unwrap();
    let want: String = (0..50).map(|i| format!("LINE {i}\n")).collect();
    assert_eq!(store.output(&id).await.unwrap().unwrap().stdout, want);
    assert_eq!(
        e.broker.llen(&keys::input_log(&id)).await.unwrap(),
        0,
        "delivered input is not kept"
    );
}
