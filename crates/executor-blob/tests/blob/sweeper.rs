//! The sweeper deletes what nobody uses and spares what is live or in use.

use std::time::Duration;

use executor_blob::{BlobHash, LivenessStore as _, Sweeper, ORPHAN_GRACE};

use crate::{both_servers, Env};

async fn upload(env: &Env, bytes: &[u8]) -> BlobHash {
    let hash = BlobHash::of_bytes(bytes);
    let url = env.store.presign_put(&hash).to_string();
    assert_eq!(env.client_put(&url, &hash, bytes.to_vec()).await, 200);
    hash
}

async fn sweeps_expired_spares_live_and_in_use(env: &Env) {
    let sweeper = Sweeper::new(env.store.clone(), env.liveness.clone());

    // Expired: last used long enough ago (an idle expiry already reached).
    let expired = upload(env, b"expired").await;
    assert!(env.liveness.touch(&expired, Duration::ZERO).await.unwrap());
    // Live: finalized, idle expiry days away.
    let live = upload(env, b"live").await;
    assert_eq!(
        env.service
            .finalize(std::slice::from_ref(&live))
            .await
            .unwrap(),
        vec![live.clone()]
    );
    // In use: expired, but a job holds it right now.
    let in_use = upload(env, b"in use").await;
    assert!(env.liveness.touch(&in_use, Duration::ZERO).await.unwrap());
    assert!(env
        .liveness
        .pin(&in_use, "job-7", Duration::from_secs(600))
        .await
        .unwrap());
    // Orphan: uploaded, never finalized.
    let orphan = upload(env, b"orphan").await;

    let report = sweeper.sweep_once().await.unwrap();
    assert_eq!(report.blobs_deleted, vec![expired.clone()]);
    assert_eq!(report.failures, 0);
    assert!(!env.store.exists(&expired).await.unwrap());
    assert!(env.store.exists(&live).await.unwrap());
    assert!(env.store.exists(&in_use).await.unwrap());
    assert!(
        env.store.exists(&orphan).await.unwrap(),
        "a fresh upload awaits its finalize"
    );
    assert!(!env
        .liveness
        .index_members()
        .await
        .unwrap()
        .contains(&expired));

    // Once the upload window and the grace have passed, the never-finalized upload goes.
    let later = jiff::Timestamp::now()
        + jiff::SignedDuration::try_from(env.store.config().url_ttl + ORPHAN_GRACE).unwrap()
        + jiff::SignedDuration::from_secs(60);
    let report = sweeper.sweep_once_at(later).await.unwrap();
    assert_eq!(report.blobs_deleted, vec![orphan.clone()]);
    assert!(env.store.exists(&live).await.unwrap());
    assert!(env.store.exists(&in_use).await.unwrap());

    // The job is done with it: next pass deletes it.
    env.liveness.unpin(&in_use, "job-7").await.unwrap();
    let report = sweeper.sweep_once().await.unwrap();
    assert_eq!(report.blobs_deleted, vec![in_use.clone()]);
    assert!(!env.store.exists(&in_use).await.unwrap());

    // Using a blob keeps it: a check refreshes its idle expiry.
    env.liveness.touch(&live, Duration::ZERO).await.unwrap();
    let check = env
        .service
        .check(std::slice::from_ref(&live))
        .await
        .unwrap();
    assert_eq!(check.present, vec![live.to_string()]);
    assert!(env.liveness.is_live(&live).await.unwrap());
    sweeper.sweep_once().await.unwrap();
    assert!(env.store.exists(&live).await.unwrap());
}
both_servers!(sweeper_safety, super::sweeps_expired_spares_live_and_in_use);

#[tokio::test]
async fn a_blob_being_swept_is_reported_missing() {
    let env = Env::embedded().await;
    let hash = upload(&env, b"going away").await;
    env.liveness.touch(&hash, Duration::ZERO).await.unwrap();
    // The sweeper has claimed it and is about to delete.
    assert!(env
        .liveness
        .begin_sweep(&hash, Duration::from_secs(600))
        .await
        .unwrap());
    let check = env
        .service
        .check(std::slice::from_ref(&hash))
        .await
        .unwrap();
    assert_eq!(
        check.missing.len(),
        1,
        "not reported present while being deleted"
    );
    assert!(env
        .service
        .finalize(std::slice::from_ref(&hash))
        .await
        .unwrap()
        .is_empty());
    let err = env
        .service
        .fetch_for_job(&hash, "job-9", &mut Vec::new(), 1 << 20)
        .await
        .unwrap_err();
    assert!(
        matches!(err, executor_blob::BlobError::Missing { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn artifacts_expire_with_the_job_output() {
    let env = Env::embedded().await;
    let sweeper = Sweeper::new(env.store.clone(), env.liveness.clone());
    let (file, len) = env.file_with("out.txt", b"result").await;
    let a = env
        .store
        .upload_artifact("job-a", "out.txt", file, len, "text/plain; charset=utf-8")
        .await
        .unwrap();
    let report = sweeper.sweep_once().await.unwrap();
    assert!(report.artifacts_deleted.is_empty());
    assert_eq!(reqwest::get(&a.url).await.unwrap().status(), 200);

    let after = jiff::Timestamp::now()
        + jiff::SignedDuration::try_from(env.store.config().artifact_ttl).unwrap()
        + jiff::SignedDuration::from_secs(60);
    let report = sweeper.sweep_once_at(after).await.unwrap();
    assert_eq!(
        report.artifacts_deleted,
        vec!["artifacts/job-a/out.txt".to_owned()]
    );
    assert_eq!(reqwest::get(&a.url).await.unwrap().status(), 404);
}
