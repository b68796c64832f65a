//! Bytes that do not match their ref never reach a job.

use executor_blob::{BlobError, BlobHash};

use crate::{both_servers, Env};

async fn store_refuses_mismatching_upload(env: &Env) {
    let hash = BlobHash::of_bytes(b"the real content");
    let check = env
        .service
        .check(std::slice::from_ref(&hash))
        .await
        .unwrap();
    let url = &check.missing[0].upload_url;

    // Correctly signed, correct checksum header, wrong bytes: the store checks the checksum.
    let status = env.client_put(url, &hash, b"forged content".to_vec()).await;
    assert_eq!(status, 400, "s3s-fs answers BadDigest");

    // s3s-fs 0.14.1 leaves the refused bytes in place (a known bug), so the worker's own
    // verification is what protects jobs, and it removes the bad object.
    let mut out = Vec::new();
    let err = env
        .store
        .fetch_verified(&hash, &mut out, 1 << 20)
        .await
        .expect_err("bad bytes must not verify");
    eprintln!("after a refused PUT, fetch_verified says: {err}");
    if let BlobError::HashMismatch { expected, actual } = &err {
        assert_eq!(expected, &hash);
        assert_eq!(actual, &BlobHash::of_bytes(b"forged content"));
    } else {
        // A store without the bug keeps nothing.
        assert!(matches!(err, BlobError::Missing { .. }), "{err}");
    }
    assert!(!env.store.exists(&hash).await.unwrap());

    // The client retries with the right bytes and the flow completes.
    assert_eq!(
        env.client_put(url, &hash, b"the real content".to_vec())
            .await,
        200
    );
    assert_eq!(
        env.service
            .finalize(std::slice::from_ref(&hash))
            .await
            .unwrap(),
        vec![hash.clone()]
    );
    let mut out = Vec::new();
    env.store
        .fetch_verified(&hash, &mut out, 1 << 20)
        .await
        .unwrap();
    assert_eq!(out, b"the real content");
}
both_servers!(mismatching_upload, super::store_refuses_mismatching_upload);

async fn missing_swapped_and_oversized(env: &Env) {
    let missing = BlobHash::of_bytes(b"never uploaded");
    let mut sink = Vec::new();
    let err = env
        .store
        .fetch_verified(&missing, &mut sink, 1 << 20)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, BlobError::Missing { hash } if hash == &missing),
        "{err}"
    );
    let err = env
        .service
        .fetch_for_job(&missing, "job-m", &mut sink, 1 << 20)
        .await
        .unwrap_err();
    assert!(matches!(err, BlobError::Missing { .. }), "{err}");

    // Bytes swapped in the store behind the service's back (a PUT signed without checksum).
    let hash = BlobHash::of_bytes(b"expected bytes");
    let (file, len) = env.file_with("swap", b"swapped bytes!").await;
    env.store
        .put_object(&hash.key(), file, len, "application/octet-stream")
        .await
        .unwrap();
    assert!(env.store.exists(&hash).await.unwrap());
    let err = env
        .service
        .fetch_for_job(&hash, "job-s", &mut Vec::new(), 1 << 20)
        .await
        .unwrap_err();
    match err {
        BlobError::HashMismatch { expected, actual } => {
            assert_eq!(expected, hash);
            assert_eq!(actual, BlobHash::of_bytes(b"swapped bytes!"));
        }
        other => panic!("expected HashMismatch, got {other}"),
    }
    // The corrupt object is gone, so the next check asks for an upload.
    let check = env
        .service
        .check(std::slice::from_ref(&hash))
        .await
        .unwrap();
    assert_eq!(check.missing.len(), 1);

    // Larger than the caller accepts.
    let big = vec![7u8; 4096];
    let big_hash = BlobHash::of_bytes(&big);
    let url = env.store.presign_put(&big_hash).to_string();
    assert_eq!(env.client_put(&url, &big_hash, big).await, 200);
    let err = env
        .store
        .fetch_verified(&big_hash, &mut Vec::new(), 4095)
        .await
        .unwrap_err();
    assert!(
        matches!(err, BlobError::TooLarge { limit: 4095, .. }),
        "{err}"
    );
    assert_eq!(
        env.store
            .fetch_verified(&big_hash, &mut Vec::new(), 4096)
            .await
            .unwrap(),
        4096
    );
}
both_servers!(
    missing_swapped_oversized,
    super::missing_swapped_and_oversized
);
