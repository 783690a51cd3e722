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

work=$repo/target/demo
mkdir -p "$work"
cp examples/quickstart/*.tf "$work/"
cd "$work"
echo "==> $($cli version | head -1): init and apply examples/quickstart (state in target/demo)"
"$cli" init -input=false -no-color >/dev/null
"$cli" apply -auto-approve -input=false -no-color

kubectl() { "$repo/target/tools/bin/kubectl" "$@"; }
echo
echo "==> what the cluster now has"
kubectl get priorityclasses -o custom-columns=NAME:.metadata.name,VALUE:.value,PREEMPTION:.preemptionPolicy,MANAGER:.metadata.managedFields[0].manager
echo
echo "==> a second plan is empty:"
"$cli" plan -detailed-exitcode -input=false -no-color >/dev/null && echo "    no changes"
echo
echo "Done. Inspect with: KUBECONFIG=$KUBECONFIG target/tools/bin/kubectl get priorityclasses"
echo "Tear down with: (cd target/demo && $cli destroy -auto-approve) && make cluster-down"
