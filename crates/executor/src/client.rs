//! `executor run`: a command-line client. Submits files, feeds stdin, waits for the result and
//! prints the program's output, exiting with its exit code — a quick way to try a server.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use base64::Engine;
use serde_json::{json, Value};

/// Language names by file extension, for when `--language` is not given.
const BY_EXTENSION: &[(&str, &str)] = &[
    ("py", "python"),
    ("js", "javascript"),
    ("mjs", "javascript"),
    ("ts", "typescript"),
    ("c", "c"),
    ("cpp", "cpp"),
    ("cc", "cpp"),
    ("cxx", "cpp"),
    ("rs", "rust"),
    ("java", "java"),
    ("go", "go"),
    ("rb", "ruby"),
    ("php", "php"),
    ("lua", "lua"),
    ("pl", "perl"),
    ("tcl", "tcl"),
    ("sh", "bash"),
    ("f90", "fortran"),
];

pub struct RunArgs {
    pub api: String,
    pub token: String,
    pub language: Option<String>,
    pub version: Option<String>,
    pub files: Vec<PathBuf>,
    pub stdin: bool,
    pub limits: Vec<(String, u64)>,
}

/// Runs a job and returns the exit status to leave with.
pub async fn run(a: RunArgs) -> anyhow::Result<i32> {
    let Some(first) = a.files.first() else {
        bail!("give at least one file")
    };
    let language = match a.language {
        Some(l) => l,
        None => {
            let ext = first
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or_default();
            BY_EXTENSION
                .iter()
                .find(|(e, _)| *e == ext)
                .map(|(_, l)| (*l).to_owned())
                .with_context(|| {
                    format!(
                        "cannot tell the language of {}; pass --language",
                        first.display()
                    )
                })?
        }
    };
    let mut files = Vec::new();
    for f in &a.files {
        let bytes = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .context("file name")?
            .to_owned();
        files.push(match String::from_utf8(bytes) {
            Ok(text) => json!({ "name": name, "content": text }),
            Err(e) => json!({ "name": name, "encoding": "base64",
                "content": base64::engine::general_purpose::STANDARD.encode(e.into_bytes()) }),
        });
    }
    let mut body = json!({ "language": language, "files": files, "collectOutput": true });
    if let Some(v) = a.version {
        body["version"] = json!(v);
    }
    if !a.limits.is_empty() {
        body["limits"] = a
            .limits
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    let http = reqwest::Client::new();
    let base = a.api.trim_end_matches('/').to_owned();
    let call = |method: reqwest::Method, path: String, body: Option<Value>| {
        let mut r = http
            .request(method, format!("{base}{path}"))
            .bearer_auth(&a.token);
        if let Some(b) = body {
            r = r.json(&b);
        }
        async move {
            let resp = r.send().await.context("cannot reach the Executor API")?;
            let status = resp.status().as_u16();
            let v: Value = resp.json().await.unwrap_or(Value::Null);
            Ok::<_, anyhow::Error>((status, v))
        }
    };
    let (st, v) = call(reqwest::Method::POST, "/v1/execute".into(), Some(body)).await?;
    if st != 202 {
        bail!("submission refused ({st}): {}", pretty_error(&v));
    }
    let id = v["jobId"].as_str().context("no jobId")?.to_owned();
    if a.stdin {
        let mut input = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut input)
            .context("reading stdin")?;
        let bytes = input.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let mut end = (at + 32 * 1024).min(bytes.len());
            while !input.is_char_boundary(end) {
                end -= 1;
            }
            let (st, v) = call(
                reqwest::Method::POST,
                format!("/v1/jobs/{id}/stdin"),
                Some(json!({ "chunk": &input[at..end] })),
            )
            .await?;
            match st {
                200 => at = end,
                429 => {
                    tokio::time::sleep(Duration::from_millis(
                        v["retryAfterMs"].as_u64().unwrap_or(100).max(50),
                    ))
                    .await
                }
                409 => break,
                _ => bail!("stdin refused ({st}): {}", pretty_error(&v)),
            }
        }
    }
    call(
        reqwest::Method::POST,
        format!("/v1/jobs/{id}/stdin/close"),
        None,
    )
    .await?;
    call(reqwest::Method::POST, format!("/v1/jobs/{id}/start"), None).await?;
    let state = loop {
        let (_, v) = call(reqwest::Method::GET, format!("/v1/jobs/{id}"), None).await?;
        match v["state"].as_str() {
            Some(s @ ("done" | "killed" | "error")) => break (s.to_owned(), v),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let (st, out) = call(reqwest::Method::GET, format!("/v1/jobs/{id}/output"), None).await?;
    if st != 200 {
        bail!(
            "job {id} ended {} but its output is unavailable: {}",
            state.0,
            pretty_error(&out)
        );
    }
    if let Some(c) = out.get("compile") {
        if c["exitCode"] != json!(0) {
            eprint!("{}", c["output"].as_str().unwrap_or_default());
        }
    }
    print!("{}", out["stdout"].as_str().unwrap_or_default());
    eprint!("{}", out["stderr"].as_str().unwrap_or_default());
    for art in out["artifacts"].as_array().into_iter().flatten() {
        eprintln!(
            "artifact {} ({} bytes, {}): {}",
            art["name"].as_str().unwrap_or(""),
            art["bytes"],
            art["mimeType"].as_str().unwrap_or(""),
            art["url"].as_str().unwrap_or("")
        );
    }
    if let Some(l) = out["limitExceeded"].as_str() {
        eprintln!("executor: the program exceeded its {l} limit");
    }
    if state.0 == "error" {
        eprintln!(
            "executor: job failed: {}",
            state.1["reason"].as_str().unwrap_or("unknown reason")
        );
        return Ok(125);
    }
    Ok(match (out["exitCode"].as_i64(), out["signal"].as_str()) {
        (Some(c), _) => c as i32,
        (None, Some(sig)) => {
            eprintln!("executor: the program was killed by {sig}");
            137
        }
        _ => 1,
    })
}

fn pretty_error(v: &Value) -> String {
    let mut s = v["error"]
        .as_str()
        .unwrap_or("unexpected answer")
        .to_owned();
    for d in v["details"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "\n  {}: {}",
            d["path"].as_str().unwrap_or(""),
            d["message"].as_str().unwrap_or("")
        ));
    }
    s
}
