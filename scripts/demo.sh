#!/usr/bin/env bash
# The main job, live: build and install the provider, start the local control
# plane with Karpenter's kwok provider and Kueue's manager, then run the seed scenario narrated
# (scripts/demo.rs: the system test's own scenario, test-support's
# `scenario`). It applies examples/training-and-inference, runs its workloads
# step by step while Karpenter creates nodes and the scheduler places pods,
# checks every step as the test does, and ends with a summary of who ran
# where and why, leaving the fleets declared (state in target/demo). Safe to
# re-run: a run first destroys what the last one declared. `make demo-down`
# removes everything.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
# The demo's own cluster, whatever test cluster GPUFLEET_CLUSTER_DIR names.
export GPUFLEET_CLUSTER_DIR=$repo/target/cluster
start=$SECONDS

bash scripts/install.sh
bash testbed/cluster.sh up --karpenter --kueue
cargo build --quiet --example demo
echo "==> provider installed, control plane up and the scenario built in $((SECONDS - start))s"
exec "${CARGO_TARGET_DIR:-$repo/target}/debug/examples/demo" "$GPUFLEET_CLUSTER_DIR/kubeconfig" "$repo/target/demo"
