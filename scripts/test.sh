#!/usr/bin/env bash
# The whole test suite: setup, formatting, lints, every crate's tests (as root: the sandbox
# tests create namespaces and cgroups).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace -- --test-threads 2
