//! Languages come from manifests, one directory per language (`languages/<name>/manifest.json`).
//!
//! At start every manifest is validated against the schema; a bad one is logged and skipped,
//! never a crash. A language whose toolchain is missing on this host (a `requires` path absent,
//! or its `versionCommand` failing) is logged as unavailable and not offered, rather than
//! failing at run time. When a manifest has a `versionCommand`, the version it prints replaces
//! the typed one, so `GET /v1/languages` reports what the host really runs.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use executor_types::{detail, version, ErrorDetail, LanguageInfo, Manifest, SchemaValidator};

/// A manifest that passed validation and whose toolchain is present.
#[derive(Debug, Clone)]
pub struct Language {
    pub manifest: Manifest,
    /// The resolved version (from the toolchain when the manifest says how to read it).
    pub version: String,
    /// The directory the manifest was read from.
    pub dir: PathBuf,
}

impl Language {
    pub fn name(&self) -> &str {
        self.manifest.language.as_str()
    }

    pub fn info(&self) -> LanguageInfo {
        LanguageInfo {
            language: self.name().to_owned(),
            version: self.version.clone(),
            aliases: self.manifest.aliases.clone(),
            interactive: self.manifest.interactive,
            compiled: Some(self.manifest.compile.is_some()),
        }
    }
}

/// Why a manifest was not loaded.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The languages this host offers.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    languages: Vec<Arc<Language>>,
    pub skipped: Vec<Skipped>,
}

impl Registry {
    /// Reads every `<dir>/*/manifest.json` (and `<dir>/*.json`). Never fails on a bad manifest:
    /// those land in `skipped` with the reason, and are logged.
    pub fn load(dir: &Path, validator: &SchemaValidator) -> Registry {
        let mut reg = Registry::default();
        let mut paths = Vec::new();
        match std::fs::read_dir(dir) {
            Ok(rd) => {
                for e in rd.flatten() {
                    let p = e.path();
                    if p.is_dir() && p.join("manifest.json").is_file() {
                        paths.push(p.join("manifest.json"));
                    } else if p.extension().is_some_and(|x| x == "json") && p.is_file() {
                        paths.push(p);
                    }
                }
            }
            Err(e) => {
                tracing::error!(dir = %dir.display(), error = %e, "cannot read the languages directory; no language is offered");
            }
        }
        paths.sort();
        for path in paths {
            match load_one(&path, validator) {
                Ok(lang) => {
                    if reg
                        .languages
                        .iter()
                        .any(|l| l.name() == lang.name() && l.version == lang.version)
                    {
                        reg.skip(
                            path,
                            format!("duplicate of {} {}", lang.name(), lang.version),
                        );
                    } else {
                        tracing::info!(language = lang.name(), version = %lang.version, "language available");
                        reg.languages.push(Arc::new(lang));
                    }
                }
                Err(reason) => reg.skip(path, reason),
            }
        }
        reg.languages.sort_by(|a, b| {
            a.name()
                .cmp(b.name())
                .then(version::compare(&b.version, &a.version))
        });
        reg
    }

    fn skip(&mut self, path: PathBuf, reason: String) {
        tracing::warn!(manifest = %path.display(), %reason, "language not offered");
        self.skipped.push(Skipped { path, reason });
    }

    pub fn from_languages(languages: Vec<Language>) -> Registry {
        Registry {
            languages: languages.into_iter().map(Arc::new).collect(),
            skipped: vec![],
        }
    }

    pub fn all(&self) -> &[Arc<Language>] {
        &self.languages
    }

    pub fn infos(&self) -> Vec<LanguageInfo> {
        self.languages.iter().map(|l| l.info()).collect()
    }

    /// Resolves a name or alias (case-insensitive) and an optional exact version; without a
    /// version, the only match or the most recent one (numeric comparison: 3.10 > 3.9).
    pub fn resolve(&self, name: &str, ver: Option<&str>) -> Result<Arc<Language>, ErrorDetail> {
        let wanted = name.to_ascii_lowercase();
        let matches: Vec<&Arc<Language>> = self
            .languages
            .iter()
            .filter(|l| {
                l.name().eq_ignore_ascii_case(&wanted)
                    || l.manifest
                        .aliases
                        .iter()
                        .any(|a| a.eq_ignore_ascii_case(&wanted))
            })
            .collect();
        if matches.is_empty() {
            return Err(detail(
                "/language",
                format!("unknown language {name:?}; GET /v1/languages lists the available ones"),
            ));
        }
        match ver {
            Some(v) => matches
                .iter()
                .find(|l| l.version == v)
                .map(|l| (*l).clone())
                .ok_or_else(|| {
                    let have: Vec<&str> = matches.iter().map(|l| l.version.as_str()).collect();
                    detail(
                        "/version",
                        format!(
                            "version {v:?} of {} is not available; available: {}",
                            matches[0].name(),
                            have.join(", ")
                        ),
                    )
                }),
            None => Ok(matches
                .iter()
                .max_by(|a, b| match version::compare(&a.version, &b.version) {
                    Ordering::Equal => b.name().cmp(a.name()),
                    o => o,
                })
                .map(|l| (*l).clone())
                .expect("non-empty")),
        }
    }

    /// Exact lookup by canonical name and version (the worker's view of a queued spec).
    pub fn exact(&self, name: &str, ver: &str) -> Option<Arc<Language>> {
        self.languages
            .iter()
            .find(|l| l.name() == name && l.version == ver)
            .cloned()
    }
}

