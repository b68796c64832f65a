//! Runs the embedded S3 store on its own: `executor-s3-server <data-dir> [<addr>]` (default
//! `127.0.0.1:0`). Prints one JSON line with the endpoint, bucket, region and credentials, then
//! serves until its standard input closes (so a parent that dies takes it along) or it is killed.
//! Used by the tests to exercise the store as a separate process; handy for local experiments.

use executor_blob::EmbeddedS3;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let data_dir = args
        .next()
        .ok_or("usage: executor-s3-server <data-dir> [<addr>]")?;
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let (server, config) = EmbeddedS3::start(&data_dir, listener).await?;
    let line = serde_json::json!({
        "endpoint": config.endpoint.as_str(),
        "bucket": config.bucket,
        "region": config.region,
        "accessKeyId": config.access_key_id,
        "secretAccessKey": config.secret_access_key.expose(),
    });
    println!("{line}");
    let mut stdin = tokio::io::stdin();
    let mut sink = tokio::io::sink();
    let _ = tokio::io::copy(&mut stdin, &mut sink).await;
    drop(server);
    Ok(())
}
