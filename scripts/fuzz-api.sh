#!/usr/bin/env bash
# Property-based fuzzing of the whole HTTP API from its own OpenAPI document (schemathesis):
# no 5xx, documented status codes, response bodies that match the schema. ~1 minute.
# Not part of CI (it installs schemathesis from PyPI); run it after changing the API.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v st >/dev/null || pip install -q schemathesis
cargo build -q -p executor
PORT="${PORT:-18181}"
DATA="$(mktemp -d)"
EXECUTOR_API_TOKEN=fuzz ENABLE_CHANNEL_AUTH=true ./target/debug/executor serve \
  --listen "127.0.0.1:$PORT" --push-listen 127.0.0.1:0 --data-dir "$DATA" --first-slot 950 >"$DATA/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
st run "http://127.0.0.1:$PORT/openapi.json" -H "Authorization: Bearer fuzz" \
  -c not_a_server_error -c status_code_conformance -c content_type_conformance \
  -c response_schema_conformance -c response_headers_conformance \
  --max-examples "${EXAMPLES:-60}" --workers 2
