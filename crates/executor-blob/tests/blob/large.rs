//! A 200 MB blob streams through `fetch_verified` in chunks, without being held in memory.

use std::pin::Pin;
use std::task::{Context, Poll};

use executor_blob::{BlobHash, CHECKSUM_HEADER};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::Env;

const SIZE: u64 = 200 * 1024 * 1024;

/// Counts bytes and remembers the largest single write; keeps nothing.
#[derive(Default)]
struct CountingSink {
    total: u64,
    writes: u64,
    largest: usize,
}

impl AsyncWrite for CountingSink {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.total += buf.len() as u64;
        self.writes += 1;
        self.largest = self.largest.max(buf.len());
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Peak resident set of this process, in KiB.
fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

#[tokio::test]
async fn two_hundred_megabytes_stream_through() {
    // The store runs in its own process, so this process's memory is the client's alone.
    let env = Env::separate_process().await;
    let path = env.work.path().join("big.bin");

    // Generate the file chunk by chunk (xorshift, not compressible), hashing as we go.
    let mut hasher = Sha256::new();
    {
        let mut f = tokio::fs::File::create(&path).await.unwrap();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut chunk = vec![0u8; 1 << 20];
        for _ in 0..(SIZE >> 20) {
            for word in chunk.chunks_exact_mut(8) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                word.copy_from_slice(&state.to_le_bytes());
            }
            hasher.update(&chunk);
            f.write_all(&chunk).await.unwrap();
        }
        f.flush().await.unwrap();
    }
    let hash = BlobHash::parse(&format!("sha256:{}", hex::encode(hasher.finalize()))).unwrap();

    // Upload as a client would, streamed from the file, through the presigned URL.
    let url = env.store.presign_put(&hash);
    let file = tokio::fs::File::open(&path).await.unwrap();
    let resp = reqwest::Client::new()
        .put(url)
        .header(CHECKSUM_HEADER, hash.checksum_header_value())
        .header(reqwest::header::CONTENT_LENGTH, SIZE)
        .body(reqwest::Body::wrap_stream(
            tokio_util::io::ReaderStream::new(file),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());

    // Reset the peak to the current resident set where the kernel allows it.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = vm_hwm_kib();
    let mut sink = CountingSink::default();
    let n = env
        .service
        .fetch_for_job(&hash, "job-big", &mut sink, SIZE)
        .await
        .unwrap();
    let growth_mib = vm_hwm_kib().saturating_sub(before) / 1024;

    eprintln!(
        "streamed {n} bytes in {} writes (largest {} B); peak RSS growth {growth_mib} MiB",
        sink.writes, sink.largest
    );
    assert_eq!(n, SIZE);
    assert_eq!(sink.total, SIZE);
    assert!(
        sink.writes > 100,
        "written in chunks, got {} writes",
        sink.writes
    );
    assert!(
        sink.largest <= 8 << 20,
        "largest write {} bytes",
        sink.largest
    );
    assert!(
        growth_mib < 64,
        "peak RSS grew by {growth_mib} MiB while streaming a 200 MiB blob"
    );
}
