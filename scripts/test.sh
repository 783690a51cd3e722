#!/usr/bin/env bash
# Every test: lint, unit tests, then the control plane (built once per machine,
# cached in ~/.cache/gpufleet) and the protocol and acceptance tests with
# terraform and tofu, on a cluster of their own.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "lint: cargo fmt --check, cargo clippy, cargo deny"
bash scripts/lint.sh

step "unit tests"
cargo test --lib

step "control plane and tofu (cold build takes a while; cached afterwards)"
bash tests/controlplane/build.sh

# A cluster of its own, so a `make demo` cluster (with the seed's fixed
# names) never meets the tests. Stopped again at the end.
export GPUFLEET_CLUSTER_DIR=$PWD/target/test-cluster
export GPUFLEET_TEST_KUBECONFIG=$GPUFLEET_CLUSTER_DIR/kubeconfig
# The provider runs as a user bound only to docs/rbac.yaml's roles, so the
# whole suite proves those roles are enough (the tests' own checks behind
# Terraform's back stay admin). One run: a second one as admin would add
# about 5.5 minutes for nothing the least-privilege run does not cover.
export GPUFLEET_TEST_PROVIDER_KUBECONFIG=$GPUFLEET_CLUSTER_DIR/kubeconfig-provider
step "starting the test control plane in target/test-cluster"
bash tests/controlplane/cluster.sh up
cleanup() { bash tests/controlplane/cluster.sh down >/dev/null 2>&1 || true; }
trap cleanup EXIT

# terraform comes from PATH where present; tofu is always built above.
required=tofu
command -v terraform >/dev/null && required=terraform,tofu
step "protocol and acceptance tests with: $required (and terraform 1.5.7, tofu 1.8.11 in tests/compat.rs)"
# sed reads all of it: `head` would close the pipe early (SIGPIPE under pipefail).
first_line() { "$@" 2>/dev/null | sed -n 1p; }
if command -v terraform >/dev/null; then first_line terraform version; fi
for cli in tofu terraform-1.5.7 tofu-1.8.11; do first_line "target/tools/bin/$cli" version; done
echo "Kubernetes $(target/tools/bin/kube-apiserver --version | cut -d' ' -f2), etcd $(target/tools/bin/etcd --version | sed -n 's/^etcd Version: //p')"
GPUFLEET_REQUIRE_CLIS=$required GPUFLEET_REQUIRE_OLDER_CLIS=1 cargo test --test '*' -- --test-threads=2

step "all tests passed in $(( $(date +%s) - start ))s"
