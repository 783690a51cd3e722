#!/usr/bin/env bash
# The main job, live: build and install the provider, start the local control
# plane with Karpenter's kwok provider, apply examples/training-and-inference,
# then run its workloads step by step while Karpenter creates nodes and the
# scheduler places pods, and end with a summary of who ran where and why.
# Safe to re-run; `make demo-down` removes everything.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
example=$repo/examples/training-and-inference
work=$repo/target/demo
namespace=ml
fleets=(training inference general)
t0=$SECONDS

bash scripts/install.sh
bash testbed/cluster.sh up --karpenter
echo "==> provider built and control plane up in ${SECONDS}s; the scenario's clock starts now"
t0=$SECONDS

cli=$(command -v terraform || true)
[ -n "$cli" ] || cli=$repo/target/tools/bin/tofu
export KUBECONFIG=$repo/target/cluster/kubeconfig
export CHECKPOINT_DISABLE=1
# A CLI config file that does not exist only adds a warning to every command.
if [ -n "${TF_CLI_CONFIG_FILE:-}" ] && [ ! -f "$TF_CLI_CONFIG_FILE" ]; then unset TF_CLI_CONFIG_FILE; fi

kubectl() { "$repo/target/tools/bin/kubectl" "$@"; }
tf() { "$cli" "$@" -no-color; }
say() { printf '\n==> [%3ss] %s\n' "$((SECONDS - t0))" "$*"; }
fail() { printf '\nDEMO FAILED: %s\n' "$*" >&2; exit 1; }

# --- progress -------------------------------------------------------------------

# One line of what the cluster has: nodes per fleet and their type, and how
# the workloads' pods stand. Printed whenever it changes.
status_line() {
  local fleet line="" types pods
  for fleet in "${fleets[@]}"; do
    types=$(kubectl get nodes -l "karpenter.sh/nodepool=$fleet" --no-headers \
      -o custom-columns='T:.metadata.labels.node\.kubernetes\.io/instance-type' 2>/dev/null |
      sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')
    line+="$fleet: ${types:-none} | "
  done
  pods=$(kubectl get pods -n "$namespace" --no-headers -o custom-columns='P:.status.phase' 2>/dev/null |
    sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }')
  echo "${line}pods: ${pods:-none}"
}
last_status=
show_progress() {
  local line
  line=$(status_line)
  if [ "$line" != "$last_status" ]; then
    printf '    [%3ss] %s\n' "$((SECONDS - t0))" "$line"
    last_status=$line
  fi
}

# wait_until <what> <seconds> <command...>: polls, showing progress.
wait_until() {
  local what=$1 secs=$2 deadline
  shift 2
  deadline=$((SECONDS + secs))
  until "$@"; do
    show_progress
    [ $SECONDS -lt $deadline ] || fail "timed out after ${secs}s waiting for $what"
    sleep 1
  done
  show_progress
}

# --- checks -----------------------------------------------------------------------

running() { # running <app> <count>
  [ "$(kubectl get pods -n "$namespace" -l "app=$1" --field-selector=status.phase=Running --no-headers 2>/dev/null | wc -l)" -ge "$2" ]
}
placed() { [ -n "$(kubectl get pods -n "$namespace" -l "app=$1" -o jsonpath='{.items[*].spec.nodeName}' 2>/dev/null)" ]; }
pod_of() { kubectl get pods -n "$namespace" -l "app=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
sweep_created() { [ -n "$(pod_of sweep-lr)" ]; }
# Karpenter has looked for a node for the pod and found none.
karpenter_refused() {
  [ -n "$(kubectl get events -n "$namespace" -o name \
    --field-selector "involvedObject.name=$1,reason=FailedScheduling,source=karpenter" 2>/dev/null)" ]
}
preempted() { [ -n "$(kubectl get events -n "$namespace" --field-selector reason=Preempted -o name 2>/dev/null)" ]; }
# The preempted training pod's replacement, waiting for GPUs.
training_waits() {
  [ -n "$(kubectl get pods -n "$namespace" -l 'app in (pretrain-70b,sweep-lr)' --field-selector=status.phase=Pending -o name 2>/dev/null)" ]
}
fleets_empty() { [ -z "$(kubectl get nodes -l karpenter.sh/nodepool -o name 2>/dev/null | head -1)" ]; }
job_succeeded() { [ "$(kubectl get job -n "$namespace" "$1" -o jsonpath='{.status.succeeded}' 2>/dev/null)" = 1 ]; }
plan_is_empty() { # plan_is_empty <dir>: fails the demo if a second plan would change anything
  local rc=0
  (cd "$1" && tf plan -detailed-exitcode -input=false >"$work/plan.log" 2>&1) || rc=$?
  case $rc in
    0) echo "    $(basename "$1"): no changes" ;;
    2) cat "$work/plan.log" >&2; fail "the plan after apply in $1 is not empty" ;;
    *) cat "$work/plan.log" >&2; fail "plan failed in $1" ;;
  esac
}

