//! One sandboxed stage (compile or run): streams its output as coalesced, sequenced events,
//! feeds stdin from the job's input log, and enforces wall, idle, cpu and output limits.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use executor_broker::jobs::InputEntry;
use executor_push::PushEvent;
use executor_sandbox::{Outcome, RunSpec, Slot};
use executor_types::{keys, LimitKind, Limits};
use serde_json::json;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::Worker;

/// Which stage: compile output goes out as `compile_output`, run output as `stdout`/`stderr`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Compile,
    Run,
}

/// The job's input log as the worker consumes it: a cursor, and entries read but not yet used
/// (stdin that arrived during compilation waits for the run stage).
pub struct Input {
    pub cursor: usize,
    pub pending: VecDeque<InputEntry>,
    pub sub: Option<executor_broker::Subscription>,
    pub killed: bool,
}

impl Input {
    /// Reads new log entries; a kill is noted at once.
    pub async fn poll(&mut self, w: &Worker, job: &str) {
        if let Ok((count, new)) = w.jobs.input_since(job, self.cursor).await {
            self.cursor += count;
            for e in new {
                match e {
                    InputEntry::Kill => self.killed = true,
                    InputEntry::Start => {}
                    other => self.pending.push_back(other),
                }
            }
        }
    }
}

/// What a stage did.
#[derive(Debug, Default)]
pub struct StageResult {
    pub exit_code: Option<i64>,
    pub signal: Option<String>,
    pub timed_out: bool,
    pub idle_timed_out: bool,
    pub truncated: bool,
    pub limit: Option<LimitKind>,
    pub killed_by_client: bool,
    pub stdout: String,
    pub stderr: String,
    pub output: String,
    pub duration_ms: u64,
}

impl StageResult {
    /// Copies how the stage ended (exit code, signal, limit flags, duration) into `r`; a failed
    /// compile stage ends the job this way too.
    pub fn outcome_into(&self, r: &mut executor_types::RunResult) {
        r.exit_code = self.exit_code;
        r.signal = self.signal.clone();
        r.timed_out = self.timed_out;
        r.idle_timed_out = self.idle_timed_out;
        r.truncated = self.truncated;
        r.limit_exceeded = self.limit;
        r.duration_ms = self.duration_ms;
    }
}

/// Sends output events in order with one `seq` per job, coalescing bytes of one stream.
pub struct Emitter<'a> {
    w: &'a Worker,
    channel: String,
    pub seq: u64,
    current: Option<(&'static str, String)>,
}

impl<'a> Emitter<'a> {
    pub fn new(w: &'a Worker, job: &str, seq: u64) -> Self {
        Self {
            w,
            channel: keys::channel(job),
            seq,
            current: None,
        }
    }

    pub async fn event(&mut self, name: &str, data: serde_json::Value) {
        if let Err(e) = self
            .w
            .publisher
            .publish(vec![PushEvent::new(&self.channel, name, data)])
            .await
        {
            tracing::warn!(error = %e, channel = %self.channel, "publish failed; the job goes on");
        }
    }

    async fn push(&mut self, name: &'static str, text: &str) {
        if let Some((n, buf)) = &mut self.current {
            if *n == name {
                buf.push_str(text);
                while self
                    .current
                    .as_ref()
                    .is_some_and(|(_, b)| b.len() >= self.w.config.max_chunk_bytes)
                {
                    self.flush_part().await;
                }
                return;
            }
            self.flush().await;
        }
        self.current = Some((name, text.to_owned()));
        while self
            .current
            .as_ref()
            .is_some_and(|(_, b)| b.len() >= self.w.config.max_chunk_bytes)
        {
            self.flush_part().await;
        }
    }

    async fn flush_part(&mut self) {
        let Some((name, buf)) = self.current.take() else {
            return;
        };
        // The first piece whose event stays under the push server's size limit (JSON escaping
        // counted), cut on a character boundary.
        let head_len = executor_push::split_chunk(&buf, executor_push::DEFAULT_MAX_EVENT_BYTES)
            .first()
            .map_or(buf.len(), |p| p.len())
            .min(self.w.config.max_chunk_bytes.max(1));
        let mut cut = head_len.min(buf.len());
        while !buf.is_char_boundary(cut) {
            cut -= 1;
        }
        let (head, tail) = buf.split_at(cut);
        let seq = self.seq;
        self.seq += 1;
        self.event(name, json!({ "chunk": head, "seq": seq })).await;
        if !tail.is_empty() {
            self.current = Some((name, tail.to_owned()));
        }
    }

    pub async fn flush(&mut self) {
        while self.current.is_some() {
            self.flush_part().await;
        }
    }

    fn pending(&self) -> bool {
        self.current.is_some()
    }
}

/// Splits off the longest valid UTF-8 prefix of `carry`, keeping an incomplete trailing
/// sequence for the next read (invalid bytes become U+FFFD).
fn take_utf8(carry: &mut Vec<u8>, eof: bool) -> String {
    let valid = match std::str::from_utf8(carry) {
        Ok(_) => carry.len(),
        Err(e) if e.error_len().is_none() && !eof => e.valid_up_to(),
        Err(_) => carry.len(),
    };
    let rest = carry.split_off(valid);
    let s = String::from_utf8_lossy(carry).into_owned();
    *carry = rest;
    s
}

pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("SIG{sig}"),
    };
    name.to_owned()
}

/// One output pipe of the stage.
struct Stream {
    pipe: tokio::net::unix::pipe::Receiver,
    open: bool,
    /// Bytes of an incomplete UTF-8 sequence carried to the next read.
    carry: Vec<u8>,
    buf: Vec<u8>,
    /// Event name: `stdout`, `stderr` or `compile_output`.
    name: &'static str,
}

impl Stream {
    fn new(fd: std::os::fd::OwnedFd, name: &'static str) -> std::io::Result<Self> {
        Ok(Self {
            pipe: tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?,
            open: true,
            carry: Vec::new(),
            buf: vec![0u8; 16 * 1024],
            name,
        })
    }

    /// Accounts a read of `n` bytes (0: end of stream) against the stage's output cap and
    /// returns the complete text to emit; bytes past the cap are dropped.
    fn consume(&mut self, n: usize, total: &mut u64, cap: u64) -> String {
        if n == 0 {
            self.open = false;
            return take_utf8(&mut self.carry, true);
        }
        let take = cap.saturating_sub(*total).min(n as u64) as usize;
        *total += n as u64;
        self.carry.extend_from_slice(&self.buf[..take]);
        take_utf8(&mut self.carry, false)
    }
}

/// What woke the stage loop.
enum Event {
    Read { stderr: bool, n: usize },
    Exited,
    Flush,
    Limit(Stop),
    CpuTick,
    Input,
}

enum Stop {
    Wall,
    Idle,
    Cpu,
    Output,
    Client,
}

