//! Starts the test harness of `tests/push` (a stand-in `POST /v1/channel-auth` and a
//! `POST /test/publish` route driving the Rust HttpPublisher) around the embedded push server,
//! or around an external Pusher-compatible server, and prints the environment for
//! `tests/node/e2e.mjs` as one JSON line. Runs until stdin closes or Ctrl-C.
//!
//! ```text
//! cargo run -p executor-push --example push_test_server                 # embedded server
//! cargo run -p executor-push --example push_test_server -- 127.0.0.1 6001 # external (Sockudo)
//! ```
//! For an external server the app credentials come from PUSHER_APP_ID, PUSHER_KEY and
//! PUSHER_SECRET.

#[path = "../tests/push/harness.rs"]
mod harness;

use executor_push::AppCredentials;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let harness = match args.as_slice() {
        [] => harness::Harness::embedded().await,
        [host, port] => {
            let var = |n: &str| {
                std::env::var(n)
                    .unwrap_or_else(|_| panic!("{n} must be set for an external server"))
            };
            let creds = AppCredentials::new(
                var("PUSHER_APP_ID"),
                var("PUSHER_KEY"),
                var("PUSHER_SECRET"),
            );
            harness::Harness::external(host.clone(), port.parse().expect("port is a number"), creds)
                .await
        }
        _ => {
            eprintln!("usage: push_test_server [PUSH_HOST PUSH_PORT]");
            std::process::exit(2);
        }
    };
    println!("{}", harness.env_json());
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    });
    tokio::select! {
        _ = stdin_closed => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    harness.stop().await;
}
