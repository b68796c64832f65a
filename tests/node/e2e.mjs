// End-to-end test of Executor's push path with the official Pusher clients.
//
// MODE=harness (default): against the Rust test harness (crates/executor-push/tests/push),
//   i.e. the embedded push server or an external one (Sockudo), with a stand-in channel-auth
//   route. Checks, with pusher-js as the subscriber:
//     - channel authorization through `${EXECUTOR_API_URL}/v1/channel-auth` (pusher-js's own
//       form-encoded request, Bearer header) and subscription to private-run-<id>;
//     - events triggered by the official `pusher` Node SDK over the signed HTTP API (single
//       and batch) arrive complete and in seq order;
//     - events published by the Rust HttpPublisher (large, multi-byte, escaped chunks) arrive
//       complete, in seq order and intact;
//     - a wrong signature is refused by the push server; a disallowed channel gets 403;
//     - a private-cache-* channel replays its last event to a late subscriber, or sends
//       pusher:cache_miss.
// MODE=api: a real job through a running Executor (`executor serve`): POST /v1/execute,
//   subscribe to private-run-<jobId> (authorized by /v1/channel-auth), POST start, collect
//   events until `result`, check seq 0..n without gaps, read /v1/jobs/<id>/status.
//
// Environment: EXECUTOR_API_URL, EXECUTOR_API_TOKEN, PUSHER_HOST, PUSHER_PORT, PUSHER_TLS,
// PUSHER_KEY (+ PUSHER_APP_ID, PUSHER_SECRET in harness mode: the SDK signs with them).
// MODE=api also reads LANGUAGE (default python), SOURCE_NAME, SOURCE, EXPECT_STDOUT, LINES.
// Prints one JSON summary line on stdout; exits 0 when every check passed.

import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';

const require = createRequire(import.meta.url);
const PusherClient = require('pusher-js');
const PusherServer = require('pusher');

const env = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined || v === '') {
    if (fallback === undefined) throw new Error(`missing environment variable ${name}`);
    return fallback;
  }
  return v;
};

const MODE = env('MODE', 'harness');
const API = env('EXECUTOR_API_URL').replace(/\/$/, '');
const TOKEN = env('EXECUTOR_API_TOKEN');
const HOST = env('PUSHER_HOST', '127.0.0.1');
const PORT = Number(env('PUSHER_PORT'));
const TLS = env('PUSHER_TLS', 'false') === 'true';
const KEY = env('PUSHER_KEY');
const TIMEOUT_MS = Number(env('E2E_TIMEOUT_MS', '30000'));

const log = (...args) => console.error('[e2e]', ...args);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, predicate, ms = TIMEOUT_MS) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function client() {
  return new PusherClient(KEY, {
    cluster: 'local',
    wsHost: HOST,
    wsPort: PORT,
    wssPort: PORT,
    forceTLS: TLS,
    enabledTransports: TLS ? ['wss'] : ['ws'],
    disableStats: true,
    channelAuthorization: {
      endpoint: `${API}/v1/channel-auth`,
      transport: 'ajax',
      headers: { Authorization: `Bearer ${TOKEN}` },
    },
  });
}

async function connected(pusher) {
  await new Promise((resolve, reject) => {
    if (pusher.connection.state === 'connected') return resolve();
    const timer = setTimeout(() => reject(new Error(`not connected: ${pusher.connection.state}`)), TIMEOUT_MS);
    pusher.connection.bind('connected', () => { clearTimeout(timer); resolve(); });
  });
  return pusher.connection.socket_id;
}

// Subscribes and records everything the channel receives, in arrival order.
function subscribe(pusher, name) {
  const rec = { name, events: [], succeeded: false, error: null, connectionErrors: [] };
  const channel = pusher.subscribe(name);
  channel.bind('pusher:subscription_succeeded', () => { rec.succeeded = true; });
  channel.bind('pusher:subscription_error', (e) => { rec.error = e; });
  channel.bind_global((event, data) => {
    if (!event.startsWith('pusher:') && !event.startsWith('pusher_internal:')) rec.events.push({ event, data });
    if (event === 'pusher:cache_miss') rec.cacheMiss = true;
  });
  pusher.connection.bind('error', (e) => rec.connectionErrors.push(e));
  return rec;
}

