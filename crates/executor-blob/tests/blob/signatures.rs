//! Presigned URLs are only good as signed: any change, or expiry, is refused by the store.

use std::time::Duration;

use executor_blob::BlobHash;

use crate::{both_servers, Env};

fn replace_param(url: &str, name: &str, f: impl Fn(&str) -> String) -> String {
    let mut u = reqwest::Url::parse(url).unwrap();
    let pairs: Vec<(String, String)> = u
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == name { f(&v) } else { v.into_owned() };
            (k.into_owned(), v)
        })
        .collect();
    assert!(pairs.iter().any(|(k, _)| k == name), "{name} in {url}");
    u.query_pairs_mut().clear().extend_pairs(pairs);
    u.to_string()
}

async fn refused(env: &Env, url: &str, hash: &BlobHash, bytes: &[u8]) {
    let status = env.client_put(url, hash, bytes.to_vec()).await;
    assert_eq!(
        status, 403,
        "tampered or expired URL must be refused: {url}"
    );
}

async fn tampered_and_expired_urls(env: &Env) {
    let bytes = b"payload".to_vec();
    let hash = BlobHash::of_bytes(&bytes);
    let good = env.store.presign_put(&hash).to_string();

    // One hex digit of the signature changed.
    let bad_sig = replace_param(&good, "X-Amz-Signature", |s| {
        let mut c: Vec<char> = s.chars().collect();
        c[0] = if c[0] == '0' { '1' } else { '0' };
        c.into_iter().collect()
    });
    refused(env, &bad_sig, &hash, &bytes).await;

    // Another key, same signature.
    let other = BlobHash::of_bytes(b"other");
    let bad_key = good.replace(hash.hex(), other.hex());
    assert_ne!(bad_key, good);
    refused(env, &bad_key, &other, b"other").await;

    // A longer validity, same signature.
    let bad_expiry = replace_param(&good, "X-Amz-Expires", |_| "604800".to_owned());
    refused(env, &bad_expiry, &hash, &bytes).await;

    // Signed two hours ago with a 15-minute window.
    let past = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2);
    let expired = env.store.presign_put_at(&hash, past).to_string();
    refused(env, &expired, &hash, &bytes).await;

    // Without the signed checksum header.
    let status = reqwest::Client::new()
        .put(&good)
        .body(bytes.clone())
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 403, "a PUT without the pinned checksum header");

    // Nothing got in.
    assert!(!env.store.exists(&hash).await.unwrap());
    assert!(!env.store.exists(&other).await.unwrap());

    // The untouched URL works.
    assert_eq!(env.client_put(&good, &hash, bytes.clone()).await, 200);
    assert!(env.store.exists(&hash).await.unwrap());
    // Control: re-encoding the query unchanged keeps the URL valid, so the refusals above are
    // due to the changed values.
    for param in ["X-Amz-Signature", "X-Amz-Expires"] {
        let same = replace_param(&good, param, str::to_owned);
        assert_eq!(
            env.client_put(&same, &hash, bytes.clone()).await,
            200,
            "{param}"
        );
    }

    // Download URLs too: another key with the same signature is refused.
    let get = env.store.presign_get(&hash.key(), Duration::from_secs(60));
    let ok = reqwest::get(get.clone()).await.unwrap();
    assert_eq!(ok.status(), 200);
    let bad_get = get.as_str().replace(hash.hex(), other.hex());
    assert_eq!(reqwest::get(bad_get).await.unwrap().status(), 403);
}
both_servers!(tampered_urls, super::tampered_and_expired_urls);