# --- a clean start ------------------------------------------------------------------

if kubectl get namespace "$namespace" >/dev/null 2>&1; then
  say "removing the workloads of an earlier run; Karpenter then removes their nodes"
  kubectl delete namespace "$namespace" --wait=true >/dev/null
  wait_until "the fleets to empty" 180 fleets_empty
fi

# --- the cluster as code --------------------------------------------------------------

mkdir -p "$work/workloads" "$work/module"
cp "$example"/*.tf "$work/"
cp "$example"/module/*.tf "$work/module/"
cp "$example"/workloads/*.tf "$work/workloads/"
# Nodes go within half a minute of emptying, all at once (not 5 minutes, 10% at a time).
printf 'consolidate_after = "5s"\ndisruption_budget = "100%%"\n' >"$work/terraform.tfvars"
say "$("$cli" version | sed -n 1p): apply examples/training-and-inference (state in target/demo)"
cd "$work"
# The provider was just rebuilt under the same version, so the checksum an
# earlier demo recorded in the lock file is stale.
rm -f .terraform.lock.hcl
tf init -input=false >/dev/null
tf apply -auto-approve -input=false >"$work/apply.log" 2>&1 || { cat "$work/apply.log" >&2; fail "terraform apply failed"; }
grep -E '(Creation|Modifications) complete|^Apply complete' "$work/apply.log" | sed 's/^/    /'
plan_is_empty "$work"

# No GPU server exists here: one self-managed 8xH100 server joins with the
# configuration's join token, as its kubelet's TLS bootstrap would
# (testbed/stand-ins/simulated-server-join.rs, the scenario test's code), and
# kwok runs its Node. Joined once: a re-run finds it in the cluster.
if ! kubectl get node simulated-8xh100-server >/dev/null 2>&1; then
  cargo build --quiet --manifest-path "$repo/Cargo.toml" --example simulated-server-join
  tf output -json training_server_join |
    "${CARGO_TARGET_DIR:-$repo/target}/debug/examples/simulated-server-join" "$example/simulated-gpu-server.json" |
    sed 's/^/    /' || fail "simulated-8xh100-server could not join"
  say "simulated-8xh100-server joined with the training_server_join token: registered with the training taint (the maintenance one is its own)"
fi

cd "$work/workloads"
tf init -input=false >/dev/null
tf apply -auto-approve -input=false >/dev/null
step() { tf output -raw "$1" | kubectl apply -f - | sed 's/^/    /'; }

# --- the scenario -----------------------------------------------------------------------

say "1. finetune-llm (8 GPUs, training), chat-api (4 x 1 GPU, inference: one L4 time-sliced x4), eval-on-server, report-builder (no tolerations), and two pods no node may take"
step placement
wait_until "chat-api's 4 replicas" 120 running chat-api 4
wait_until "finetune-llm placed" 120 placed finetune-llm
wait_until "eval-on-server" 120 running eval-on-server 1
wait_until "report-builder" 120 running report-builder 1
wait_until "Karpenter's verdict on stray-gpu-pod" 60 karpenter_refused stray-gpu-pod
wait_until "Karpenter's verdict on l4-on-training" 60 karpenter_refused l4-on-training

say "2. finetune-llm runs 20s and succeeds"
wait_until "finetune-llm to succeed" 120 job_succeeded finetune-llm

say "3. pretrain-70b (7 x 8 GPUs) and a notebook without a priority class fill the training fleet to its 64-GPU limit"
step fill_training_fleet
wait_until "pretrain-70b and the notebook" 120 running pretrain-70b 7
wait_until "the notebook" 60 running notebook 1

say "4. sweep-lr (8 GPUs, batch-training) arrives: Karpenter may not exceed the limit, and batch-training never preempts, not even the notebook"
step sweep
wait_until "sweep-lr created" 30 sweep_created
sweep=$(pod_of sweep-lr)
wait_until "Karpenter's verdict on $sweep" 60 karpenter_refused "$sweep"
sleep 3
[ -z "$(kubectl get pod -n "$namespace" "$sweep" -o jsonpath='{.spec.nodeName}')" ] || fail "$sweep found a node beyond the limit"
running notebook 1 || fail "the notebook was preempted by a batch-training pod"

say "5. the notebook ends; sweep-lr takes its GPUs"
kubectl delete pod -n "$namespace" notebook --wait=false >/dev/null
wait_until "sweep-lr running" 60 running sweep-lr 1

say "6. chat-api-overflow (inference allowed onto training GPUs) arrives at the full training fleet: it preempts a training pod"
step overflow
wait_until "chat-api-overflow running" 60 running chat-api-overflow 1
wait_until "the preemption" 60 preempted
wait_until "the preempted Job's replacement pod" 90 training_waits
sleep 3
running chat-api-overflow 1 || fail "a training pod preempted inference"
training_waits || fail "the replacement training pod found GPUs it should not have"

# --- summary -----------------------------------------------------------------------------

say "SUMMARY"
echo
echo "Nodes Karpenter created, by fleet (instance types from testbed/karpenter/instance-types.json):"
kubectl get nodes -l karpenter.sh/nodepool --sort-by='.metadata.labels.karpenter\.sh/nodepool' -o custom-columns='NODE:.metadata.name,FLEET:.metadata.labels.karpenter\.sh/nodepool,INSTANCE TYPE:.metadata.labels.node\.kubernetes\.io/instance-type,GPU:.metadata.labels.cfke\.io/accelerator-name,GPUS:.status.capacity.nvidia\.com/gpu,TAINTS:.spec.taints[*].value'
echo
echo "What each inference node advertises with sharing (GPUS: its L4s; capacity and allocatable of nvidia.com/gpu as the simulated device plugin wrote them; the fleet's NodeClaims):"
kubectl get nodes -l karpenter.sh/nodepool=inference -o custom-columns='NODE:.metadata.name,GPUS:.metadata.labels.cfke\.io/accelerator-count,SHARING:.metadata.labels.nvidia\.com/device-plugin\.config,CAPACITY:.status.capacity.nvidia\.com/gpu,ALLOCATABLE:.status.allocatable.nvidia\.com/gpu'
kubectl get pods -n "$namespace" -l app=chat-api -o custom-columns='POD:.metadata.name,NODE:.spec.nodeName,GPU LIMIT:.spec.containers[0].resources.limits.nvidia\.com/gpu'
echo "    inference NodeClaims: $(kubectl get nodeclaims -l karpenter.sh/nodepool=inference --no-headers 2>/dev/null | wc -l)"
kubectl get nodeoverlays -o custom-columns='KARPENTER PLANS WITH (NodeOverlay):.metadata.name,CAPACITY:.spec.capacity'
echo
echo "The self-managed server (taints: the training one it joined with, its own maintenance one):"
kubectl get node simulated-8xh100-server -o custom-columns='NODE:.metadata.name,GPU:.metadata.labels.cfke\.io/accelerator-name,GPUS:.status.capacity.nvidia\.com/gpu,TAINTS:.spec.taints[*].key'
echo
echo "Where each pod runs, and why (node selector, tolerated taints, priority class):"
kubectl get pods -n "$namespace" --sort-by=.metadata.name -o custom-columns='POD:.metadata.name,PHASE:.status.phase,NODE:.spec.nodeName,SELECTOR:.spec.nodeSelector,TOLERATES:.spec.tolerations[?(@.key=="workload")].value,PRIORITY CLASS:.spec.priorityClassName,PRIORITY:.spec.priority'
echo
echo "Why the pending pods wait (Karpenter):"
kubectl get events -n "$namespace" --field-selector reason=FailedScheduling,source=karpenter --sort-by=.lastTimestamp \
  -o custom-columns='POD:.involvedObject.name,KARPENTER:.message' | awk 'NR == 1 || !seen[$1]++' | cut -c1-220
echo
echo "Preemptions (kube-scheduler):"
kubectl get events -n "$namespace" --field-selector reason=Preempted -o custom-columns='PREEMPTED:.involvedObject.name,BY:.message'
echo
echo "A second plan of each configuration is empty:"
plan_is_empty "$work"
plan_is_empty "$work/workloads"

say "7. all work ends: the pods go, and Karpenter removes the empty nodes"
kubectl get nodes -l karpenter.sh/nodepool -o name | sed 's|^node/||' >"$work/nodes-of-this-run"
kubectl delete namespace "$namespace" --wait=false >/dev/null
wait_until "the fleets to empty" 180 fleets_empty
echo
echo "Karpenter's disruption decisions:"
# awk reads everything (no early close: a SIGPIPE would fail the demo).
kubectl get events -A --field-selector reason=DisruptionTerminating --no-headers \
  -o custom-columns='KIND:.involvedObject.kind,NODE:.involvedObject.name,MESSAGE:.message' 2>/dev/null |
  awk -v nodes="$work/nodes-of-this-run" 'BEGIN { while ((getline n < nodes) > 0) mine[n] = 1 }
    $1 == "Node" && ($2 in mine) { $1 = ""; print "   " $0 }'
plan_is_empty "$work"

say "done in $((SECONDS - t0))s. The fleets stay declared (KUBECONFIG=$KUBECONFIG); \`make demo-down\` removes everything."
