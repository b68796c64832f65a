//! One job from claim to result: checks, start handshake, workspace, stages, artifacts,
//! result event, stored output, final state.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use executor_languages::Language;
use executor_push::PushEvent;
use executor_sandbox::{Image, RunSpec, StageLimits};
use executor_types::files::{self, FileBody};
use executor_types::{keys, CompileResult, JobSpec, JobState, Limits, RunResult};
use serde_json::json;

use crate::stage::{self, Emitter, Input, Kind, StageResult};
use crate::Worker;

/// Publishes `result` (on the job channel and its cache channel), stores the output when
/// collected, and moves the job to its final state.
async fn finish(
    w: &Worker,
    id: &str,
    collect: bool,
    result: &RunResult,
    state: JobState,
    reason: Option<String>,
) {
    let data = serde_json::to_value(result.event()).unwrap_or_default();
    let events = vec![
        PushEvent::new(keys::channel(id), "result", data.clone()),
        PushEvent::new(keys::cache_channel(id), "result", data),
    ];
    if let Err(e) = w.publisher.publish(events).await {
        tracing::warn!(job = id, error = %e, "publishing the result failed; it is still stored");
    }
    if collect {
        if let Err(e) = w.jobs.store_output(id, result, w.config.output_ttl).await {
            tracing::error!(job = id, error = %e, "storing the output failed");
        }
    }
    if let Err(e) = w.jobs.set_state(id, state, reason).await {
        tracing::error!(job = id, error = %e, "writing the final state failed");
    }
    tracing::info!(job = id, state = ?state, exit = ?result.exit_code, signal = ?result.signal, "job ended");
}

/// Ends a job as `error` (a service-side failure), with the reason in status and result.
pub async fn finish_error(w: &Worker, id: &str, reason: &str) {
    let collect = w
        .jobs
        .spec(id)
        .await
        .ok()
        .flatten()
        .is_some_and(|s| s.collect_output);
    let mut r = RunResult::empty();
    r.error = Some(reason.to_owned());
    finish(w, id, collect, &r, JobState::Error, Some(reason.to_owned())).await;
}

async fn finish_killed(w: &Worker, id: &str, collect: bool) {
    let r = RunResult::killed();
    finish(
        w,
        id,
        collect,
        &r,
        JobState::Killed,
        Some("killed by a client".into()),
    )
    .await;
}

impl Worker {
    pub(crate) async fn handle(self: Arc<Self>, id: &str) {
        if let Err(e) = self.clone().handle_inner(id).await {
            tracing::error!(job = id, error = %e, "job failed");
            finish_error(&self, id, &e.to_string()).await;
        }
    }

    async fn handle_inner(self: Arc<Self>, id: &str) -> anyhow::Result<()> {
        let Some(spec) = self.jobs.spec(id).await? else {
            tracing::warn!(job = id, "claimed a job whose records expired; dropped");
            return Ok(());
        };
        match self.jobs.status(id).await?.map(|s| s.state) {
            Some(s) if s.is_terminal() => return Ok(()),
            None => return Ok(()),
            _ => {}
        }
        // The worker re-checks everything itself: the queue may hold anything.
        if let Err(d) = self
            .validator
            .validate("JobSpec", &serde_json::to_value(&spec)?)
        {
            anyhow::bail!("invalid job spec: {}", executor_types::join_details(&d));
        }
        let bodies = files::check_files(&spec.files).map_err(|d| {
            anyhow::anyhow!("invalid job files: {}", executor_types::join_details(&d))
        })?;
        let Some(lang) = self.languages.exact(&spec.language, &spec.version) else {
            anyhow::bail!(
                "language {} {} is not available on this worker",
                spec.language,
                spec.version
            );
        };
        let mut input = Input {
            cursor: 0,
            pending: VecDeque::new(),
            sub: self
                .jobs
                .broker
                .subscribe(&[keys::ctrl_channel(id), keys::stdin_channel(id)])
                .await
                .ok(),
            killed: false,
        };
        input.poll(&self, id).await;
        if input.killed || self.jobs.broker.get(&keys::killed(id)).await?.is_some() {
            finish_killed(&self, id, spec.collect_output).await;
            return Ok(());
        }
        self.jobs.set_state(id, JobState::Starting, None).await?;
        // Start handshake: the flag is authoritative; `start` messages wake us early.
        let deadline = tokio::time::Instant::now() + self.config.start_wait;
        while !self.jobs.started(id).await? && tokio::time::Instant::now() < deadline {
            if self.is_stopping() {
                return self.requeue(id).await;
            }
            let wait = tokio::time::sleep(Duration::from_millis(250));
            tokio::select! {
                _ = wait => {},
                _ = self.stop.notified() => {},
                _ = async { match &mut input.sub { Some(s) => { s.recv().await; }, None => std::future::pending().await } } => {},
            }
            input.poll(&self, id).await;
            if input.killed {
                finish_killed(&self, id, spec.collect_output).await;
                return Ok(());
            }
        }
        if self.is_stopping() {
            return self.requeue(id).await;
        }
        let _permit = self.run_permits.acquire().await?;
        if self.is_stopping() {
            return self.requeue(id).await;
        }
        let mut slot = self.take_slot();
        let out = self
            .run_in_slot(&mut slot, id, &spec, &lang, &bodies, &mut input)
            .await;
        // The result goes out first: every process of the job is gone already, and the slot's
        // cleanup (unmounting the workspace, the namespaces' teardown) still happens before the
        // slot takes another job, just off the client's path.
        let outcome = match out {
            Ok((result, state)) => {
                finish(&self, id, spec.collect_output, &result, state, None).await;
                Ok(())
            }
            Err(e) => Err(e),
        };
        let cleanup = tokio::task::block_in_place(|| {
            let mut slot = slot;
            let r = slot.cleanup();
            (slot, r)
        });
        self.return_slot(cleanup.0);
        if let Err(e) = cleanup.1 {
            tracing::error!(error = %e, "slot cleanup failed");
        }
        outcome?;
        Ok(())
    }

