#!/usr/bin/env bash
# Installs and starts what Executor and its tests need on a Debian host, including the
# toolchains the language manifests (languages/*/manifest.json) run. Idempotent, and fast when
# everything is present (no apt or npm call then).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: binary -> package. Toolchains of the shipped manifests, and Redis for tests.
need_apt=()
want() { command -v "$1" >/dev/null 2>&1 || need_apt+=("$2"); }
want redis-server redis-server
want npm npm
want stdbuf coreutils
# Absolute paths: the ones the manifests' versionCommand and the sandbox's PATH find.
want /usr/bin/node nodejs
want /usr/bin/gcc gcc
want /usr/bin/g++ g++
want /usr/bin/python3 python3
want /usr/bin/perl perl
want /usr/bin/tclsh tcl
want /usr/bin/javac openjdk-17-jdk-headless
want /usr/bin/ruby ruby
want /usr/bin/go golang-go
want /usr/bin/php php-cli
want /usr/bin/lua5.4 lua5.4
want /usr/bin/gfortran gfortran
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# Project-owned toolchains live under /opt/executor, outside any home directory, and are bound
# read-only into the sandbox by the manifests' `mounts`.
mkdir -p /opt/executor

# TypeScript: the compiler and Node's type definitions, from the committed lock file.
ts=/opt/executor/typescript
if ! cmp -s languages/typescript/package-lock.json "$ts/package-lock.json" || [ ! -x "$ts/node_modules/typescript/bin/tsc" ]; then
  echo "setup: installing TypeScript into $ts"
  mkdir -p "$ts"
  cp languages/typescript/package.json languages/typescript/package-lock.json "$ts/"
  (cd "$ts" && npm ci --no-audit --no-fund --silent)
fi

# Rust: rustup's default toolchain lives under /root (mode 0700), which the sandbox's
# unprivileged user cannot traverse, and binding /root would expose more than the toolchain.
# Copy only its bin/ and lib/ (hard links when on the same file system: instant, no space) to
# /opt/executor/rust; redone when the toolchain's rustc changes.
rust=/opt/executor/rust
rustc_bin=$(command -v rustc || true)
if [ -n "$rustc_bin" ] && command -v rustup >/dev/null 2>&1; then
  src=$(rustc --print sysroot)
  src=$(readlink -f "$src")
  if [ "$(cat "$rust/.source" 2>/dev/null)" != "$src $(stat -c %i "$src/bin/rustc")" ]; then
    echo "setup: copying the Rust toolchain $src to $rust"
    rm -rf "$rust.new"
    mkdir -p "$rust.new"
    cp -al "$src/bin" "$src/lib" "$rust.new/" 2>/dev/null || cp -a "$src/bin" "$src/lib" "$rust.new/"
    echo "$src $(stat -c %i "$src/bin/rustc")" > "$rust.new/.source"
    rm -rf "$rust"
    mv "$rust.new" "$rust"
  fi
else
  echo "setup: no rustup toolchain found (https://rustup.rs); the rust language will be unavailable"
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
