#!/usr/bin/env bash
# Installs and starts what Executor and its tests need on a Debian host. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v node >/dev/null || need_apt+=(nodejs npm)
command -v gcc >/dev/null || need_apt+=(gcc g++)
command -v stdbuf >/dev/null || need_apt+=(coreutils)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
# Redis: start one on 127.0.0.1:6379 unless something answers there.
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/executor-ci.log
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
fi
redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null
# Node packages of the pusher-js end-to-end tests (from the committed lock file).
if [ ! -d tests/node/node_modules/pusher-js ]; then
  (cd tests/node && npm ci --no-audit --no-fund --silent)
fi
echo "setup done"
