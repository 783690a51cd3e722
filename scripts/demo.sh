#!/usr/bin/env bash
# The main job, end to end: build and install the provider, start the local
# control plane, apply examples/quickstart, and show what was created.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

bash scripts/install.sh
bash tests/controlplane/cluster.sh up

cli=$(command -v terraform || true)
[ -n "$cli" ] || cli=$repo/target/tools/bin/tofu
export KUBECONFIG=$repo/target/cluster/kubeconfig
export CHECKPOINT_DISABLE=1
# A CLI config file that does not exist only adds a warning to every command.
if [ -n "${TF_CLI_CONFIG_FILE:-}" ] && [ ! -f "$TF_CLI_CONFIG_FILE" ]; then unset TF_CLI_CONFIG_FILE; fi

kubectl() { "$repo/target/tools/bin/kubectl" "$@"; }

# No real GPU server exists here, so a Node object stands in for one
# self-managed 8-GPU server (no kubelet runs; it is only an API object).
# Created once: a re-run must not rewrite its taints behind Terraform's back.
kubectl get node simulated-8xh100-server >/dev/null 2>&1 || kubectl create -f - >/dev/null <<'NODE'
apiVersion: v1
kind: Node
metadata:
  name: simulated-8xh100-server
  labels:
    gpufleet.dev/simulated: "true"
    nvidia.com/gpu.present: "true"
spec:
  taints:
  - key: example.com/maintenance-window
    value: sunday
    effect: PreferNoSchedule
status:
  capacity: {cpu: "128", memory: 2Ti, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "128", memory: 2Ti, pods: "110", nvidia.com/gpu: "8"}
NODE
echo "==> created Node simulated-8xh100-server (stands in for a self-managed GPU server; it already carries someone else's taint)"

work=$repo/target/demo
mkdir -p "$work"
cp examples/quickstart/*.tf "$work/"
cd "$work"
echo "==> $("$cli" version 2>/dev/null | sed -n 1p): init and apply examples/quickstart (state in target/demo)"
# The provider was just rebuilt under the same version, so the checksum an
# earlier demo recorded in the lock file is stale.
rm -f .terraform.lock.hcl
"$cli" init -input=false -no-color >/dev/null
"$cli" apply -auto-approve -input=false -no-color

echo
echo "==> what the cluster now has"
kubectl get priorityclasses -o custom-columns=NAME:.metadata.name,VALUE:.value,PREEMPTION:.preemptionPolicy
echo
kubectl get nodepools -o custom-columns='NAME:.metadata.name,TAINTS:.spec.template.spec.taints[*].value,GPU-LIMIT:.spec.limits.nvidia\.com/gpu,REQUIREMENTS:.spec.template.spec.requirements[*].key'
echo
kubectl get node simulated-8xh100-server -o custom-columns='NODE:.metadata.name,TAINTS:.spec.taints[*].key'
echo "    (the maintenance-window taint was there before and is still there)"
echo
echo "==> a second plan is empty:"
# -detailed-exitcode: 0 no changes, 2 changes, 1 error. Anything but 0 fails the demo.
second_plan=0
"$cli" plan -detailed-exitcode -input=false -no-color >"$work/second-plan.txt" 2>&1 || second_plan=$?
if [ "$second_plan" != 0 ]; then
  cat "$work/second-plan.txt" >&2
  [ "$second_plan" = 2 ] && echo "ERROR: the plan after apply is not empty" >&2
  exit 1
fi
echo "    no changes"
echo
echo "Done. Inspect with: KUBECONFIG=$KUBECONFIG target/tools/bin/kubectl get priorityclasses,nodepools,nodes"
echo "Tear down with: (cd target/demo && $cli destroy -auto-approve) && make cluster-down"
