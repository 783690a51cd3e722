#!/usr/bin/env bash
# The long runs that would push `make test` past its time limit: fuzzing
# each target for at least a million executions (FUZZ_RUNS to change it),
# the release built twice from scratch, which must be byte-identical, and
# the fault suite with 200 resources.
# Prints the figures the closing notes report.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "fuzzing: ${FUZZ_RUNS:-1000000} executions per target (scripts/fuzz.sh long)"
bash scripts/fuzz.sh long "${FUZZ_RUNS:-1000000}"

step "the release, built twice from scratch, must be the same (scripts/release-check.sh)"
bash scripts/release-check.sh

step "the fault suite with 200 resources, on a control plane of its own (tests/system/faults.rs)"
export GPUFLEET_FAULT_CLUSTER_DIR=$PWD/target/fault-cluster
GPUFLEET_CLUSTER_DIR=$GPUFLEET_FAULT_CLUSTER_DIR bash testbed/cluster.sh up
trap 'GPUFLEET_CLUSTER_DIR=$GPUFLEET_FAULT_CLUSTER_DIR bash testbed/cluster.sh down >/dev/null 2>&1 || true' EXIT
GPUFLEET_REQUIRE_ALL=1 cargo test --test system faults:: -- --ignored --test-threads=1 --nocapture 2>&1 | grep -E '^(fault figures|test |test result)'

step "all long runs passed in $(( $(date +%s) - start ))s"
