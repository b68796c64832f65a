//! Artifacts upload streamed and download through their signed URL with their media type.

use executor_blob::{guess_mime, BlobError, ARTIFACT_PREFIX};

use crate::{both_servers, Env};

async fn upload_and_download(env: &Env) {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..100_000u32).map(|i| (i % 251) as u8));
    let (file, len) = env.file_with("plot.png", &png).await;
    let mime = guess_mime("plots/plot.png", &png[..executor_blob::SNIFF_LEN]);
    let job = "3f1c9a52-7d2e-4f0b-9a57-0c1d2e3f4a5b";
    let artifact = env
        .store
        .upload_artifact(job, "plots/plot.png", file, len, &mime)
        .await
        .unwrap();
    assert_eq!(artifact.name, "plots/plot.png");
    assert_eq!(artifact.mime_type, "image/png");
    assert_eq!(artifact.bytes, png.len() as u64);
    assert!(artifact
        .url
        .contains(&format!("{ARTIFACT_PREFIX}{job}/plots/plot.png")));

    let resp = reqwest::get(&artifact.url).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "image/png");
    assert_eq!(resp.bytes().await.unwrap().as_ref(), png.as_slice());

    // The wire shape is the contract's.
    let json = serde_json::to_value(&artifact).unwrap();
    assert_eq!(json["mimeType"], "image/png");
    assert_eq!(json["bytes"], png.len() as u64);

    // A signed URL does not open another job's artifact.
    let other = artifact
        .url
        .replace(job, "00000000-0000-0000-0000-000000000000");
    assert_eq!(reqwest::get(other).await.unwrap().status(), 403);

    // Names that could escape the job's prefix are refused.
    for bad in ["../x", "/abs", "a//b", "a/./b", ""] {
        let (file, len) = env.file_with("bad", b"x").await;
        let err = env
            .store
            .upload_artifact(job, bad, file, len, "text/plain")
            .await
            .unwrap_err();
        assert!(matches!(err, BlobError::InvalidName { .. }), "{bad}: {err}");
    }
}
both_servers!(artifact_round_trip, super::upload_and_download);
