#!/usr/bin/env bash
# End-to-end test of Executor's push path against a real Sockudo (the Pusher-compatible server
# production users run). NOT run in CI: building Sockudo takes ~45 min on 2 cores.
#
#   scripts/sockudo-e2e.sh            # harness mode: pusher-js + pusher SDK + Rust HttpPublisher
#   EXECUTOR_BIN=target/release/executor scripts/sockudo-e2e.sh api
#                                     # also a real job through `executor serve` publishing to Sockudo
#
# Environment (defaults in brackets): SOCKUDO_VERSION [5.2.0], SOCKUDO_CACHE [~/.cache/executor-sockudo],
# SOCKUDO_PORT [6001], PUSHER_APP_ID/PUSHER_KEY/PUSHER_SECRET [executor-e2e…], EXECUTOR_PORT [8080].
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SOCKUDO_VERSION="${SOCKUDO_VERSION:-5.2.0}"
CACHE="${SOCKUDO_CACHE:-$HOME/.cache/executor-sockudo}"
PORT="${SOCKUDO_PORT:-6001}"
export PUSHER_APP_ID="${PUSHER_APP_ID:-executor-e2e}"
export PUSHER_KEY="${PUSHER_KEY:-executor-e2e-key}"
export PUSHER_SECRET="${PUSHER_SECRET:-executor-e2e-secret}"
export PUSHER_HOST=127.0.0.1 PUSHER_PORT="$PORT" PUSHER_TLS=false
MODE="${1:-harness}"

# 1. Sockudo, built once into the cache dir.
if [ ! -x "$CACHE/bin/sockudo" ]; then
  # Its metrics exporter builds protobuf definitions at compile time.
  command -v protoc >/dev/null || apt-get install -y -qq protobuf-compiler
  echo "building sockudo $SOCKUDO_VERSION into $CACHE (about 45 minutes on 2 cores)..." >&2
  cargo install sockudo --locked --version "$SOCKUDO_VERSION" --root "$CACHE"
fi

# 2. Its config: one app with Executor's credentials, the HTTP API rate limit raised (the
#    default, 100 requests/min, is far below one job's output), memory drivers (one node).
WORK="$(mktemp -d)"
cleanup() {
  status=$?
  if [ "$status" -ne 0 ]; then
    for f in "$WORK"/*.log; do echo "--- $f" >&2; tail -n 30 "$f" >&2; done
  fi
  for pid in ${PIDS:-}; do kill "$pid" 2>/dev/null || true; done
  # Sockudo drains gracefully: wait, so the next run finds its port free.
  for pid in ${PIDS:-}; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
cat > "$WORK/config.json" <<JSON
{
  "debug": false,
  "host": "127.0.0.1",
  "port": $PORT,
  "adapter": { "driver": "local" },
  "cache": { "driver": "memory" },
  "app_manager": {
    "driver": "memory",
    "array": {
      "apps": [
        {
          "id": "$PUSHER_APP_ID",
          "key": "$PUSHER_KEY",
          "secret": "$PUSHER_SECRET",
          "enabled": true,
          "max_connections": 0,
          "enable_client_messages": false,
          "max_client_events_per_second": 0,
          "max_backend_events_per_second": null,
          "max_event_payload_in_kb": 10,
          "max_event_batch_size": 10
        }
      ]
    }
  },
  "rate_limiter": {
    "enabled": true,
    "driver": "memory",
    "api_rate_limit": { "max_requests": 100000, "window_seconds": 60, "identifier": "api", "trust_hops": 0 },
    "websocket_rate_limit": { "max_requests": 1000, "window_seconds": 60, "identifier": "websocket_connect", "trust_hops": 0 }
  }
}
JSON
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  echo "port $PORT is already in use (an earlier Sockudo still shutting down?); set SOCKUDO_PORT" >&2
  exit 1
fi
"$CACHE/bin/sockudo" --config="$WORK/config.json" > "$WORK/sockudo.log" 2>&1 &
PIDS="$!"
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$PORT/up/$PUSHER_APP_ID" >/dev/null 2>&1 && break
  curl -fsS "http://127.0.0.1:$PORT/up" >/dev/null 2>&1 && break
  sleep 0.1
done

# 3. The Node clients.
[ -d "$ROOT/tests/node/node_modules" ] || "$ROOT/tests/node/setup.sh"

if [ "$MODE" = "api" ]; then
  # 4a. A real job: executor serve publishing to Sockudo through its HTTP API.
  : "${EXECUTOR_BIN:?set EXECUTOR_BIN to the executor binary}"
  EXECUTOR_PORT="${EXECUTOR_PORT:-8080}"
  export EXECUTOR_API_TOKEN="${EXECUTOR_API_TOKEN:-e2e-token}" ENABLE_CHANNEL_AUTH=true
  # Executor's names for the same credentials; PUSHER_HOST/PUSHER_PORT point it at Sockudo.
  export PUSHER_APP_KEY="$PUSHER_KEY" PUSHER_APP_SECRET="$PUSHER_SECRET" PUSHER_USE_TLS=false
  "$EXECUTOR_BIN" serve --listen "127.0.0.1:$EXECUTOR_PORT" --languages "$ROOT/languages" \
    --data-dir "$WORK/data" --first-slot 980 > "$WORK/executor.log" 2>&1 &
  PIDS="$PIDS $!"
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$EXECUTOR_PORT/health" >/dev/null 2>&1 && break; sleep 0.1; done
  (cd "$ROOT/tests/node" && MODE=api EXECUTOR_API_URL="http://127.0.0.1:$EXECUTOR_PORT" node e2e.mjs)
else
  # 4b. The harness (stand-in channel-auth + Rust HttpPublisher) around Sockudo.
  cargo build -p executor-push --example push_test_server --manifest-path "$ROOT/Cargo.toml"
  mkfifo "$WORK/hold"
  "$ROOT/target/debug/examples/push_test_server" 127.0.0.1 "$PORT" < "$WORK/hold" > "$WORK/harness.json" &
  PIDS="$PIDS $!"
  exec 3> "$WORK/hold" # keeps the harness running until this script exits
  for _ in $(seq 1 100); do [ -s "$WORK/harness.json" ] && break; sleep 0.1; done
  API_URL="$(sed -n 's/.*"EXECUTOR_API_URL":"\([^"]*\)".*/\1/p' "$WORK/harness.json")"
  (cd "$ROOT/tests/node" && MODE=harness EXECUTOR_API_URL="$API_URL" EXECUTOR_API_TOKEN=test-token node e2e.mjs)
fi
