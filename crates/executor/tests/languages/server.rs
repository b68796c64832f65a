//! The suite's server: the shared `executor serve` harness on slots 300+, without a blob store.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

pub use crate::common::serve::{scratch, shipped_languages_dir, Server, APP_KEY};
use crate::common::serve::{start, Options};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Starts `executor serve` on `languages` with 2 slots of its own.
pub async fn server(languages: &Path) -> Server {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    start(Options {
        languages,
        first_slot: 300 + n * 2,
        blobs: false,
        start_wait_ms: 10_000,
        env: vec![],
    })
    .await
}
