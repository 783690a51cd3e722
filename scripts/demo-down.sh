#!/usr/bin/env bash
# Undoes `make demo`: its workloads and the training teams' namespaces, what
# Terraform declared (fleets, their nodes, priority classes, the teams'
# queues, the server's join token), the joined stand-in server, and the local
# control plane (Kueue's manager with it).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
# The demo's cluster, whatever test cluster GPUFLEET_CLUSTER_DIR names.
export GPUFLEET_CLUSTER_DIR=$repo/target/cluster
export KUBECONFIG=$GPUFLEET_CLUSTER_DIR/kubeconfig CHECKPOINT_DISABLE=1
if [ -n "${TF_CLI_CONFIG_FILE:-}" ] && [ ! -f "$TF_CLI_CONFIG_FILE" ]; then unset TF_CLI_CONFIG_FILE; fi
kubectl() { "$repo/target/tools/bin/kubectl" "$@"; }
cli=$(command -v terraform || true)
[ -n "$cli" ] || cli=$repo/target/tools/bin/tofu

if bash testbed/cluster.sh status >/dev/null 2>&1; then
  kubectl delete namespace training inference team-a team-b --ignore-not-found >/dev/null
  if [ -f target/demo/terraform.tfstate ]; then
    echo "==> terraform destroy in target/demo"
    (cd target/demo && "$cli" destroy -auto-approve -input=false -no-color | tail -1)
  fi
  kubectl delete node simulated-8xh100-server --ignore-not-found >/dev/null
fi
rm -rf target/demo
bash testbed/cluster.sh down
