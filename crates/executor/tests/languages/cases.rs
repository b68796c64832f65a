//! Discovery of the known-answer cases and their checks.
//!
//! `languages/<name>/tests/<case>/case.json`:
//! `{ "language"?: name or alias to submit as, "stdin"?: text sent then closed,
//!    "interactive"?: { "prompt", "input" },
//!    "expect": { "stdout"?, "exitCode"?, "signal"?, "stderrContains"?,
//!                "compileFailed"?, "compileOutputContains"? } }`
//! Every other file of the case directory is submitted, named by its path relative to it.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::pusher::Subscription;
use crate::server::Server;

pub struct Shipped {
    pub name: String,
    /// The manifest's typed `version` (the real one must start with it).
    pub typed_version: String,
    pub compiled: bool,
    pub cases: Vec<Case>,
}

pub struct Case {
    pub name: String,
    pub spec: Value,
    /// `[{name, content}]`, sorted by name.
    pub files: Value,
}

/// Every `<dir>/<language>/manifest.json` with its cases.
pub fn discover(dir: &Path) -> Vec<Shipped> {
    let mut out = Vec::new();
    for lang_dir in sorted_dirs(dir) {
        let Ok(text) = std::fs::read_to_string(lang_dir.join("manifest.json")) else {
            continue;
        };
        let m: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", lang_dir.display()));
        let mut cases = Vec::new();
        for case_dir in sorted_dirs(&lang_dir.join("tests")) {
            let spec_path = case_dir.join("case.json");
            let spec: Value = serde_json::from_str(
                &std::fs::read_to_string(&spec_path)
                    .unwrap_or_else(|e| panic!("{}: {e}", spec_path.display())),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", spec_path.display()));
            let mut files = Vec::new();
            collect_files(&case_dir, &case_dir, &mut files);
            files.retain(|(rel, _)| rel != "case.json");
            files.sort();
            cases.push(Case {
                name: case_dir.file_name().unwrap().to_string_lossy().into_owned(),
                spec,
                files: files
                    .into_iter()
                    .map(|(name, content)| json!({"name": name, "content": content}))
                    .collect(),
            });
        }
        out.push(Shipped {
            name: m["language"].as_str().unwrap().to_owned(),
            typed_version: m["version"].as_str().unwrap().to_owned(),
            compiled: m.get("compile").is_some(),
            cases,
        });
    }
    out
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for p in sorted_dirs(dir) {
        collect_files(root, &p, out);
    }
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_file() {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// Runs one case; `Err` says what differed.
pub async fn run(s: &Server, lang: &Shipped, case: &Case) -> Result<(), String> {
    let submit_as = case.spec["language"].as_str().unwrap_or(&lang.name);
    let (id, channel) = s.execute(submit_as, case.files.clone()).await?;
    let streamed_stdout = if let Some(inter) = case.spec.get("interactive") {
        Some(interactive(s, &id, &channel, inter).await?)
    } else {
        s.expect_ok(&format!("/v1/jobs/{id}/start"), Value::Null)
            .await?;
        if let Some(stdin) = case.spec["stdin"].as_str() {
            s.expect_ok(&format!("/v1/jobs/{id}/stdin"), json!({"chunk": stdin}))
                .await?;
            close_stdin(s, &id).await?;
        }
        None
    };
    let r = s.result(&id).await?;
    check(lang, &case.spec["expect"], &r, streamed_stdout.as_deref())
        .map_err(|e| format!("{e}\nresult: {r:#}"))
}

/// Subscribes before start, waits for the prompt on the stream, and only then sends the input;
/// returns the stdout the stream carried.
async fn interactive(s: &Server, id: &str, channel: &str, inter: &Value) -> Result<String, String> {
    let prompt = inter["prompt"].as_str().unwrap_or_default();
    let input = inter["input"].as_str().unwrap_or_default();
    let mut sub = Subscription::open(s, channel).await?;
    s.expect_ok(&format!("/v1/jobs/{id}/start"), Value::Null)
        .await?;
    let mut stdout = String::new();
    let mut sent = false;
    loop {
        let e = sub.next().await?;
        match e.name.as_str() {
            "stdout" => stdout.push_str(e.data["chunk"].as_str().unwrap_or_default()),
            "result" if !sent => {
                return Err(format!(
                "the job ended before its prompt {prompt:?} arrived; stdout {stdout:?}, result {}",
                e.data
            ))
            }
            "result" => return Ok(stdout),
            _ => continue,
        }
        if !sent && stdout.len() >= prompt.len() {
            if stdout != prompt {
                return Err(format!(
                    "before any input, stdout is {stdout:?}, expected the prompt {prompt:?}"
                ));
            }
            s.expect_ok(&format!("/v1/jobs/{id}/stdin"), json!({"chunk": input}))
                .await?;
            close_stdin(s, id).await?;
            sent = true;
        }
    }
}

/// Closes stdin; a program that already ended after reading what it needed makes that a 409,
/// which is fine.
async fn close_stdin(s: &Server, id: &str) -> Result<(), String> {
    match s
        .post(&format!("/v1/jobs/{id}/stdin/close"), Value::Null)
        .await
    {
        (200 | 409, _) => Ok(()),
        (st, v) => Err(format!("POST stdin/close answered {st}: {v}")),
    }
}

fn check(lang: &Shipped, expect: &Value, r: &Value, streamed: Option<&str>) -> Result<(), String> {
    let compile = r.get("compile").filter(|c| !c.is_null());
    if expect["compileFailed"].as_bool() == Some(true) {
        let c = compile.ok_or("no compile result for a compile error")?;
        if c["exitCode"].as_i64() == Some(0) {
            return Err("the compile error compiled".into());
        }
        let want = expect["compileOutputContains"].as_str().unwrap_or_default();
        let output = c["output"].as_str().unwrap_or_default();
        if !output.contains(want) {
            return Err(format!("compile output lacks {want:?}: {output:?}"));
        }
        if matches!(r["exitCode"].as_i64(), Some(0) | None) {
            return Err("the job's exitCode does not reflect the failed compile".into());
        }
    } else if lang.compiled {
        match compile {
            Some(c) if c["exitCode"].as_i64() == Some(0) => {}
            Some(c) => return Err(format!("compile failed: {}", c["output"])),
            None => return Err("a compiled language ran no compile stage".into()),
        }
    } else if compile.is_some() {
        return Err("an interpreted language reported a compile stage".into());
    }
    let stdout = r["stdout"].as_str().unwrap_or_default();
    if let Some(want) = expect["stdout"].as_str() {
        if stdout != want {
            return Err(format!("stdout {stdout:?}, expected {want:?}"));
        }
    }
    if let Some(streamed) = streamed {
        if streamed != stdout {
            return Err(format!(
                "the stream carried stdout {streamed:?}, the result has {stdout:?}"
            ));
        }
    }
    if let Some(want) = expect.get("exitCode").filter(|v| !v.is_null()) {
        if &r["exitCode"] != want {
            return Err(format!("exitCode {}, expected {want}", r["exitCode"]));
        }
    }
    if let Some(want) = expect["signal"].as_str() {
        if r["signal"].as_str() != Some(want) {
            return Err(format!("signal {}, expected {want}", r["signal"]));
        }
    }
    if let Some(want) = expect["stderrContains"].as_str() {
        let stderr = r["stderr"].as_str().unwrap_or_default();
        if !stderr.contains(want) {
            return Err(format!("stderr lacks {want:?}: {stderr:?}"));
        }
    }
    for flag in ["timedOut", "idleTimedOut", "truncated"] {
        if r[flag].as_bool() == Some(true) {
            return Err(format!("{flag} is set"));
        }
    }
    Ok(())
}
