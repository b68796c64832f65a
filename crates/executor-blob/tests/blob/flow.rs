//! The client flow: check → presigned PUT → finalize → the worker fetches and verifies.

use executor_blob::{BlobHash, BLOB_PREFIX};

use crate::{both_servers, Env};

async fn check_put_finalize_fetch(env: &Env) {
    let bytes = b"print('hello from a blob')\n".to_vec();
    let hash = BlobHash::of_bytes(&bytes);

    // Duplicates are answered once.
    let check = env
        .service
        .check(&[hash.clone(), hash.clone()])
        .await
        .unwrap();
    assert!(check.present.is_empty());
    assert_eq!(check.missing.len(), 1);
    assert_eq!(check.missing[0].hash, hash.to_string());
    let url = &check.missing[0].upload_url;
    assert!(url.contains(BLOB_PREFIX) && url.contains(hash.hex()));

    assert_eq!(env.client_put(url, &hash, bytes.clone()).await, 200);
    let finalized = env
        .service
        .finalize(std::slice::from_ref(&hash))
        .await
        .unwrap();
    assert_eq!(finalized, vec![hash.clone()]);
    assert!(env.store.exists(&hash).await.unwrap());

    // Now the blob is present, and stays live.
    let again = env
        .service
        .check(std::slice::from_ref(&hash))
        .await
        .unwrap();
    assert_eq!(again.present, vec![hash.to_string()]);
    assert!(again.missing.is_empty());

    let mut out = Vec::new();
    let n = env
        .service
        .fetch_for_job(&hash, "job-1", &mut out, 1 << 20)
        .await
        .unwrap();
    assert_eq!(n, bytes.len() as u64);
    assert_eq!(out, bytes);

    let mut out2 = Vec::new();
    env.store
        .fetch_verified(&hash, &mut out2, 1 << 20)
        .await
        .unwrap();
    assert_eq!(out2, bytes);
}
both_servers!(client_flow, super::check_put_finalize_fetch);

async fn finalize_reports_only_uploaded_blobs(env: &Env) {
    let never = BlobHash::of_bytes(b"never uploaded");
    assert!(env.service.finalize(&[never]).await.unwrap().is_empty());
}
both_servers!(
    finalize_without_upload,
    super::finalize_reports_only_uploaded_blobs
);

#[tokio::test]
async fn empty_blob_round_trips() {
    let env = Env::embedded().await;
    let hash = BlobHash::of_bytes(b"");
    let check = env
        .service
        .check(std::slice::from_ref(&hash))
        .await
        .unwrap();
    let status = reqwest::Client::new()
        .put(&check.missing[0].upload_url)
        .header(executor_blob::CHECKSUM_HEADER, hash.checksum_header_value())
        .header(reqwest::header::CONTENT_LENGTH, 0)
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_success(), "{status}");
    let mut out = Vec::new();
    assert_eq!(
        env.store.fetch_verified(&hash, &mut out, 10).await.unwrap(),
        0
    );
}