// Output events must carry seq 0..n-1 (or first..), each once, in arrival order.
function checkSeq(events, first = 0) {
  const seqs = events.filter((e) => e.data && typeof e.data.seq === 'number').map((e) => e.data.seq);
  seqs.forEach((s, i) => {
    if (s !== first + i) throw new Error(`seq out of order or missing at position ${i}: got ${s}, want ${first + i} (seqs: ${seqs.slice(Math.max(0, i - 3), i + 3)})`);
  });
  return seqs.length;
}

async function post(path, body) {
  const res = await fetch(`${API}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

async function harness() {
  const sdk = new PusherServer({
    appId: env('PUSHER_APP_ID'),
    key: KEY,
    secret: env('PUSHER_SECRET'),
    host: HOST,
    port: String(PORT),
    useTLS: TLS,
  });
  const summary = { mode: 'harness', checks: {} };
  const pusher = client();
  const socketId = await connected(pusher);
  summary.socketId = socketId;

  // 1. pusher SDK -> HTTP API -> pusher-js, single triggers and batches, in seq order.
  const id = randomUUID();
  const run = subscribe(pusher, `private-run-${id}`);
  await waitFor('subscription to the run channel', () => run.succeeded || run.error);
  if (run.error) throw new Error(`subscription refused: ${JSON.stringify(run.error)}`);
  await sdk.trigger(run.name, 'stage', { phase: 'queued' });
  let seq = 0;
  for (; seq < 20; seq++) await sdk.trigger(run.name, 'stdout', { chunk: `line ${seq}\n`, seq });
  for (let b = 0; b < 3; b++) {
    const batch = [];
    for (let i = 0; i < 10; i++, seq++) batch.push({ channel: run.name, name: seq % 2 ? 'stderr' : 'stdout', data: { chunk: `b${b} ${seq}\n`, seq } });
    await sdk.triggerBatch(batch);
  }
  await sdk.trigger(run.name, 'result', { exitCode: 0, signal: null, timedOut: false, idleTimedOut: false, truncated: false, durationMs: 1 });
  await waitFor('the result event from the SDK', () => run.events.some((e) => e.event === 'result'));
  if (run.events[0].event !== 'stage') throw new Error('first event is not stage');
  if (run.events[run.events.length - 1].event !== 'result') throw new Error('last event is not result');
  summary.checks.sdkEvents = checkSeq(run.events);
  if (summary.checks.sdkEvents !== seq) throw new Error(`SDK: got ${summary.checks.sdkEvents} output events, want ${seq}`);

  // 2. Rust HttpPublisher -> HTTP API -> pusher-js: large escaped multi-byte chunks, in order.
  const bulk = subscribe(pusher, `private-run-${randomUUID()}`);
  await waitFor('subscription to the bulk channel', () => bulk.succeeded || bulk.error);
  if (bulk.error) throw new Error(`subscription refused: ${JSON.stringify(bulk.error)}`);
  const count = 300;
  const chunkChars = 3000;
  const published = await post('/test/publish', { channel: bulk.name, count, chunk_chars: chunkChars });
  await waitFor(`${count} events from HttpPublisher`, () => bulk.events.length >= count);
  summary.checks.rustEvents = checkSeq(bulk.events);
  const unit = 'é"\\\n€x';
  const expected = Array.from({ length: chunkChars }, (_, i) => [...unit][i % [...unit].length]).join('');
  if (!bulk.events.every((e) => e.data.chunk === expected)) throw new Error('a chunk arrived altered');
  summary.checks.rustStats = published.stats;

  // 3. A wrong signature is refused by the push server (not by the auth route).
  const forged = subscribe(pusher, `private-run-${randomUUID()}-forged`);
  await waitFor('refusal of a forged signature', () => forged.error || forged.connectionErrors.some((e) => e?.data?.code === 4009) || forged.succeeded, 5000);
  await sleep(200);
  if (forged.succeeded) throw new Error('a wrong signature was accepted');
  summary.checks.wrongSignatureRefused = forged.error ? forged.error : forged.connectionErrors.find((e) => e?.data?.code === 4009)?.data;

  // 4. The auth route refuses channels other than private-run-* with 403.
  const other = subscribe(pusher, `private-other-${randomUUID()}`);
  await waitFor('403 from channel-auth', () => other.error || other.succeeded, 5000);
  if (other.succeeded || other.error.status !== 403) throw new Error(`expected a 403 AuthError, got ${JSON.stringify(other.error)}`);
  summary.checks.disallowedChannel = other.error.status;

  // 5. Late join: a cache channel replays the last result to a new subscriber.
  const cacheName = `private-cache-run-${id}`;
  await sdk.trigger(cacheName, 'result', { exitCode: 0, seq: 'last' });
  const late = client();
  await connected(late);
  const cached = subscribe(late, cacheName);
  await waitFor('the cached result', () => cached.events.some((e) => e.event === 'result') || cached.error);
  if (cached.error) throw new Error(`cache subscription refused: ${JSON.stringify(cached.error)}`);
  summary.checks.cacheReplay = cached.events[0].data;
  const empty = subscribe(late, `private-cache-run-${randomUUID()}`);
  await waitFor('pusher:cache_miss', () => empty.cacheMiss || empty.error);
  summary.checks.cacheMiss = Boolean(empty.cacheMiss);

  late.disconnect();
  pusher.disconnect();
  return summary;
}

async function api() {
  const language = env('LANGUAGE', 'python');
  const lines = Number(env('LINES', '200'));
  const sourceName = env('SOURCE_NAME', 'main.py');
  const source = env('SOURCE', `import sys\nfor i in range(${lines}):\n    print("line", i)\nprint("done", file=sys.stderr)\n`);
  const summary = { mode: 'api', language };

  const pusher = client();
  await connected(pusher);
  const job = await post('/v1/execute', { language, files: [{ name: sourceName, content: source }] });
  summary.jobId = job.jobId;
  if (job.channel !== `private-run-${job.jobId}`) throw new Error(`unexpected channel ${job.channel}`);
  const run = subscribe(pusher, job.channel);
  await waitFor('subscription to the job channel', () => run.succeeded || run.error);
  if (run.error) throw new Error(`subscription refused: ${JSON.stringify(run.error)}`);
  await post(`/v1/jobs/${job.jobId}/start`);
  await waitFor('the result event', () => run.events.some((e) => e.event === 'result'), Number(env('JOB_TIMEOUT_MS', '60000')));
  await sleep(100); // nothing may follow result; give a stray event the chance to show up

  const names = run.events.map((e) => e.event);
  if (names[names.length - 1] !== 'result') throw new Error(`events after result: ${names.slice(names.indexOf('result'))}`);
  if (names[0] !== 'stage' || run.events[0].data.phase !== 'queued') throw new Error(`first event is ${names[0]} ${JSON.stringify(run.events[0].data)}, want stage queued`);
  summary.outputEvents = checkSeq(run.events);
  summary.stages = run.events.filter((e) => e.event === 'stage').map((e) => e.data.phase);
  summary.stdout = run.events.filter((e) => e.event === 'stdout').map((e) => e.data.chunk).join('');
  summary.stderr = run.events.filter((e) => e.event === 'stderr').map((e) => e.data.chunk).join('');
  summary.result = run.events[run.events.length - 1].data;
  const expectStdout = process.env.EXPECT_STDOUT ?? (process.env.SOURCE ? undefined : Array.from({ length: lines }, (_, i) => `line ${i}\n`).join(''));
  if (expectStdout !== undefined && summary.stdout !== expectStdout) throw new Error(`stdout differs: ${JSON.stringify(summary.stdout.slice(0, 200))}`);
  const status = await fetch(`${API}/v1/jobs/${job.jobId}/status`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  summary.status = (await status.json()).state;
  pusher.disconnect();
  if (process.env.LOG_STREAMS !== 'true') { delete summary.stdout; delete summary.stderr; }
  return summary;
}

try {
  const summary = MODE === 'api' ? await api() : await harness();
  console.log(JSON.stringify({ ok: true, ...summary }));
  process.exit(0);
} catch (e) {
  console.log(JSON.stringify({ ok: false, mode: MODE, error: String(e?.stack ?? e) }));
  process.exit(1);
}
