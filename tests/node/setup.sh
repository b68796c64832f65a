#!/usr/bin/env bash
# Installs the Node test clients (pusher-js, pusher, ws) exactly as locked.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
