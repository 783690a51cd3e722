#!/usr/bin/env bash
# Every test: lint, unit tests, then the testbed (built once per machine,
# cached in ~/.cache/gpufleet) and the three tiers with terraform and tofu:
# offline (no cluster), acceptance and system, on a cluster of their own
# where Karpenter's kwok provider turns fleets into nodes. The fuzzing
# itself (nightly, a million executions per target) is make test-long;
# the offline tier replays the committed corpus (tests/offline/fuzz_corpus.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "lint: cargo fmt --check, cargo clippy, cargo deny"
bash scripts/lint.sh
cargo fmt --check --manifest-path fuzz/Cargo.toml

step "unit tests"
cargo test --workspace --lib

step "testbed: control plane, tofu, tfplugindocs and helm (cold build takes a while; cached afterwards)"
bash testbed/build.sh

# Clusters of their own, so a `make demo` cluster (with the seed's fixed
# names) never meets the tests: one for the acceptance tier and one for the
# system tier, so the two tiers run side by side (most of their time is
# waiting on the CLIs, the API server and Karpenter, not CPU); one whose
# Karpenter offers EC2's instance types, for the tests that need a cluster
# to themselves (below); and one for the fault suite (tests/system/faults.rs),
# which kills and restarts its components so no other test sees a fault.
# All stopped at the end.
clusters=(test system ec2 fault)
# The acceptance, system and fault clusters also run Kueue (the queue tests,
# the seed's teams, the least-privilege workouts, the queue faults): about
# 15-26 s more to their start, behind the offline tier.
declare -A up_flags=([test]="--karpenter --kueue" [system]="--karpenter --kueue" [ec2]=--karpenter=aws [fault]=--kueue)
cluster_dir() { echo "$PWD/target/$1-cluster"; }
on_cluster() {
  export GPUFLEET_CLUSTER_DIR=$1
  export GPUFLEET_TEST_KUBECONFIG=$1/kubeconfig
  # The provider runs as a user bound only to docs/rbac.yaml's roles, so the
  # whole suite proves those roles are enough (the tests' own checks behind
  # Terraform's back stay admin). One run: a second one as admin would add
  # about 5.5 minutes for nothing the least-privilege run does not cover.
  export GPUFLEET_TEST_PROVIDER_KUBECONFIG=$1/kubeconfig-provider
}
on_cluster "$(cluster_dir test)"
GPUFLEET_FAULT_CLUSTER_DIR=$(cluster_dir fault)
export GPUFLEET_FAULT_CLUSTER_DIR
# Side by side: each waits up to 10 s for a component to heed SIGTERM.
stop_clusters() {
  local name stoppers=()
  for name in "${clusters[@]}"; do
    GPUFLEET_CLUSTER_DIR=$(cluster_dir "$name") bash testbed/cluster.sh down >/dev/null 2>&1 &
    stoppers+=($!)
  done
  wait "${stoppers[@]}" || true
}
step "starting the control planes with Karpenter in target/test-cluster, target/system-cluster and target/ec2-cluster (EC2's instance types), and the fault suite's in target/fault-cluster, in the background while the offline tier runs"
stop_clusters # what an interrupted run left
declare -A cluster_up
for name in "${clusters[@]}"; do
  # shellcheck disable=SC2086 # the flags are separate words
  GPUFLEET_CLUSTER_DIR=$(cluster_dir "$name") bash testbed/cluster.sh up ${up_flags[$name]} \
    >"target/$name-cluster.log" 2>&1 &
  cluster_up[$name]=$!
done
cleanup() {
  wait "${cluster_up[@]}" 2>/dev/null || true
  stop_clusters
}
trap cleanup EXIT