    async fn run_in_slot(
        &self,
        slot: &mut executor_sandbox::Slot,
        id: &str,
        spec: &JobSpec,
        lang: &Language,
        bodies: &[FileBody],
        input: &mut Input,
    ) -> anyhow::Result<(RunResult, JobState)> {
        tokio::task::block_in_place(|| {
            slot.prepare_workspace(self.config.workspace_bytes, self.config.workspace_inodes)
        })
        .map_err(|e| anyhow::anyhow!("workspace setup failed: {e}"))?;
        let slot: &executor_sandbox::Slot = slot;
        for (f, body) in spec.files.iter().zip(bodies) {
            match body {
                FileBody::Inline(bytes) => {
                    tokio::task::block_in_place(|| slot.write_file(&f.name, bytes, 0o644))
                        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", f.name.as_str()))?
                }
                FileBody::Ref(hex) => self.fetch_ref(slot, &f.name, hex).await?,
            }
        }
        let _ = tokio::task::block_in_place(|| slot.create_dir("artifacts"));
        self.jobs.set_state(id, JobState::Running, None).await?;
        let mut em = Emitter::new(self, id, 0);
        let limits = &spec.limits;
        let subst = Substitutions::new(spec, lang);
        let mut result = RunResult::empty();
        if let Some(compile) = &lang.manifest.compile {
            em.event("stage", json!({ "phase": "compiling" })).await;
            let rs = self.run_spec(lang, &compile.command, &compile.env, &subst, limits, false);
            let c = stage::run(self, id, slot, rs, limits, Kind::Compile, &mut em, input).await?;
            let failed = c.exit_code != Some(0);
            let killed = c.killed_by_client;
            result.compile = Some(CompileResult {
                exit_code: c.exit_code,
                signal: c.signal.clone(),
                stdout: c.stdout.clone(),
                stderr: c.stderr.clone(),
                output: c.output.clone(),
                duration_ms: c.duration_ms,
                timed_out: Some(c.timed_out),
                truncated: Some(c.truncated),
                limit_exceeded: c.limit,
            });
            if failed || killed {
                c.outcome_into(&mut result);
                let state = if killed {
                    JobState::Killed
                } else {
                    JobState::Done
                };
                return Ok((result, state));
            }
        }
        em.event("stage", json!({ "phase": "running" })).await;
        let rs = self.run_spec(
            lang,
            &lang.manifest.run.command,
            &lang.manifest.run.env,
            &subst,
            limits,
            true,
        );
        let r: StageResult =
            stage::run(self, id, slot, rs, limits, Kind::Run, &mut em, input).await?;
        r.outcome_into(&mut result);
        result.stdout = r.stdout;
        result.stderr = r.stderr;
        self.collect_artifacts(slot, id, limits, &mut result, &mut em)
            .await;
        let state = if r.killed_by_client {
            JobState::Killed
        } else {
            JobState::Done
        };
        Ok((result, state))
    }

