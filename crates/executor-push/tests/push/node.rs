//! The Node end-to-end test: pusher-js subscribes through the embedded server and a stand-in
//! channel-auth route; the official `pusher` SDK and the Rust HttpPublisher publish.
//! Installs the locked npm packages itself when `tests/node/node_modules` is missing.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::harness::Harness;

fn node_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/node")
}

fn ensure_node_modules() {
    let dir = node_dir();
    if dir.join("node_modules/pusher-js/package.json").exists()
        && dir.join("node_modules/pusher/package.json").exists()
    {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .status()
        .expect("npm must be installed to run the Node end-to-end test (tests/node/setup.sh)");
    assert!(status.success(), "npm ci in {} failed", dir.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pusher_js_and_pusher_sdk_end_to_end() {
    tokio::task::spawn_blocking(ensure_node_modules)
        .await
        .unwrap();
    let harness = Harness::embedded().await;
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg("e2e.mjs")
        .current_dir(node_dir())
        .envs(harness.env());
    let out = cmd
        .output()
        .await
        .expect("node must be installed to run the Node end-to-end test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!("no JSON summary from node\nstdout:\n{stdout}\nstderr:\n{stderr}")
        });
    assert!(
        out.status.success() && summary["ok"] == true,
        "node e2e failed: {summary:#}\nstderr:\n{stderr}"
    );
    assert_eq!(summary["checks"]["sdkEvents"], 50);
    assert_eq!(summary["checks"]["rustEvents"], 300);
    assert_eq!(summary["checks"]["disallowedChannel"], 403);
    assert_eq!(summary["checks"]["cacheMiss"], true);
    harness.stop().await;
}