/// Runs one stage to its end.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    w: &Worker,
    job: &str,
    slot: &Slot,
    spec: RunSpec,
    limits: &Limits,
    kind: Kind,
    em: &mut Emitter<'_>,
    input: &mut Input,
) -> anyhow::Result<StageResult> {
    let started = Instant::now();
    let mut child = tokio::task::block_in_place(|| slot.spawn(&spec))
        .map_err(|e| anyhow::anyhow!("sandbox setup failed: {e}"))?;
    let (out_name, err_name) = match kind {
        Kind::Compile => ("compile_output", "compile_output"),
        Kind::Run => ("stdout", "stderr"),
    };
    let mut out = Stream::new(child.stdout.take().expect("stdout pipe"), out_name)?;
    let mut err = Stream::new(child.stderr.take().expect("stderr pipe"), err_name)?;
    let stdin_tx = match child.stdin.take() {
        Some(fd) => {
            let mut pipe = tokio::net::unix::pipe::Sender::from_owned_fd(fd)?;
            let (tx, mut rx) = mpsc::unbounded_channel::<Option<String>>();
            let broker = w.jobs.broker.clone();
            let pending_key = keys::stdin_pending(job);
            tokio::spawn(async move {
                while let Some(Some(chunk)) = rx.recv().await {
                    let ok = pipe.write_all(chunk.as_bytes()).await.is_ok();
                    let _ = broker
                        .incr_by(&pending_key, -(chunk.len() as i64), None)
                        .await;
                    if !ok {
                        break;
                    }
                }
                // Dropping the pipe is the EOF the program sees.
            });
            Some(tx)
        }
        None => None,
    };
    let mut stdin_tx = stdin_tx;
    // Readable once the stage has ended (every process gone, status reported); sooner than the
    // pidfd, which waits for the namespaces' teardown. The AsyncFd owns its own duplicate, so it
    // is I/O-safe (tokio deprecated the constructor only because it also accepts fds it does
    // not own).
    #[allow(deprecated)]
    let pidfd = AsyncFd::with_interest(
        child.ended_fd().try_clone_to_owned()?,
        tokio::io::Interest::READABLE,
    )?;
    let cap = limits.output_kb.get() * 1024;
    let wall_deadline =
        tokio::time::Instant::now() + Duration::from_millis(limits.wall_time_ms.get());
    let idle = Duration::from_millis(limits.idle_ms.get());
    let mut idle_deadline = tokio::time::Instant::now() + idle;
    let mut flush_deadline: Option<tokio::time::Instant> = None;
    let mut res = StageResult::default();
    let mut exited = false;
    let mut total: u64 = 0;
    let mut stop: Option<Stop> = None;
    let mut cpu_tick = tokio::time::interval(Duration::from_millis(50));
    let mut input_tick = tokio::time::interval(Duration::from_millis(250));

    let kill = |stop: &mut Option<Stop>, why: Stop| {
        if stop.is_none() {
            *stop = Some(why);
        }
    };

    loop {
        // Hand pending input to the program (run stage only).
        if kind == Kind::Run {
            while let Some(e) = input.pending.pop_front() {
                match (e, &stdin_tx) {
                    (InputEntry::Chunk(c), Some(tx)) => {
                        let _ = tx.send(Some(c));
                    }
                    (InputEntry::Close, Some(tx)) => {
                        let _ = tx.send(None);
                        stdin_tx = None;
                    }
                    _ => {}
                }
            }
        }
        // Everything read so far has been delivered: drop it from the durable log.
        if kind == Kind::Run
            && input.cursor > 0
            && input.pending.is_empty()
            && w.jobs.trim_input(job, input.cursor).await.is_ok()
        {
            input.cursor = 0;
        }
        if input.killed {
            kill(&mut stop, Stop::Client);
        }
        if stop.is_some() && !exited {
            child.kill();
        }
        if exited && !out.open && !err.open {
            break;
        }
        let event = tokio::select! {
            r = out.pipe.read(&mut out.buf), if out.open => Event::Read { stderr: false, n: r.unwrap_or(0) },
            r = err.pipe.read(&mut err.buf), if err.open => Event::Read { stderr: true, n: r.unwrap_or(0) },
            g = pidfd.readable(), if !exited => {
                if let Ok(mut g) = g { g.retain_ready(); }
                Event::Exited
            }
            _ = async { tokio::time::sleep_until(flush_deadline.unwrap()).await }, if flush_deadline.is_some() => Event::Flush,
            _ = tokio::time::sleep_until(wall_deadline), if !exited && stop.is_none() => Event::Limit(Stop::Wall),
            _ = tokio::time::sleep_until(idle_deadline), if !exited && stop.is_none() => Event::Limit(Stop::Idle),
            _ = cpu_tick.tick(), if !exited && stop.is_none() => Event::CpuTick,
            _ = recv(&mut input.sub), if !exited => Event::Input,
            _ = input_tick.tick(), if !exited => Event::Input,
        };
        match event {
            Event::Read { stderr, n } => {
                let stream = if stderr { &mut err } else { &mut out };
                let text = stream.consume(n, &mut total, cap);
                if !text.is_empty() {
                    em.push(stream.name, &text).await;
                    collect(&mut res, kind, stderr, &text);
                }
                if n > 0 {
                    idle_deadline = tokio::time::Instant::now() + idle;
                    flush_deadline.get_or_insert(tokio::time::Instant::now() + w.config.coalesce);
                }
                if total > cap {
                    res.truncated = true;
                    kill(&mut stop, Stop::Output);
                }
            }
            Event::Exited => exited = true,
            Event::Flush => {
                em.flush().await;
                flush_deadline = None;
            }
            Event::Limit(why) => kill(&mut stop, why),
            Event::CpuTick => {
                if child.cpu_usage_ms() > limits.cpu_ms.get() {
                    kill(&mut stop, Stop::Cpu);
                }
            }
            Event::Input => input.poll(w, job).await,
        }
        if !em.pending() {
            flush_deadline = None;
        }
    }
    em.flush().await;
    drop(pidfd);
    drop(stdin_tx);
    let outcome: Outcome = tokio::task::block_in_place(|| child.wait())
        .map_err(|e| anyhow::anyhow!("waiting for the sandbox failed: {e}"))?;
    res.duration_ms = started.elapsed().as_millis() as u64;
    res.exit_code = outcome.exit_code.map(i64::from);
    res.signal = outcome.signal.map(signal_name);
    match stop {
        Some(Stop::Wall) => {
            res.timed_out = true;
            res.limit = Some(LimitKind::WallTime);
        }
        Some(Stop::Idle) => {
            res.idle_timed_out = true;
            res.limit = Some(LimitKind::Idle);
        }
        Some(Stop::Cpu) => res.limit = Some(LimitKind::Cpu),
        Some(Stop::Output) => res.limit = Some(LimitKind::Output),
        Some(Stop::Client) => res.killed_by_client = true,
        None => {}
    }
    // The cgroup's own counters explain a death better than the timer that fired after it:
    // an OOM kill is `memory`; a program that hit the pids cap (and then, typically, spun
    // retrying forks until a timer fired) is `pids`. `timedOut`/`idleTimedOut` stay true.
    if outcome.oom_killed && !matches!(res.limit, Some(LimitKind::Output)) {
        res.limit = Some(LimitKind::Memory);
        if !res.killed_by_client {
            res.signal = Some("SIGKILL".into());
            res.exit_code = None;
        }
    } else if outcome.pids_limit_hit && !matches!(res.limit, Some(LimitKind::Output)) {
        res.limit = Some(LimitKind::Pids);
    } else if outcome.signal == Some(libc::SIGXCPU) && res.limit.is_none() {
        res.limit = Some(LimitKind::Cpu);
    }
    Ok(res)
}

fn collect(res: &mut StageResult, kind: Kind, stderr: bool, s: &str) {
    if kind == Kind::Compile {
        res.output.push_str(s);
    }
    if stderr {
        res.stderr.push_str(s);
    } else {
        res.stdout.push_str(s);
    }
}

async fn recv(sub: &mut Option<executor_broker::Subscription>) -> Option<executor_broker::Message> {
    match sub {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}
