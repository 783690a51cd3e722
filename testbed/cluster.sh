#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for the acceptance tests: etcd,
# kube-apiserver, kube-scheduler and kube-controller-manager (no kubelet; nodes
# are plain Node objects or kwok's), built from Go modules by build.sh.
# With --karpenter also Karpenter's kwok cloud provider, which turns fleets
# (NodePools) into nodes, and kwok, which plays the kubelet on those nodes.
#
#   testbed/cluster.sh up       start (idempotent), wait until ready, install CRDs
#   testbed/cluster.sh up --karpenter   the same plus kwok and Karpenter
#   testbed/cluster.sh down     stop everything, delete the state (keeps logs/)
#   testbed/cluster.sh status   exit 0 when running and ready
#   testbed/cluster.sh roles    apply and bind docs/rbac.yaml again (after it changed)
#   KUBECONFIG=... cluster.sh crds         install the CRDs into another cluster (e.g. kind)
#
# Faults, for the tests that inject them into a running cluster:
#   cluster.sh kill <component> [SIGNAL]   send SIGNAL (default KILL); waits for the
#                                          process to end unless SIGNAL is STOP or CONT
#   cluster.sh start <component>           start a stopped component again, with the
#                                          arguments of `up`, and wait until it is healthy
#   cluster.sh restart <component>         stop (TERM) and start
# GPUFLEET_APISERVER_FLAGS adds flags to kube-apiserver (e.g. a tight
# --max-requests-inflight): given to `up`, they stay for every later start;
# given to `start`/`restart`, they replace them (empty for none).
#
# Everything lives in <repo>/target/cluster/ (GPUFLEET_CLUSTER_DIR for another
# cluster beside it, as `make test` does):
#   kubeconfig          admin, user gpufleet-admin in group system:masters
#   kubeconfig-limited  user gpufleet-limited, no RBAC bindings (least privilege tests)
#   kubeconfig-provider user gpufleet-provider, bound only to docs/rbac.yaml's roles:
#                       what the acceptance tests run the provider as
#                       (and ServiceAccount default/gpufleet-provider, for token tests)
#   kubeconfig-counted  user gpufleet-counted, the same roles; the API server audits
#                       its requests alone into logs/audit-counted.log (request budget)
#   pki/                also certificates outside their validity period for the
#                       TLS error tests: the API server serves expired-server for
#                       the TLS name expired.gpufleet.test and future-server for
#                       future.gpufleet.test; expired-client is a client certificate
#   env                 sourceable: KUBECONFIG, ports, pids
#   logs/<component>.log, pki/, etcd/, crds/, <component>.pid
# Ports are picked free at each `up`, so read them from the kubeconfig or env.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
state=${GPUFLEET_CLUSTER_DIR:-$repo/target/cluster}
bin=$repo/target/tools/bin
pki=$state/pki
logs=$state/logs
components=(etcd kube-apiserver kube-scheduler kube-controller-manager)
# Started by `up --karpenter` only.
provisioners=(kwok karpenter-kwok)

# CRDs come from the projects' own releases, fetched through the Go module proxy
# when the cluster starts (they are not copied into this repository).
# Karpenter's are those of the release build.sh builds the controller from
# (the version in karpenter/go.mod), so CRDs and controller always match.
karpenter_crds=(
  kwok/charts/crds/karpenter.sh_nodepools.yaml # the kwok chart's copies also
  kwok/charts/crds/karpenter.sh_nodeclaims.yaml # restrict the karpenter.kwok.sh
  kwok/charts/crds/karpenter.sh_nodeoverlays.yaml # label domain, as in a real install
  kwok/charts/crds/autoscaling.x-k8s.io_capacitybuffers.yaml # watched by karpenter itself
  kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml # (the chart's copy is a symlink, not in the module zip)
)
# gpu-operator tags (v25.x) are not valid Go module versions for its module
# path, and the proxy serves only this pseudo-version: the commit of tag v25.3.4.
gpu_operator_module=github.com/NVIDIA/gpu-operator@v0.0.0-20250917190837-d73a0086a6ba
gpu_operator_crds=(deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml)

