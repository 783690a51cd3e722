#!/usr/bin/env bash
# The long runs that would push `make test` past its time limit: fuzzing
# each target for at least a million executions (FUZZ_RUNS to change it),
# and the release built twice from scratch, which must be byte-identical.
# Prints the figures the closing notes report.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "fuzzing: ${FUZZ_RUNS:-1000000} executions per target (scripts/fuzz.sh long)"
bash scripts/fuzz.sh long "${FUZZ_RUNS:-1000000}"

step "the release, built twice from scratch, must be the same (scripts/release-check.sh)"
bash scripts/release-check.sh

step "all long runs passed in $(( $(date +%s) - start ))s"