# Both CLIs are required: tofu is built above, Terraform must be on PATH.
command -v terraform >/dev/null || {
  echo "make test needs terraform on PATH (OpenTofu is built for you; Terraform is not)" >&2
  exit 1
}
step "the CLIs and components the tiers run with (terraform 1.13.3 for identity tests while terraform predates identities; terraform 1.5.7, tofu 1.8.11 in tests/acceptance/compat.rs)"
# sed reads all of it: `head` would close the pipe early (SIGPIPE under pipefail).
first_line() { "$@" 2>/dev/null | sed -n 1p; }
first_line terraform version
for cli in tofu terraform-1.13.3 terraform-1.5.7 tofu-1.8.11; do first_line "target/tools/bin/$cli" version; done
first_line target/tools/bin/tfplugindocs --version
first_line target/tools/bin/helm version --short
echo "Kubernetes $(target/tools/bin/kube-apiserver --version | cut -d' ' -f2), etcd $(target/tools/bin/etcd --version | sed -n 's/^etcd Version: //p'), kwok $(target/tools/bin/kwok --version | awk 'NR == 1 { print $3 }'), Karpenter $(sed -n 's/^\tsigs.k8s.io\/karpenter \(v[^ ]*\).*/\1/p' testbed/karpenter/go.mod)"
# Every CLI and every cluster extra present; a test that would skip fails.
export GPUFLEET_REQUIRE_ALL=1
# Threads per tier, on 2 cores: the offline tier keeps both busy with the
# CLIs and the plugin; acceptance tests mostly wait on the API server and
# Karpenter, so a third runs while two wait; the system tier's tests each
# drive many objects at once (those that need the ClusterPolicy take
# turns, tests/system/main.rs).
step "offline tier: bad input, docs, examples, fuzz corpus, release, version (no cluster)"
cargo test --test offline -- --test-threads=2
# The test binaries are built once, before the tiers run side by side.
cargo test --no-run --test acceptance --test system
step "acceptance tier (target/test-cluster), system tier (target/system-cluster), the fault suite (target/fault-cluster) and the tests that need a cluster to themselves (target/ec2-cluster) side by side; their output follows each as it ends"
# The tests that take a ClusterPolicy guard (common::exclusive) take turns,
# and a thread waiting its turn holds one of the tier's three slots: run
# among the others (in name order, so the guarded ones come together), they
# left slots idle for 548 s of the tier's 975 s (2026-12-07, a busy VM). So
# they run in a process of their own, two at a time, beside the others on
# the same cluster; the others' process refuses a guard
# (GPUFLEET_CLUSTER_POLICY_TESTS_ELSEWHERE), so a new test that takes one
# fails until its module is listed here.
cluster_policy_modules=(mig_strategy:: sharing:: simulated_device_plugin:: unshared_default::
  prerequisites::present_prerequisites_give_no_warning)
acceptance_tier() {
  set -e
  local module skips=() policy_tests status=0
  for module in "${cluster_policy_modules[@]}"; do skips+=(--skip "$module"); done
  cargo test --test acceptance -- --test-threads=2 "${cluster_policy_modules[@]}" \
    >target/acceptance-cluster-policy.log 2>&1 &
  policy_tests=$!
  GPUFLEET_CLUSTER_POLICY_TESTS_ELSEWHERE=1 cargo test --test acceptance -- \
    --test-threads=3 --skip "$restarts_api_server" "${skips[@]}" || status=1
  wait "$policy_tests" || status=1
  echo "the tests that take a ClusterPolicy guard, run beside the others:"
  cat target/acceptance-cluster-policy.log
  return "$status"
}
# The one test that restarts the API server with other flags runs on a
# cluster no other test uses at that time, so none meets it down.
restarts_api_server=node_join::an_api_server_without_bootstrap_token_authentication_is_named
system_tier() {
  set -e
  on_cluster "$(cluster_dir system)"
  # Those that need the ClusterPolicy take turns (tests/system/main.rs).
  cargo test --test system -- --test-threads=2 --skip faults::
}
# The fault suite kills and restarts its own control plane, so its tests
# take turns (tests/system/faults.rs, ONE_AT_A_TIME). Among the system
# tier's two threads, a fault test waiting its turn held one while the
# system cluster sat idle: that tier took 881 s (2026-12-07). So they run
# one at a time in a lane of their own, beside the others.
fault_suite() {
  set -e
  on_cluster "$(cluster_dir system)"
  cargo test --test system -- --test-threads=1 faults::
}
# Karpenter there offers EC2's instance types with karpenter-provider-aws's
# labels (testbed/build.sh aws-instance-types): the scenario runs again with
# its fleets under the aws scheme, then a fleet of fractional GPUs, one test
# at a time, after the API-server restart. These mostly wait on Karpenter
# and kwok, so they cost the tiers beside them little CPU.
own_cluster_tests() {
  set -e
  on_cluster "$(cluster_dir ec2)"
  cargo test --test acceptance -- --exact "$restarts_api_server"
  cargo test --test system -- --ignored --exact --test-threads=1 \
    scenario::training_and_inference_on_ec2 scenario::fractional_gpus_on_ec2
}
for name in test system ec2; do
  wait "${cluster_up[$name]}" || { cat "target/$name-cluster.log"; echo "the $name cluster did not start" >&2; exit 1; }
done
lanes=(acceptance_tier system_tier fault_suite own_cluster_tests)
declare -A lane_pid
for lane in "${lanes[@]}"; do
  "$lane" >"target/${lane//_/-}.log" 2>&1 &
  lane_pid[$lane]=$!
done
failed=0
for lane in "${lanes[@]}"; do
  if wait "${lane_pid[$lane]}"; then result=passed; else result=FAILED; failed=1; fi
  step "${lane//_/ } $result; its output:"
  cat "target/${lane//_/-}.log"
done
[ "$failed" = 0 ] || { echo "a tier failed: see its output above" >&2; exit 1; }

step "all tests passed in $(( $(date +%s) - start ))s"