log() { printf '[cluster.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
# The local cluster, unless `crds` targets another one.
kubectl() { "$bin/kubectl" --kubeconfig="${target_kubeconfig:-$state/kubeconfig}" "$@"; }

# --- processes ---------------------------------------------------------------

# The pid of a component we started, if it still runs (and is still ours:
# the pid's executable must be our cached binary, not a recycled pid).
pid_of() {
  local pid
  pid=$(cat "$state/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */"$1"-* ]] || return 1
  echo "$pid"
}

# start <component> <args...>: detached in its own session (survives this
# script and the caller's Ctrl-C), stdin/stdout/stderr away from the caller's
# terminal so `make` does not wait on them, and without our lock fd (8), which
# would otherwise stay locked for the cluster's lifetime. The child records
# its own pid.
start() {
  local name=$1
  shift
  rm -f "$state/$name.pid"
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$state/$name.pid" "$bin/$name" "$@" \
    </dev/null >"$logs/$name.log" 2>&1 8>&- &
  for _ in $(seq 50); do [ -s "$state/$name.pid" ] && return 0; sleep 0.1; done
  die "$name did not start; see $logs/$name.log"
}

stop() {
  local name=$1 pid
  pid=$(pid_of "$name") || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  log "$name (pid $pid) ignored SIGTERM for 10s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  # SIGKILL is not instant either: `restart` must not find it still there.
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  die "$name (pid $pid) still runs 10s after SIGKILL"
}

# --- ports -------------------------------------------------------------------

# Is something listening on TCP port $1 (IPv4 or IPv6)? Reads /proc directly so
# it needs neither ss nor netstat.
listening() {
  awk -v port="$(printf ':%04X' "$1")" \
    'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == port { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_port VAR: a port nobody listens on, below the kernel's ephemeral range
# (32768+) so outgoing connections cannot grab it before our server binds.
picked=" "
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    [[ $picked == *" $p "* ]] && continue
    listening "$p" || break
  done
  picked+="$p "
  printf -v "$1" %s "$p"
}

# --- certificates and kubeconfigs ---------------------------------------------

gen_pki() {
  mkdir -p "$pki"
  export GPUFLEET_PKI=$pki # the config's `openssl ca` section finds its files by it
  # One config with a section per kind of certificate, so the extensions are
  # explicit rather than whatever the system openssl.cnf defaults to.
  cat >"$pki/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, IP:::1, DNS:localhost, IP:10.0.0.1, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
[expired_server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:expired.gpufleet.test
[future_server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:future.gpufleet.test
# `openssl ca`, for certificates with given dates (OpenSSL 3.0's x509 only
# counts days from now).
[ca_dated]
dir = $ENV::GPUFLEET_PKI
database = $dir/dated/index.txt
new_certs_dir = $dir/dated
certificate = $dir/ca.crt
private_key = $dir/ca.key
rand_serial = yes
default_md = sha256
policy = policy_any
unique_subject = no
[policy_any]
commonName = supplied
organizationName = optional
EOF
  local key="-algorithm EC -pkeyopt ec_paramgen_curve:P-256" # fast to generate
  # shellcheck disable=SC2086
  openssl genpkey $key -out "$pki/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$pki/ca.key" -subj /CN=gpufleet-test-ca -days 3650 \
    -config "$pki/openssl.cnf" -extensions ca -out "$pki/ca.crt"
  # cert <file> <subject> <extension section>
  cert() {
    # shellcheck disable=SC2086
    openssl genpkey $key -out "$pki/$1.key" 2>/dev/null
    openssl req -new -key "$pki/$1.key" -subj "$2" -config "$pki/openssl.cnf" |
      openssl x509 -req -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
        -days 3650 -extfile "$pki/openssl.cnf" -extensions "$3" -out "$pki/$1.crt" 2>/dev/null
  }
  cert apiserver /CN=kube-apiserver server
  cert admin "/O=system:masters/CN=gpufleet-admin" client
  cert limited /CN=gpufleet-limited client # no groups, no bindings: RBAC denies all but discovery
  cert provider /CN=gpufleet-provider client # bound to docs/rbac.yaml's roles only
  cert counted /CN=gpufleet-counted client   # the same roles; its requests are audited
  # dated_cert <file> <subject> <extension section> <not before> <not after>
  dated_cert() {
    mkdir -p "$pki/dated"
    touch "$pki/dated/index.txt"
    # shellcheck disable=SC2086
    openssl genpkey $key -out "$pki/$1.key" 2>/dev/null
    openssl req -new -key "$pki/$1.key" -subj "$2" -config "$pki/openssl.cnf" -out "$pki/dated/$1.csr"
    openssl ca -batch -notext -config "$pki/openssl.cnf" -name ca_dated \
      -extfile "$pki/openssl.cnf" -extensions "$3" -startdate "$4" -enddate "$5" \
      -in "$pki/dated/$1.csr" -out "$pki/$1.crt" 2>/dev/null
  }
  dated_cert expired-server /CN=expired-server expired_server 20200101000000Z 20210101000000Z
  dated_cert future-server /CN=future-server future_server 20990101000000Z 21000101000000Z
  dated_cert expired-client /CN=gpufleet-expired-client client 20200101000000Z 20210101000000Z
  # Service-account token signing key (RSA: RS256 is what every client expects).
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
}

# kubeconfig <file> <user> <cert basename>: self-contained (data inlined), so
# it can be copied or read by any client without the pki directory.
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: gpufleet-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$3.crt")
    client-key-data: $(base64 -w0 <"$pki/$3.key")
contexts:
- name: $2
  context:
    cluster: gpufleet-test
    user: $2
current-context: $2
EOF
  chmod 600 "$1"
}

# --- health ------------------------------------------------------------------

api_get() {
  curl -sS --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$api_port$1"
}

healthy() {
  local name
  [ -f "$state/env" ] || return 1
  # shellcheck disable=SC1091
  . "$state/env"
  for name in "${components[@]}"; do pid_of "$name" >/dev/null || return 1; done
  [ "$(api_get /readyz 2>/dev/null)" = ok ]
}

# wait_for <what> <seconds> <component whose death aborts the wait> <command...>
wait_for() {
  local what=$1 secs=$2 comp=$3 deadline
  shift 3
  deadline=$(($(date +%s) + secs))
  until "$@" >/dev/null 2>&1; do
    if ! pid_of "$comp" >/dev/null; then
      tail -n 30 "$logs/$comp.log" >&2 || true
      die "$comp exited while waiting for $what; log: $logs/$comp.log"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 30 "$logs/$comp.log" >&2 || true
      die "timed out after ${secs}s waiting for $what; log: $logs/$comp.log"
    fi
    sleep 0.2
  done
}
# /healthz of the scheduler and controller-manager needs no credentials.
component_healthy() { [ "$(curl -sk --max-time 2 "https://127.0.0.1:$1/healthz")" = ok ]; }
api_ready() { [ "$(api_get /readyz)" = ok ]; }
etcd_healthy() { curl -sf --max-time 2 "http://127.0.0.1:$etcd_port/health" | grep -q '"health":"true"'; }

# --- CRDs --------------------------------------------------------------------

# The `toolchain` line of a wrapper module's go.mod (as build.sh uses it).
wrapper_toolchain() {
  awk '$1 == "toolchain" { print $2; found = 1 } END { if (!found) print "local" }' "$here/$1/go.mod"
}

# module_dir <module@version>: its extracted directory in the module cache
# (downloaded through the Go module proxy on first use). With a bare module
# path, the version a wrapper module of ours pins: module_dir <path> <wrapper>.
module_dir() {
  local out dir
  if [ $# = 2 ]; then
    # The wrapper's own toolchain: Karpenter's go directive needs Go 1.27.
    out=$(cd "$here/$2" && GOTOOLCHAIN=$(wrapper_toolchain "$2") "$GO" mod download -json "$1") ||
      die "go mod download $1 (as pinned in $2/go.mod) failed: $out"
  else
    out=$(cd / && "$GO" mod download -json "$1") || die "go mod download $1 failed: $out"
  fi
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $1 gave no directory: $out"
  echo "$dir"
}

install_crds() {
  local dir f
  rm -rf "$state/crds"
  mkdir -p "$state/crds"
  dir=$(module_dir sigs.k8s.io/karpenter karpenter)
  for f in "${karpenter_crds[@]}"; do cp "$dir/$f" "$state/crds/"; done
  dir=$(module_dir "$gpu_operator_module")
  for f in "${gpu_operator_crds[@]}"; do cp "$dir/$f" "$state/crds/"; done
  chmod u+w "$state/crds"/* # the module cache is read-only; let `down` delete the copies
  # Server-side apply: ClusterPolicy's CRD is too large for the annotation
  # that client-side apply would store.
  kubectl apply --server-side --field-manager=gpufleet-cluster-sh -f "$state/crds" >/dev/null
  kubectl wait --for=condition=Established --timeout=60s -f "$state/crds" >/dev/null
}

# --- the provider's least privilege ---------------------------------------------

# docs/rbac.yaml's ClusterRole (and its Roles, in namespaces created here if
# missing), bound to users gpufleet-provider and gpufleet-counted and to
# ServiceAccount default/gpufleet-provider (tests ask for its tokens). Idempotent: `roles`
# runs it again on a running cluster after docs/rbac.yaml changed.
bind_provider_roles() {
  local rbac=$repo/docs/rbac.yaml subjects ns bound=()
  subjects=(--user=gpufleet-provider --user=gpufleet-counted --serviceaccount=default:gpufleet-provider)
  ensure() { kubectl create "$@" --dry-run=client -o yaml | kubectl apply --server-side --field-manager=gpufleet-cluster-sh -f - >/dev/null; }
  # Only the Roles have a namespace (the file is generated, one shape).
  for ns in $(awk '$1 == "namespace:" { print $2 }' "$rbac"); do
    ensure namespace "$ns"
    bound+=("$ns")
  done
  kubectl apply --server-side --field-manager=gpufleet-cluster-sh -f "$rbac" >/dev/null
  ensure clusterrolebinding gpufleet-provider --clusterrole=gpufleet "${subjects[@]}"
  for ns in "${bound[@]}"; do
    ensure rolebinding gpufleet-provider -n "$ns" --role=gpufleet "${subjects[@]}"
  done
  ensure serviceaccount gpufleet-provider -n default
}

# --- components ----------------------------------------------------------------

# Each starts one component with the ports in the variables `up` picks (and
# the env file keeps), so a fault test can start it again the same way.
start_etcd() {
  start etcd --name=gpufleet --data-dir="$state/etcd" \
    --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster="gpufleet=http://127.0.0.1:$etcd_peer_port" \
    --unsafe-no-fsync=true --log-level=warn
}

start_kube-apiserver() {
  local extra
  # shellcheck disable=SC2206 # the flags are separate words
  extra=($apiserver_flags)
  # --advertise-address: without it the apiserver derives one from the default
  #   route and refuses to start on hosts that have none. A loopback address
  #   is only rejected by the endpoint reconciler, which is off here: nothing
  #   in this cluster reaches the apiserver through the `kubernetes` Service.
  # Admission: no kubelet or node-lifecycle controller ever clears the
  #   not-ready taint TaintNodesByCondition puts on every new Node, and pods
  #   must not wait for the `default` ServiceAccount to appear (envtest does the
  #   same). Priority stays on: preemption tests need spec.priority.
  # Node bootstrap as kubeadm sets it up: bootstrap tokens authenticate, the
  #   Node authorizer and NodeRestriction confine a node's identity to its own
  #   Node object (gpufleet_node_join's test joins a server this way).
  # Audit: every request of user gpufleet-counted, and only those, one JSON
  #   line each once answered, in logs/audit-counted.log: the request budget
  #   runs the provider as that user and counts its requests alone (the
  #   metrics name no client). The blocking backend writes an event before
  #   the answer goes.
  cat >"$state/audit-policy.yaml" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: [gpufleet-counted]
  - level: None
POLICY
  start kube-apiserver \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --secure-port="$api_port" \
    --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --tls-sni-cert-key="$pki/expired-server.crt,$pki/expired-server.key:expired.gpufleet.test" \
    --tls-sni-cert-key="$pki/future-server.crt,$pki/future-server.key:future.gpufleet.test" \
    --client-ca-file="$pki/ca.crt" \
    --authorization-mode=Node,RBAC --enable-bootstrap-token-auth=true \
    --enable-admission-plugins=NodeRestriction \
    --service-cluster-ip-range=10.0.0.0/24 \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
    --audit-policy-file="$state/audit-policy.yaml" \
    --audit-log-path="$logs/audit-counted.log" --audit-log-format=json \
    --audit-log-mode=blocking --audit-log-maxsize=200 --audit-log-maxbackup=1 \
    --allow-privileged=true "${extra[@]}"
}

# Both components serve /healthz anonymously; skip-lookup spares them the
# front-proxy CA they would otherwise keep looking for (log noise only).
component_auth() {
  local kc=$state/kubeconfig
  auth=(--kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" --authentication-skip-lookup=true)
}

start_kube-scheduler() {
  local auth
  component_auth
  start kube-scheduler "${auth[@]}" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="$scheduler_port"
}

# The controller-manager gives namespace deletion, garbage collection,
# workload controllers and service-account tokens. Node lifecycle and taint
# eviction are off: fake nodes get no kubelet heartbeats, and those would
# mark them unreachable and evict their pods. bootstrapsigner (signs the
# kube-public cluster-info ConfigMap per token) and tokencleaner (deletes
# expired bootstrap tokens) are off by default and turned on; csrapproving and
# csrsigning are on by default.
start_kube-controller-manager() {
  local auth
  component_auth
  start kube-controller-manager "${auth[@]}" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="$controller_manager_port" \
    --controllers='*,bootstrapsigner,tokencleaner,-node-lifecycle-controller,-taint-eviction-controller' \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
    --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
    --use-service-account-credentials=false
}

# wait_healthy <component>
wait_healthy() {
  case $1 in
    etcd) wait_for "etcd" 30 etcd etcd_healthy ;;
    kube-apiserver) wait_for "kube-apiserver /readyz" 90 kube-apiserver api_ready ;;
    kube-scheduler) wait_for "kube-scheduler /healthz" 60 kube-scheduler component_healthy "$scheduler_port" ;;
    kube-controller-manager) wait_for "kube-controller-manager /healthz" 60 kube-controller-manager component_healthy "$controller_manager_port" ;;
  esac
}

# --- provisioning: kwok and Karpenter's kwok provider -----------------------

# kwok's own stage files (from its module, the version kwok/go.mod pins): it
# plays the kubelet on every node carrying the annotation Karpenter's kwok
# provider puts on the nodes it creates (kwok.x-k8s.io/node=fake).
kwok_stages=(
  node/fast/node-initialize.yaml                           # Ready, addresses
  node/heartbeat-with-lease/node-heartbeat-with-lease.yaml # node leases
  pod/fast/pod-ready.yaml                                  # bound pods run
  # Job pods succeed after the time they declare in the annotations
  # pod-complete.stage.kwok.x-k8s.io/delay and .../jitter-delay.
  pod/general/pod-complete.yaml
  # Deleted pods go once they have no finalizers, within their grace period.
  pod/general/pod-delete.yaml
)
# Ours: what a kubelet does with a deleted pod that has finalizers (see the file).
own_kwok_stages=("$here/kwok/stages/pod-stop-on-delete.yaml")

# Karpenter's settings, for a cluster that reacts in seconds: it gathers
# pending pods for BATCH_IDLE_DURATION after the last one came (at most
# BATCH_MAX_DURATION) before launching nodes for them (defaults 1s and 10s).
karpenter_env=(
  DISABLE_LEADER_ELECTION=true # one replica, and no in-cluster namespace
  BATCH_IDLE_DURATION=500ms
  BATCH_MAX_DURATION=3s
  LOG_LEVEL=info
  # NodeOverlay: the gate is off by default; GPU sharing plans shared
  # capacity with overlays.
  FEATURE_GATES=NodeOverlay=true
)

karpenter_ready() { [ "$(curl -s --max-time 2 "http://127.0.0.1:$karpenter_health_port/readyz")" = ok ]; }
kwok_ready() { [ "$(curl -s --max-time 2 "http://127.0.0.1:$kwok_port/healthz")" = ok ]; }

provisioners_running() {
  local name
  for name in "${provisioners[@]}"; do pid_of "$name" >/dev/null || return 1; done
}

up_provisioners() {
  local t0 dir stage name configs=() instance_types=$here/karpenter/instance-types.json
  if provisioners_running; then
    log "kwok and Karpenter already running"
    return 0
  fi
  for name in "${provisioners[@]}"; do stop "$name"; done
  "$here/build.sh" kwok karpenter-kwok
  t0=$SECONDS
  trap 'rc=$?; if [ $rc != 0 ]; then log "starting kwok and Karpenter failed; stopping them"; stop karpenter-kwok; stop kwok; fi' EXIT

  dir=$(module_dir sigs.k8s.io/kwok kwok)/kustomize/stage
  for stage in "${kwok_stages[@]}"; do
    [ -f "$dir/$stage" ] || die "kwok stage $stage missing from $dir"
    configs+=(--config="$dir/$stage")
  done
  for stage in "${own_kwok_stages[@]}"; do configs+=(--config="$stage"); done
  free_port kwok_port
  # --cidr keeps pod IPs out of the service range (10.0.0.0/24).
  start kwok --kubeconfig="$state/kubeconfig" \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --server-address="127.0.0.1:$kwok_port" --cidr=10.244.0.0/16 "${configs[@]}"
  wait_for "kwok /healthz" 30 kwok kwok_ready

  # The node class every test and example fleet names; KWOKNodeClass has
  # nothing to configure but an optional registration delay (none here).
  kubectl apply --server-side --field-manager=gpufleet-cluster-sh -f - >/dev/null <<'EOF'
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: default
EOF

  free_port karpenter_metrics_port
  free_port karpenter_health_port
  (
    export KUBECONFIG=$state/kubeconfig # Karpenter reads no --kubeconfig flag
    export METRICS_PORT=$karpenter_metrics_port HEALTH_PROBE_PORT=$karpenter_health_port
    export INSTANCE_TYPES_FILE_PATH=$instance_types
    export "${karpenter_env[@]}"
    start karpenter-kwok
  )
  wait_for "Karpenter /readyz" 60 karpenter-kwok karpenter_ready
  # A broken instance-types file is only logged, and Karpenter runs on with
  # none: fail here instead of leaving every fleet without nodes.
  if grep -q 'failed constructing instance types' "$logs/karpenter-kwok.log"; then
    die "Karpenter could not read $instance_types; see $logs/karpenter-kwok.log"
  fi

  cat >>"$state/env" <<EOF
kwok_port=$kwok_port
karpenter_metrics_port=$karpenter_metrics_port
karpenter_health_port=$karpenter_health_port
EOF
  trap - EXIT
  log "kwok and Karpenter up in $((SECONDS - t0))s (instance types: $instance_types)"
}

# --- the simulated device plugin (up --karpenter) -------------------------------

# kwok's nodes advertise the instance type's whole GPUs; the NVIDIA device
# plugin would advertise what its configuration makes of them. The stand-in
# (testbed/stand-ins/simulated-device-plugin.rs, see there; a cargo example of
# the repository, built here) runs beside kwok and Karpenter, in its own
# session so `down` can stop it. It reads the ConfigMaps of the GPU
# Operator's namespace, created here as the operator's install would.
device_plugin=simulated-device-plugin

device_plugin_pid() {
  local pid
  pid=$(cat "$state/$device_plugin.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "examples/$device_plugin" || return 1
  echo "$pid"
}

up_device_plugin() {
  device_plugin_pid >/dev/null && return 0
  kubectl create namespace gpu-operator --dry-run=client -o yaml |
    kubectl apply --server-side --field-manager=gpufleet-cluster-sh -f - >/dev/null
  cargo build --quiet --manifest-path "$repo/Cargo.toml" --example "$device_plugin" ||
    die "could not build $device_plugin"
  rm -f "$state/$device_plugin.pid"
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$state/$device_plugin.pid" \
    "${CARGO_TARGET_DIR:-$repo/target}/debug/examples/$device_plugin" "$state/kubeconfig" \
    </dev/null >"$logs/$device_plugin.log" 2>&1 8>&- &
  for _ in $(seq 50); do [ -s "$state/$device_plugin.pid" ] && break; sleep 0.1; done
  device_plugin_pid >/dev/null || die "$device_plugin did not start; see $logs/$device_plugin.log"
  log "$device_plugin running (log: $logs/$device_plugin.log)"
}

stop_device_plugin() {
  local pid
  pid=$(device_plugin_pid) || return 0
  # Its session's process group.
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}

# --- commands ----------------------------------------------------------------

up() {
  local t0=$SECONDS
  if healthy; then
    log "already running and ready; KUBECONFIG=$state/kubeconfig"
    return 0
  fi
  if compgen -G "$state/*.pid" >/dev/null; then
    log "found a partial or dead cluster; cleaning it up first"
    down
  fi
  "$here/build.sh" etcd kube-apiserver kube-scheduler kube-controller-manager kubectl
  t0=$SECONDS
  mkdir -p "$state" "$logs"
  # If anything below fails (die exits), do not leave half a cluster running.
  trap 'rc=$?; if [ $rc != 0 ]; then log "up failed; stopping what was started"; down; fi' EXIT

  gen_pki
  free_port etcd_port
  free_port etcd_peer_port
  free_port api_port
  free_port scheduler_port
  free_port controller_manager_port
  kubeconfig "$state/kubeconfig" gpufleet-admin admin
  kubeconfig "$state/kubeconfig-limited" gpufleet-limited limited
  kubeconfig "$state/kubeconfig-provider" gpufleet-provider provider
  kubeconfig "$state/kubeconfig-counted" gpufleet-counted counted

  start_etcd
  wait_healthy etcd

  apiserver_flags=${GPUFLEET_APISERVER_FLAGS:-}
  start_kube-apiserver
  wait_healthy kube-apiserver

  start_kube-scheduler
  start_kube-controller-manager

  # While those two start, install the CRDs and the provider's roles.
  install_crds
  bind_provider_roles
  wait_healthy kube-scheduler
  wait_healthy kube-controller-manager

  cat >"$state/env" <<EOF
# Written by testbed/cluster.sh up; source it to use the cluster.
export KUBECONFIG=$state/kubeconfig
GPUFLEET_KUBECONFIG_LIMITED=$state/kubeconfig-limited
GPUFLEET_KUBECONFIG_PROVIDER=$state/kubeconfig-provider
GPUFLEET_KUBECONFIG_COUNTED=$state/kubeconfig-counted
api_port=$api_port
etcd_port=$etcd_port
etcd_peer_port=$etcd_peer_port
scheduler_port=$scheduler_port
controller_manager_port=$controller_manager_port
apiserver_flags='$apiserver_flags'
EOF
  trap - EXIT
  log "cluster up in $((SECONDS - t0))s: https://127.0.0.1:$api_port, KUBECONFIG=$state/kubeconfig"
}

down() {
  local name stoppers=()
  stop_device_plugin
  # Clients of etcd first, so they do not spend their shutdown retrying it.
  # Wait for these stoppers only: a bare `wait` would also wait for the
  # components themselves when `up` fails and they are still our children.
  for name in "${provisioners[@]}" kube-controller-manager kube-scheduler kube-apiserver; do
    stop "$name" &
    stoppers+=($!)
  done
  wait "${stoppers[@]}"
  stop etcd
  if [ -d "$state" ]; then
    find "$state" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
  fi
  log "stopped; state removed (logs kept in $logs)"
}

status() {
  local name pid rc=0
  for name in "${components[@]}"; do
    if pid=$(pid_of "$name"); then echo "$name: running (pid $pid)"; else echo "$name: stopped"; rc=1; fi
  done
  if [ $rc = 0 ] && healthy; then
    echo "kube-apiserver: ready at https://127.0.0.1:$api_port"
    echo "KUBECONFIG=$state/kubeconfig"
    for name in "${provisioners[@]}"; do
      if pid=$(pid_of "$name"); then echo "$name: running (pid $pid)"; else echo "$name: not started (up --karpenter)"; fi
    done
  else
    echo "cluster: not ready"
    rc=1
  fi
  return $rc
}

# --- faults ------------------------------------------------------------------

# The running cluster's settings, for the fault commands.
running() {
  [ -f "$state/env" ] || die "no cluster in $state; run \`cluster.sh up\` first"
  # shellcheck disable=SC1091
  . "$state/env"
}

component() {
  [[ " ${components[*]} " == *" ${1:-} "* ]] || die "unknown component ${1:-}; one of: ${components[*]}"
}

kill_component() {
  local name=$1 signal=${2:-KILL} pid
  component "$name"
  pid=$(pid_of "$name") || die "$name is not running"
  kill -"$signal" "$pid"
  case $signal in STOP | CONT) return 0 ;; esac
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  die "$name (pid $pid) still runs 10s after SIG$signal"
}

start_component() {
  local name=$1
  component "$name"
  running
  apiserver_flags=${GPUFLEET_APISERVER_FLAGS-$apiserver_flags}
  if pid_of "$name" >/dev/null; then die "$name is already running"; fi
  "start_$name"
  wait_healthy "$name"
  if [ "$name" = kube-apiserver ]; then
    sed -i "s|^apiserver_flags=.*|apiserver_flags='$apiserver_flags'|" "$state/env"
  fi
  log "$name started again"
}

# One cluster.sh at a time per checkout (parallel make targets).
mkdir -p "$repo/target"
exec 8>"$repo/target/.cluster.lock"
flock 8

case ${1:-} in
  up)
    case ${2:-} in
      "") up ;;
      --karpenter) up && up_provisioners && up_device_plugin ;;
      *) echo "usage: $0 up [--karpenter]" >&2; exit 2 ;;
    esac
    ;;
  down) down ;;
  status) status ;;
  # Applies and binds docs/rbac.yaml again, once regenerated, on the running cluster.
  roles)
    healthy || die "no running cluster in $state: run up first"
    bind_provider_roles
    log "docs/rbac.yaml applied and bound to gpufleet-provider"
    ;;
  # Installs the same CRDs into any cluster (e.g. kind): KUBECONFIG=... cluster.sh crds
  crds)
    target_kubeconfig=${KUBECONFIG:?set KUBECONFIG to the cluster to install the CRDs into}
    "$here/build.sh" kubectl
    mkdir -p "$state"
    install_crds
    log "CRDs installed into the cluster of $target_kubeconfig"
    ;;
  kill) kill_component "${2:-}" "${3:-KILL}" ;;
  start) start_component "${2:-}" ;;
  restart)
    component "${2:-}"
    stop "$2"
    start_component "$2"
    ;;
  *) echo "usage: $0 up [--karpenter]|down|status|roles|crds|kill <component> [SIGNAL]|start <component>|restart <component>" >&2; exit 2 ;;
esac
