#!/usr/bin/env bash
# Every test: lint, unit tests, then the control plane (built once per machine,
# cached in ~/.cache/gpufleet) and the protocol and acceptance tests with
# terraform and tofu. A cluster this script starts, it stops again.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "lint: cargo fmt --check, cargo clippy"
cargo fmt --check
cargo clippy --quiet --all-targets -- -D warnings

step "unit tests"
cargo test --lib

step "control plane and tofu (cold build takes a while; cached afterwards)"
bash tests/controlplane/build.sh

started_cluster=false
if ! bash tests/controlplane/cluster.sh status >/dev/null 2>&1; then
  step "starting the local control plane"
  bash tests/controlplane/cluster.sh up
  started_cluster=true
fi
cleanup() { if $started_cluster; then bash tests/controlplane/cluster.sh down >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT

# terraform comes from PATH where present; tofu is always built above.
required=tofu
command -v terraform >/dev/null && required=terraform,tofu
step "protocol and acceptance tests with: $required"
GPUFLEET_REQUIRE_CLIS=$required cargo test --test '*' -- --test-threads=2

step "all tests passed in $(( $(date +%s) - start ))s"