    /// Streams a blob straight into its workspace file. The bytes are verified while they
    /// flow; on a mismatch the job ends `error` before any program runs, so unverified bytes
    /// never reach one. Memory use is one buffer, whatever the blob's size.
    async fn fetch_ref(
        &self,
        slot: &executor_sandbox::Slot,
        name: &str,
        hex: &str,
    ) -> anyhow::Result<()> {
        let Some(blobs) = &self.blobs else {
            anyhow::bail!(
                "file {name} refers to blob sha256:{hex} but no blob store is configured"
            );
        };
        let file = tokio::task::block_in_place(|| slot.create_file(name, 0o644))
            .map_err(|e| anyhow::anyhow!("cannot create {name}: {e}"))?;
        let mut dest = tokio::fs::File::from_std(file);
        blobs
            .fetch(hex, &mut dest, self.config.workspace_bytes)
            .await
            .map_err(|e| anyhow::anyhow!("blob sha256:{hex} for {name}: {e}"))?;
        Ok(())
    }

    async fn collect_artifacts(
        &self,
        slot: &executor_sandbox::Slot,
        id: &str,
        limits: &Limits,
        result: &mut RunResult,
        em: &mut Emitter<'_>,
    ) {
        let max = limits.max_artifacts as usize;
        let Ok(listing) = tokio::task::block_in_place(|| slot.list_files("artifacts", max)) else {
            return;
        };
        result.artifacts_truncated = listing.truncated;
        let Some(blobs) = &self.blobs else {
            if !listing.files.is_empty() {
                tracing::warn!(
                    job = id,
                    "artifacts left but no blob store is configured; not uploaded"
                );
            }
            return;
        };
        for f in listing.files {
            if f.size > limits.max_artifact_bytes {
                result.artifacts_truncated = true;
                continue;
            }
            let rel = format!("artifacts/{}", f.path);
            let Ok((file, size)) = tokio::task::block_in_place(|| slot.open_file(&rel)) else {
                result.artifacts_truncated = true;
                continue;
            };
            if size > limits.max_artifact_bytes {
                result.artifacts_truncated = true;
                continue;
            }
            match blobs.upload_artifact(id, &f.path, file, size).await {
                Ok(a) => {
                    em.event("artifact", serde_json::to_value(&a).unwrap_or_default())
                        .await;
                    result.artifacts.push(a);
                }
                Err(e) => {
                    tracing::warn!(job = id, artifact = f.path, error = %e, "artifact upload failed")
                }
            }
        }
    }

    fn run_spec(
        &self,
        lang: &Language,
        command: &[String],
        stage_env: &std::collections::HashMap<String, String>,
        subst: &Substitutions,
        limits: &Limits,
        stdin: bool,
    ) -> RunSpec {
        let mut argv = Vec::new();
        for a in command {
            if a == "{files}" {
                argv.extend(subst.files.iter().cloned());
            } else {
                argv.push(subst.apply(a));
            }
        }
        let mut rs = RunSpec::new(argv);
        for (k, v) in lang.manifest.env.iter().chain(stage_env.iter()) {
            rs.env.retain(|(ek, _)| ek != k);
            rs.env.push((k.clone(), subst.apply(v)));
        }
        rs.stdin = stdin;
        rs.image = Image::Host {
            extra_ro_binds: lang
                .manifest
                .mounts
                .iter()
                .map(|m| (PathBuf::from(&m.source), PathBuf::from(&m.target)))
                .collect(),
        };
        rs.limits = StageLimits {
            memory_mb: limits.memory_mb.get(),
            pids: limits.pids.get(),
            cpu_ms: limits.cpu_ms.get(),
            ..StageLimits::default()
        };
        rs
    }
}

/// Manifest placeholders: `{entrypoint}` (the manifest's entrypoint if a file of that name was
/// sent, else the first file), `{entrypointStem}` (without extension), `{mainClass}` (Java:
/// the stem's last path segment), and `{files}` (every submitted file, as its own argument).
struct Substitutions {
    entrypoint: String,
    stem: String,
    main_class: String,
    files: Vec<String>,
}

impl Substitutions {
    fn new(spec: &JobSpec, lang: &Language) -> Self {
        let wanted = lang.manifest.entrypoint.as_str();
        let entrypoint = spec
            .files
            .iter()
            .find(|f| f.name.as_str() == wanted)
            .or(spec.files.first())
            .map(|f| f.name.to_string())
            .unwrap_or_else(|| wanted.to_owned());
        let stem = match entrypoint.rsplit_once('.') {
            Some((s, _)) if !s.is_empty() && !s.ends_with('/') => s.to_owned(),
            _ => entrypoint.clone(),
        };
        let main_class = stem.rsplit('/').next().unwrap_or(&stem).to_owned();
        Self {
            entrypoint,
            stem,
            main_class,
            files: spec.files.iter().map(|f| f.name.to_string()).collect(),
        }
    }

    fn apply(&self, s: &str) -> String {
        s.replace("{entrypoint}", &self.entrypoint)
            .replace("{entrypointStem}", &self.stem)
            .replace("{mainClass}", &self.main_class)
    }
}
