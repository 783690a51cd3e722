#!/usr/bin/env bash
# Stands in for the NVIDIA device plugin on kwok's nodes, which have no GPUs
# and no kubelet: for every node labelled nvidia.com/device-plugin.config=KEY
# it reads KEY of the device-plugin ConfigMap and writes what the real plugin
# would advertise under that configuration into the node's status capacity
# and allocatable: GPUs x replicas of the shared resource (time slicing or
# MPS; nvidia.com/gpu, or nvidia.com/gpu.shared when renamed). The node's GPUs
# are its cfke.io/accelerator-count label (the instance type's GPU count).
# MIG layouts are not simulated: such nodes are left as they are.
#
#   simulated-device-plugin.sh KUBECTL KUBECONFIG [NAMESPACE [CONFIGMAP]]
#
# NAMESPACE/CONFIGMAP default to the provider's: gpu-operator/gpufleet-device-plugin.
# Started and stopped by `cluster.sh up --karpenter` / `down`.
set -uo pipefail

kubectl_bin=$1 kubeconfig=$2 namespace=${3:-gpu-operator} configmap=${4:-gpufleet-device-plugin}
kubectl() { "$kubectl_bin" --kubeconfig="$kubeconfig" "$@"; }
log() { printf '[simulated-device-plugin %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# advertised <config YAML>: "RESOURCE REPLICAS" of its sharing section
# ("nvidia.com/gpu 1" without one), or nothing for a MIG configuration.
advertised() {
  awk '
    /migStrategy: *(single|mixed)/ { mig = 1 }
    /renameByDefault: *true/ { rename = 1 }
    /^ *rename: / { renamed_to = $2 }
    /^ *replicas: / && !replicas { replicas = $2 }
    END {
      if (mig) exit
      resource = "nvidia.com/gpu"
      if (replicas && renamed_to) resource = renamed_to
      else if (replicas && rename) resource = resource ".shared"
      print resource, (replicas ? replicas : 1)
    }' <<<"$1"
}

# advertise <node> <key> <GPUs> <current allocatable JSON>
advertise() {
  local node=$1 key=$2 gpus=$3 current=$4 config resource replicas count patch
  [[ $gpus =~ ^[0-9]+$ ]] || { log "$node: no GPU count label; skipped"; return; }
  # Read once per watch (the watch restarts every 30 s): a new node is
  # advertised without waiting for another kubectl.
  config=${configs[$key]:-}
  if [ -z "$config" ]; then
    config=$(kubectl get configmap -n "$namespace" "$configmap" -o "go-template={{index .data \"$key\"}}" 2>/dev/null)
    [ -n "$config" ] && [ "$config" != "<no value>" ] || { log "$node: no key $key in $namespace/$configmap yet"; return; }
    configs[$key]=$config
  fi
  read -r resource replicas < <(advertised "$config")
  [ -n "${resource:-}" ] || { log "$node: $key is a MIG configuration; not simulated"; return; }
  count=$((gpus * replicas))
  [[ $current == *"\"$resource\":\"$count\""* ]] && return
  patch="\"$resource\":\"$count\""
  # Renamed sharing hides the whole GPUs, as the real plugin does.
  [ "$resource" = nvidia.com/gpu ] || patch+=',"nvidia.com/gpu":"0"'
  if kubectl patch node "$node" --subresource=status --type=merge \
    -p "{\"status\":{\"capacity\":{$patch},\"allocatable\":{$patch}}}" >/dev/null; then
    log "$node ($key): $resource = $count ($gpus GPUs x $replicas)"
  fi
}

log "watching nodes labelled nvidia.com/device-plugin.config; configuration from $namespace/$configmap"
# One line per node: name, key, GPUs, allocatable as "resource":"quantity", pairs.
line='{{.metadata.name}} {{index .metadata.labels "nvidia.com/device-plugin.config"}} '
line+='{{or (index .metadata.labels "cfke.io/accelerator-count") "-"}} '
line+='{{with .status.allocatable}}{{range $k, $v := .}}"{{$k}}":"{{$v}}",{{end}}{{end}}{{"\n"}}'
declare -A configs
while :; do
  # Each watch starts with every node (and ends after a while, so changed
  # configurations are picked up again).
  timeout --foreground 30 "$kubectl_bin" --kubeconfig="$kubeconfig" get nodes -l nvidia.com/device-plugin.config \
    --watch -o "go-template=$line" 2>/dev/null |
    while read -r node key gpus current; do
      advertise "$node" "$key" "$gpus" "${current:-}"
    done
  sleep 1
done
