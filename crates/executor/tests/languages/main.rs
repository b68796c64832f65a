//! The known-answer suite of the shipped language manifests: every case under
//! `languages/<name>/tests/<case>/` (its files plus a `case.json`, see `docs/languages.md`) runs
//! through a real `executor serve` (Redis broker, sandboxed worker) over the HTTP API; the
//! interactive cases go through the push (Pusher) stream and check that the prompt arrives
//! before any input is sent.

mod cases;
#[path = "../common/mod.rs"]
mod common;
mod pusher;
mod server;

use std::collections::BTreeMap;
use std::time::Instant;

use futures::StreamExt;
use serde_json::Value;

use cases::{discover, Case, Shipped};
use server::{scratch, server, shipped_languages_dir};

/// Every shipped manifest is offered on this host (`scripts/setup.sh` installs the toolchains)
/// with the version its toolchain reports, and the aliases users type resolve.
#[tokio::test(flavor = "multi_thread")]
async fn every_manifest_is_listed_with_its_real_version() {
    let shipped = discover(&shipped_languages_dir());
    let s = server(&shipped_languages_dir()).await;
    let (st, list) = s.get("/v1/languages").await;
    assert_eq!(st, 200, "{list}");
    let listed: BTreeMap<&str, &Value> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["language"].as_str().unwrap(), l))
        .collect();
    for lang in &shipped {
        let Some(info) = listed.get(lang.name.as_str()) else {
            panic!(
                "{} is not offered (toolchain missing? run scripts/setup.sh); server log:\n{}",
                lang.name,
                s.log_text()
            );
        };
        let version = info["version"].as_str().unwrap();
        assert!(
            version.starts_with(&lang.typed_version) && version.matches('.').count() >= 2,
            "{}: version {version:?} is not the toolchain's full version of {:?}",
            lang.name,
            lang.typed_version
        );
        assert_eq!(
            info["compiled"].as_bool(),
            Some(lang.compiled),
            "{}",
            lang.name
        );
        assert_eq!(info["interactive"].as_bool(), Some(true), "{}", lang.name);
    }
    let aliases: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| {
            std::iter::once(l["language"].as_str().unwrap()).chain(
                l["aliases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap()),
            )
        })
        .collect();
    for typed in [
        "py", "python3", "js", "node", "ts", "c++", "cpp", "rs", "sh", "golang", "java", "c",
        "bash", "perl", "tcl", "ruby", "php", "lua",
    ] {
        assert!(
            aliases.contains(&typed),
            "{typed:?} resolves to no language"
        );
    }
}

/// Every case of every shipped manifest gives its known answer.
#[tokio::test(flavor = "multi_thread")]
async fn known_answers() {
    let shipped = discover(&shipped_languages_dir());
    // `LANGUAGE_CASES=rust,java/interactive` narrows the run to cases whose `<language>/<case>`
    // contains one of the words (while working on a manifest).
    let only = std::env::var("LANGUAGE_CASES").unwrap_or_default();
    let only: Vec<&str> = only.split(',').filter(|w| !w.is_empty()).collect();
    let cases: Vec<(&Shipped, &Case)> = shipped
        .iter()
        .flat_map(|l| l.cases.iter().map(move |c| (l, c)))
        .filter(|(l, c)| {
            let id = format!("{}/{}", l.name, c.name);
            only.is_empty() || only.iter().any(|w| id.contains(w))
        })
        .collect();
    assert!(
        !only.is_empty() || cases.len() >= 60,
        "only {} cases found",
        cases.len()
    );
    let s = server(&shipped_languages_dir()).await;
    let started = Instant::now();
    // A few in flight so the two slots stay busy; the server queues the rest.
    let failures: Vec<String> = futures::stream::iter(cases.iter())
        .map(|(lang, case)| {
            let s = &s;
            async move {
                let t = Instant::now();
                let r = cases::run(s, lang, case).await;
                match &r {
                    Ok(()) => eprintln!(
                        "{}/{}: ok in {} ms",
                        lang.name,
                        case.name,
                        t.elapsed().as_millis()
                    ),
                    Err(e) => eprintln!(
                        "{}/{}: FAILED in {} ms: {e}",
                        lang.name,
                        case.name,
                        t.elapsed().as_millis()
                    ),
                }
                r.err().map(|e| format!("{}/{}: {e}", lang.name, case.name))
            }
        })
        .buffer_unordered(4)
        .filter_map(|f| async move { f })
        .collect()
        .await;
    eprintln!(
        "{} cases in {:.1} s",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// A language whose toolchain is missing on the host is reported at start, clearly, in the log
/// and by `executor languages`, and is not offered; the others are.
#[tokio::test(flavor = "multi_thread")]
async fn missing_toolchain_is_reported_and_not_listed() {
    let dir = scratch("missing-toolchain");
    let bash = std::fs::read_to_string(shipped_languages_dir().join("bash/manifest.json")).unwrap();
    std::fs::create_dir_all(dir.join("bash")).unwrap();
    std::fs::write(dir.join("bash/manifest.json"), bash).unwrap();
    let mut ghost: Value =
        serde_json::from_str(include_str!("../../../../languages/c/manifest.json")).unwrap();
    ghost["language"] = "ghostlang".into();
    ghost["aliases"] = serde_json::json!(["ghost"]);
    ghost["versionCommand"] = serde_json::json!(["/nonexistent/ghostc", "--version"]);
    let mut mounted = ghost.clone();
    mounted["language"] = "mountedlang".into();
    mounted["aliases"] = serde_json::json!([]);
    mounted["versionCommand"] = serde_json::json!(["/bin/true"]);
    mounted["mounts"] =
        serde_json::json!([{"source": "/nonexistent/toolchain", "target": "/opt/toolchain"}]);
    for (name, m) in [("ghostlang", ghost), ("mountedlang", mounted)] {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("manifest.json"), m.to_string()).unwrap();
    }

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_executor"))
        .args(["languages", "--languages"])
        .arg(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("bash ")), "{stdout}");
    for name in ["ghostlang", "mountedlang"] {
        assert!(
            stdout.lines().any(|l| l.starts_with("unavailable:")
                && l.contains(&format!("{name}/manifest.json"))
                && l.contains("toolchain missing")),
            "{name} not reported unavailable:\n{stdout}"
        );
    }

    let s = server(&dir).await;
    let (_, list) = s.get("/v1/languages").await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["language"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bash"], "{list}");
    let log = s.log_text();
    for (name, what) in [
        ("ghostlang", "/nonexistent/ghostc"),
        ("mountedlang", "/nonexistent/toolchain"),
    ] {
        assert!(
            log.lines().any(|l| l.contains("language not offered")
                && l.contains(&format!("{name}/manifest.json"))
                && l.contains("toolchain missing")
                && l.contains(what)),
            "no clear start-up line for {name} in the log:\n{log}"
        );
    }
    let (st, v) = s
        .post(
            "/v1/execute",
            serde_json::json!({"language": "ghost", "files": [{"name": "main.c", "content": ""}]}),
        )
        .await;
    assert_eq!(
        st, 400,
        "an unavailable language is refused at submission: {v}"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}
