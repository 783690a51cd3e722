#!/usr/bin/env bash
# make bench: the start-up bench and the workload bench (terraform apply,
# plan, destroy through gpufleet, beside two floors: terraform_data, which is
# Terraform's own cost, and the plugin floor, a provider made with HashiCorp's
# terraform-plugin-framework that only stores its attributes, from
# benches/plugin-floor; and, with
# GPUFLEET_BENCH_PEER=/path/to/terraform-provider-kubernetes_vX.Y.Z, the
# hashicorp/kubernetes provider) on a control plane of its own in
# target/bench-cluster. Writes target/bench/; with --publish (only from a
# clean tree) also copies the report and chart to docs/.
# One taint over 1,000 nodes is also measured with `kubectl taint nodes -l`,
# the anchor of doing it by hand, both as the user the cluster audits.
#   GPUFLEET_BENCH_RUNS (5), GPUFLEET_BENCH_SIZES (100,500),
#   GPUFLEET_BENCH_TAINT_OVER (1000), GPUFLEET_BENCH_WORKLOADS (all; slug
#   prefixes such as taint-over,fleets), GPUFLEET_BENCH_CLI (terraform),
#   GPUFLEET_BENCH_BINARY (the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
publish=0
[ "${1:-}" = --publish ] && publish=1

# Published figures name the commit they were measured at, so that commit
# must be all there was: refuse a tree with changes or untracked files.
clean_tree() {
  local changes
  changes=$(git status --porcelain --untracked-files=normal)
  [ -z "$changes" ] && return 0
  echo "make bench --publish: the tree has changes, so the figures would not be those of any commit:" >&2
  echo "$changes" >&2
  echo "commit or stash them, or run without --publish (target/bench/ only)" >&2
  return 1
}
if [ $publish = 1 ]; then
  clean_tree
  [ -z "${GPUFLEET_BENCH_BINARY:-}" ] ||
    { echo "make bench --publish measures this commit's release build, not GPUFLEET_BENCH_BINARY" >&2; exit 1; }
fi

cargo build --release --quiet
bash testbed/build.sh etcd kube-apiserver kube-scheduler kube-controller-manager kubectl plugin-floor
export GPUFLEET_CLUSTER_DIR=$PWD/target/bench-cluster
bash testbed/cluster.sh up
trap 'bash testbed/cluster.sh down >/dev/null 2>&1 || true' EXIT
export GPUFLEET_BENCH_KUBECONFIG=$GPUFLEET_CLUSTER_DIR/kubeconfig

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
cargo bench --quiet --bench startup
cargo bench --quiet --bench workloads
echo "report: target/bench/benchmarks.md, chart: target/bench/benchmarks-wall-time.svg"
if [ $publish = 1 ]; then
  clean_tree # again: the tree may have changed while the bench ran
  cp target/bench/benchmarks.md docs/benchmarks.md
  cp target/bench/benchmarks-wall-time.svg docs/benchmarks-wall-time.svg
  echo "published to docs/benchmarks.md"
fi
