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
#
# It must be quick: until a new node advertises its shares, Karpenter sees
# room for one pod there and may launch nodes for the others. So both the
# nodes and the ConfigMap are watched (no kubectl start-up per node), and the
# node is patched with curl.
set -uo pipefail

kubectl_bin=$1 kubeconfig=$2 namespace=${3:-gpu-operator} configmap=${4:-gpufleet-device-plugin}
log() { printf '[simulated-device-plugin %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
# watching <seconds> <kubectl get arguments...>
watching() { timeout --foreground "$1" "$kubectl_bin" --kubeconfig="$kubeconfig" get "${@:2}" --watch 2>/dev/null; }

# The admin credentials of the kubeconfig (cluster.sh's, data inlined) for curl.
creds=$(mktemp -d)
trap 'rm -rf "$creds"' EXIT
trap 'exit 0' TERM INT
field() { sed -n "s/^ *$1: //p" "$kubeconfig" | head -1; }
server=$(field server)
field certificate-authority-data | base64 -d >"$creds/ca.crt"
field client-certificate-data | base64 -d >"$creds/client.crt"
field client-key-data | base64 -d >"$creds/client.key"

# advertised <config YAML>: "RESOURCE REPLICAS" of its sharing section
# ("nvidia.com/gpu 1" without one), or "mig" for a MIG configuration.
advertised() {
  awk '
    /migStrategy: *(single|mixed)/ { mig = 1 }
    /renameByDefault: *true/ { rename = 1 }
    /^ *rename: / { renamed_to = $2 }
    /^ *replicas: / && !replicas { replicas = $2 }
    END {
      if (mig) { print "mig"; exit }
      resource = "nvidia.com/gpu"
      if (replicas && renamed_to) resource = renamed_to
      else if (replicas && rename) resource = resource ".shared"
      print resource, (replicas ? replicas : 1)
    }' <<<"$1"
}

# What each key advertises, one file per key, kept current by a watch of the
# ConfigMap: each event lists every key (Go-quoted, one line each), then "-".
keys=$creds/keys
mkdir -p "$keys"
watch_config() {
  local line key quoted seen=()
  while :; do
    watching 300 configmaps -n "$namespace" --field-selector "metadata.name=$configmap" \
      -o 'go-template={{range $k, $v := .data}}{{$k}} {{printf "%q" $v}}{{"\n"}}{{end}}{{"-\n"}}' |
      while read -r line; do
        if [ "$line" = - ]; then
          # Keys no longer there are gone.
          for key in "$keys"/*; do
            [[ " ${seen[*]} " == *" ${key##*/} "* ]] || rm -f "$key"
          done
          seen=()
          continue
        fi
        key=${line%% *} quoted=${line#* }
        seen+=("$key")
        advertised "$(printf '%b' "${quoted:1:${#quoted}-2}")" >"$keys/.$key" && mv "$keys/.$key" "$keys/$key"
      done
    sleep 1
  done
}

# advertise <node> <key> <GPUs> <current allocatable as "resource":"quantity", pairs>
advertise() {
  local node=$1 key=$2 gpus=$3 current=$4 resource replicas count patch
  [[ $gpus =~ ^[0-9]+$ ]] || { log "$node: no GPU count label; skipped"; return; }
  # A node may come up before its fleet's key (the watch is a moment behind).
  for _ in $(seq 20); do [ -f "$keys/$key" ] && break; sleep 0.1; done
  [ -f "$keys/$key" ] && read -r resource replicas <"$keys/$key" ||
    { log "$node: no key $key in $namespace/$configmap"; return; }
  [ "$resource" != mig ] || { log "$node: $key is a MIG configuration; not simulated"; return; }
  count=$((gpus * replicas))
  [[ $current == *"\"$resource\":\"$count\""* ]] && return
  patch="\"$resource\":\"$count\""
  # Renamed sharing hides the whole GPUs, as the real plugin does.
  [ "$resource" = nvidia.com/gpu ] || patch+=',"nvidia.com/gpu":"0"'
  if curl -sSf --max-time 5 --cacert "$creds/ca.crt" --cert "$creds/client.crt" --key "$creds/client.key" \
    -X PATCH -H 'Content-Type: application/merge-patch+json' -o /dev/null \
    -d "{\"status\":{\"capacity\":{$patch},\"allocatable\":{$patch}}}" \
    "$server/api/v1/nodes/$node/status"; then
    log "$node ($key): $resource = $count ($gpus GPUs x $replicas)"
  fi
}

log "watching nodes labelled nvidia.com/device-plugin.config; configuration from $namespace/$configmap"
watch_config &
# One line per node: name, key, GPUs, allocatable as "resource":"quantity", pairs.
line='{{.metadata.name}} {{index .metadata.labels "nvidia.com/device-plugin.config"}} '
line+='{{or (index .metadata.labels "cfke.io/accelerator-count") "-"}} '
line+='{{with .status.allocatable}}{{range $k, $v := .}}"{{$k}}":"{{$v}}",{{end}}{{end}}{{"\n"}}'
while :; do
  # Each watch starts with every node, so a watch that ends (after a minute,
  # or when the API server restarts) also brings changed keys to every node.
  started=$SECONDS
  watching 60 nodes -l nvidia.com/device-plugin.config -o "go-template=$line" |
    while read -r node key gpus current; do
      advertise "$node" "$key" "$gpus" "${current:-}"
    done
  [ $((SECONDS - started)) -gt 1 ] || sleep 1
done