fn load_one(path: &Path, validator: &SchemaValidator) -> Result<Language, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("invalid JSON: {e}"))?;
    let manifest: Manifest = validator
        .parse("Manifest", value)
        .map_err(|errs| executor_types::join_details(&errs))?;
    if manifest.image != "host" {
        return Err(format!(
            "image {:?} is not supported (supported: \"host\")",
            manifest.image
        ));
    }
    for req in &manifest.requires {
        if !Path::new(req).exists() {
            return Err(format!(
                "toolchain missing: {req} does not exist on this host"
            ));
        }
    }
    for m in &manifest.mounts {
        if !Path::new(&m.source).exists() {
            return Err(format!(
                "toolchain missing: mount source {} does not exist",
                m.source
            ));
        }
        if !m.target.starts_with('/') || m.target.split('/').any(|s| s == "..") {
            return Err(format!(
                "mount target {:?} must be an absolute path without `..`",
                m.target
            ));
        }
    }
    let mut ver = manifest.version.to_string();
    if let Some((prog, args)) = manifest.version_command.split_first() {
        let out = Command::new(prog)
            .args(args)
            .env(
                "PATH",
                std::env::var("PATH").unwrap_or_default() + ":" + &mount_paths(&manifest),
            )
            .output()
            .map_err(|e| format!("toolchain missing: {prog}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "toolchain missing: {prog} exited with {}",
                out.status
            ));
        }
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let re = manifest
            .version_regex
            .as_deref()
            .unwrap_or(r"(\d+(?:\.\d+)+)");
        let re = regress::Regex::new(re).map_err(|e| format!("versionRegex: {e}"))?;
        let m = re.find(&text).ok_or_else(|| {
            format!(
                "cannot read the version from {prog}'s output {:?}",
                text.trim()
            )
        })?;
        let group = m.group(1).unwrap_or(m.range());
        ver = text[group].to_owned();
    }
    Ok(Language {
        manifest,
        version: ver,
        dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
    })
}

/// `bin` directories of the manifest's mounts, so a version command finds a toolchain that
/// lives outside the host's PATH (rustup's).
fn mount_paths(m: &Manifest) -> String {
    m.mounts
        .iter()
        .map(|mt| format!("{}/bin", mt.source))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(name: &str, ver: &str, aliases: &[&str]) -> Language {
        let m: Manifest = serde_json::from_value(serde_json::json!({
            "language": name, "version": ver, "aliases": aliases, "image": "host", "entrypoint": "main",
            "run": {"command": ["true"]}, "interactive": false,
            "defaultLimits": {"wallTimeMs":1,"idleMs":1,"cpuMs":1,"memoryMb":1,"pids":1,"outputKb":1,"maxArtifacts":0,"maxArtifactBytes":0}
        }))
        .unwrap();
        Language {
            manifest: m,
            version: ver.into(),
            dir: PathBuf::new(),
        }
    }

    #[test]
    fn resolution_by_alias_and_version() {
        let r = Registry::from_languages(vec![
            lang("python", "3.9.1", &["py"]),
            lang("python", "3.10.0", &["py"]),
            lang("bash", "5.2", &["sh"]),
        ]);
        assert_eq!(r.resolve("PY", None).unwrap().version, "3.10.0");
        assert_eq!(r.resolve("python", Some("3.9.1")).unwrap().version, "3.9.1");
        assert_eq!(r.resolve("sh", None).unwrap().name(), "bash");
        assert_eq!(r.resolve("python", Some("2")).unwrap_err().path, "/version");
        assert_eq!(r.resolve("cobol", None).unwrap_err().path, "/language");
    }

    #[test]
    fn bad_manifests_are_skipped_not_fatal() {
        let dir = std::env::temp_dir().join(format!("langs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("good")).unwrap();
        std::fs::create_dir_all(dir.join("bad")).unwrap();
        std::fs::create_dir_all(dir.join("missing")).unwrap();
        std::fs::write(dir.join("good/manifest.json"), serde_json::json!({
            "language": "sh", "version": "1", "versionCommand": ["sh", "-c", "echo version 5.2.15"], "aliases": [], "image": "host",
            "entrypoint": "main.sh", "run": {"command": ["sh", "{entrypoint}"]}, "interactive": false,
            "defaultLimits": {"wallTimeMs":1,"idleMs":1,"cpuMs":1,"memoryMb":1,"pids":1,"outputKb":1,"maxArtifacts":0,"maxArtifactBytes":0}
        }).to_string()).unwrap();
        std::fs::write(dir.join("bad/manifest.json"), "{\"language\": 3}").unwrap();
        std::fs::write(dir.join("missing/manifest.json"), serde_json::json!({
            "language": "nope", "version": "1", "requires": ["/nonexistent/toolchain"], "aliases": [], "image": "host",
            "entrypoint": "x", "run": {"command": ["x"]}, "interactive": false,
            "defaultLimits": {"wallTimeMs":1,"idleMs":1,"cpuMs":1,"memoryMb":1,"pids":1,"outputKb":1,"maxArtifacts":0,"maxArtifactBytes":0}
        }).to_string()).unwrap();
        let r = Registry::load(&dir, &SchemaValidator::new());
        assert_eq!(r.all().len(), 1);
        assert_eq!(
            r.all()[0].version,
            "5.2.15",
            "version read from the toolchain"
        );
        assert_eq!(r.skipped.len(), 2);
        assert!(r
            .skipped
            .iter()
            .any(|s| s.reason.contains("toolchain missing")));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
