#!/usr/bin/env bash
# The long runs that would push `make test` past its time limit: fuzzing
# each target for at least a million executions (FUZZ_RUNS to change it),
# the release built twice from scratch, which must be byte-identical,
# the fault suite with 200 resources, and the acceptance tier again on the
# newest Kubernetes (1.37; make test runs it on the pinned 1.34).
# Prints the figures the closing notes report.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "fuzzing: ${FUZZ_RUNS:-1000000} executions per target (scripts/fuzz.sh long)"
bash scripts/fuzz.sh long "${FUZZ_RUNS:-1000000}"

step "the release, built twice from scratch, must be the same (scripts/release-check.sh)"
bash scripts/release-check.sh

# Control planes of their own, stopped at the end whatever happens.
clusters=()
trap 'for dir in "${clusters[@]}"; do GPUFLEET_CLUSTER_DIR=$dir bash testbed/cluster.sh down >/dev/null 2>&1 || true; done' EXIT
# cluster_up <dir> <cluster.sh up flags...>
cluster_up() {
  clusters+=("$1")
  GPUFLEET_CLUSTER_DIR=$1 bash testbed/cluster.sh up "${@:2}"
}

step "the fault suite with 200 resources, on a control plane of its own (tests/system/faults.rs)"
export GPUFLEET_FAULT_CLUSTER_DIR=$PWD/target/fault-cluster
cluster_up "$GPUFLEET_FAULT_CLUSTER_DIR"
GPUFLEET_REQUIRE_ALL=1 cargo test --test system faults:: -- --ignored --test-threads=1 --nocapture 2>&1 | grep -E '^(fault figures|test |test result)'
GPUFLEET_CLUSTER_DIR=$GPUFLEET_FAULT_CLUSTER_DIR bash testbed/cluster.sh down

step "the acceptance tier on Kubernetes 1.37 (testbed/k8s-1.37) with Karpenter, terraform and tofu, in target/k137-cluster"
k137_start=$(date +%s)
bash testbed/build.sh kube-apiserver-1.37 kube-scheduler-1.37 kube-controller-manager-1.37 kubectl-1.37
k137=$PWD/target/k137-cluster
cluster_up "$k137" --kubernetes=1.37 --karpenter
(
  # As make test runs the tier (scripts/test.sh): the provider as the user
  # bound to docs/rbac.yaml's roles, nothing skipped, three tests at a time;
  # the test that restarts the API server after the others, so none meets it down.
  export GPUFLEET_CLUSTER_DIR=$k137 GPUFLEET_TEST_KUBECONFIG=$k137/kubeconfig \
    GPUFLEET_TEST_PROVIDER_KUBECONFIG=$k137/kubeconfig-provider GPUFLEET_REQUIRE_ALL=1
  restarts_api_server=node_join::an_api_server_without_bootstrap_token_authentication_is_named
  cargo test --test acceptance -- --test-threads=3 --skip "$restarts_api_server"
  cargo test --test acceptance -- --exact "$restarts_api_server"
)
GPUFLEET_CLUSTER_DIR=$k137 bash testbed/cluster.sh down
echo "the acceptance tier on Kubernetes 1.37 took $(( $(date +%s) - k137_start ))s, its control plane's start and stop included"

step "all long runs passed in $(( $(date +%s) - start ))s"
