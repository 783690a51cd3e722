#!/usr/bin/env bash
# Builds the acceptance-test control plane (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kubectl, kwok, Karpenter's kwok cloud provider,
# Kueue's manager),
# the OpenTofu CLI, HashiCorp's docs generator (tfplugindocs, for
# `make docs`) and the Helm CLI (for rendering the GPU Operator's chart in
# tests) from Go modules, with no container images or release tarballs;
# on request also the bench's plugin floor (plugin-floor: our own Go source in
# benches/plugin-floor, for `make bench` only) and the four Kubernetes
# binaries at 1.37 (kube-apiserver-1.37, ...: `cluster.sh up --kubernetes=1.37`,
# for `make test-long` only).
# `aws-instance-types` is data, not a binary: the kwok provider's EC2 instance
# types, which the generator aws-kwok-instance-types (built here too) writes
# from the EC2 data of moto's wheel (fetched with pip at the version
# aws-kwok-instance-types/moto.txt pins) into target/tools/aws-instance-types.json.
#
#   testbed/build.sh [name...]   # default: all but plugin-floor and the 1.37 binaries
#
# Each binary is cached as $GPUFLEET_BIN_CACHE/<name>-<version> (default
# ~/.cache/gpufleet/bin), so only the first run on a machine pays the long cold
# build; later runs just refresh the symlinks in <repo>/target/tools/bin/.
# Versions come from the require lines of the wrapper modules' go.mod files,
# so bumping a version there is all it takes to get a fresh build; the plugin
# floor's also carries a hash of its source, so editing it rebuilds too.
# GPUFLEET_REBUILD=1 ignores the cache.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
cache=${GPUFLEET_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/bin}
bindir=$repo/target/tools/bin
all=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok karpenter-kwok kueue tofu terraform-1.13.3 terraform-1.5.7 tofu-1.8.11 tfplugindocs helm aws-instance-types)

log() { printf '[build.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[ -x "$GO" ] || die "no Go toolchain found (put go on PATH or set GO=/path/to/go)"
# Never let go fetch a different toolchain behind our back; a too-old Go
# should fail here with a clear message instead. The one exception is pinned
# per wrapper module below (toolchain).
export GOTOOLCHAIN=local CGO_ENABLED=0
goversion=$("$GO" env GOVERSION)
case $goversion in
  go1.2[6-9]* | go1.[3-9][0-9]*) ;;
  *) die "Go >= 1.26 is needed (etcd and kwok declare go 1.26.0); found $goversion at $GO" ;;
esac

# name -> wrapper module dir, module whose version keys the cache, package.
module_dir() {
  case $1 in
    etcd) echo etcd ;;
    kube-apiserver | kube-scheduler | kube-controller-manager | kubectl) echo k8s ;;
    # The newest Kubernetes, beside the pinned one (cluster.sh up --kubernetes=1.37).
    kube-apiserver-1.37 | kube-scheduler-1.37 | kube-controller-manager-1.37 | kubectl-1.37) echo k8s-1.37 ;;
    kwok) echo kwok ;;
    karpenter-kwok) echo karpenter ;;
    # Kueue's manager (cluster.sh up --kueue).
    kueue) echo kueue ;;
    tofu) echo tofu ;;
    # Newer than the terraform on PATH: resource identity (test-support/src/terraform.rs).
    terraform-1.13.*) echo terraform-1.13 ;;
    # Older CLIs, extra compatibility evidence (tests/acceptance/compat.rs); the version
    # is part of the name so they sit next to terraform and tofu in bin/.
    terraform-1.5.*) echo terraform-1.5 ;;
    tofu-1.8.*) echo tofu-1.8 ;;
    tfplugindocs) echo tfplugindocs ;;
    # Renders the GPU Operator's chart (test-support/src/helm.rs).
    helm) echo helm ;;
    aws-kwok-instance-types) echo aws-kwok-instance-types ;;
    plugin-floor) echo plugin-floor ;;
    *) return 1 ;;
  esac
}
# Where a module dir is: the wrapper modules here, the plugin floor with the benches.
module_root() {
  case $1 in
    plugin-floor) echo "$repo/benches/plugin-floor" ;;
    *) echo "$here/$1" ;;
  esac
}
version_module() {
  case $(module_dir "$1") in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    k8s | k8s-1.37) echo k8s.io/kubernetes ;;
    kwok) echo sigs.k8s.io/kwok ;;
    karpenter) echo sigs.k8s.io/karpenter ;;
    kueue) echo sigs.k8s.io/kueue ;;
    tofu | tofu-1.8) echo github.com/opentofu/opentofu ;;
    terraform-1.13 | terraform-1.5) echo github.com/hashicorp/terraform ;;
    tfplugindocs) echo github.com/hashicorp/terraform-plugin-docs ;;
    helm) echo helm.sh/helm/v3 ;;
    aws-kwok-instance-types) echo github.com/aws/karpenter-provider-aws ;;
    plugin-floor) echo github.com/hashicorp/terraform-plugin-framework ;;
  esac
}
package() {
  case $1 in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
    karpenter-kwok) echo sigs.k8s.io/karpenter/kwok ;;
    kueue) echo sigs.k8s.io/kueue/cmd/kueue ;;
    tofu | tofu-1.8.*) echo github.com/opentofu/opentofu/cmd/tofu ;;
    terraform-1.13.* | terraform-1.5.*) echo github.com/hashicorp/terraform ;;
    tfplugindocs) echo github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs ;;
    helm) echo helm.sh/helm/v3/cmd/helm ;;
    aws-kwok-instance-types) echo gpufleet.test/controlplane/aws-kwok-instance-types ;;
    plugin-floor) echo gpufleet.test/benches/plugin-floor ;;
    *) echo "k8s.io/kubernetes/cmd/${1%-1.37}" ;;
  esac
}
# The version pinned in the wrapper's go.mod (read as text: cheap, no network).
# For our own source (the EC2 generator, the plugin floor), plus the first
# 12 hex digits of the SHA-256 of its go.mod and Go files.
version() {
  local dir mod v
  dir=$(module_dir "$1") mod=$(version_module "$1")
  v=$(awk -v m="$mod" '{ for (i = 1; i < NF; i++) if ($i == m && $(i + 1) ~ /^v[0-9]/) { print $(i + 1); exit } }' \
    "$(module_root "$dir")/go.mod")
  if [ "$dir" = aws-kwok-instance-types ] || [ "$dir" = plugin-floor ] && [ -n "$v" ]; then
    v+=-$(cd "$(module_root "$dir")" && cat go.mod ./*.go | sha256sum | cut -c1-12)
  fi
  echo "$v"
}

ldflags() {
  local dir=$1 v=$2 flags="-s -w"
  case $dir in
    k8s | k8s-1.37)
      # What upstream's hack/lib/version.sh stamps. Without it the binaries
      # report v0.0.0-master, which breaks tools that parse --version (kwokctl,
      # kubectl's skew warning). The build date is the release's publication
      # time, so the output does not depend on when it was built.
      local date minor=${v#v1.}
      minor=${minor%%.*}
      date=$(cd "$here/$dir" && "$GO" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date -X $pkg.gitCommit="
      done
      ;;
    tofu | tofu-1.8) flags+=" -X github.com/opentofu/opentofu/version.dev=no" ;; # else it says X.Y.Z-dev
    # What Karpenter's release build stamps; it shows in its logs and user agent.
    karpenter) flags+=" -X sigs.k8s.io/karpenter/pkg/operator.Version=$v" ;;
    # What Kueue's Makefile stamps (its logs print it at startup); no commit
    # or build date, so the binary does not depend on when it was built.
    kueue) flags+=" -X sigs.k8s.io/kueue/pkg/version.GitVersion=$v" ;;
    # Else terraform v1.13.3 says "1.13.3-dev"; v1.5.7's version package has
    # no dev flag (Prerelease is "").
    terraform-1.13) flags+=" -X github.com/hashicorp/terraform/version.dev=no" ;;
    # What upstream's release build stamps; otherwise --version says "dev".
    tfplugindocs) flags+=" -X github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs/build.version=${v#v}" ;;
    helm)
      # What upstream's Makefile stamps for a release: its version (else
      # `helm version` says v3.22), and the Kubernetes version of the
      # client-go it links (client-go v0.N.x is Kubernetes 1.N), which
      # `helm template` assumes when given no --kube-version.
      local client_go minor
      client_go=$(cd "$here/helm" && "$GO" list -m -f '{{.Version}}' k8s.io/client-go)
      minor=${client_go#v0.}
      minor=${minor%%.*}
      flags+=" -X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
      for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
        flags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
      done
      ;;
  esac
  echo "$flags"
}

# The Go toolchain a wrapper module builds with: the `toolchain` line of its
# go.mod, else the local Go. Karpenter v1.15.0 declares go 1.26.9, above the
# machine's Go; the module proxy serves Go 1.27.3 as a module, and `go`
# fetches it (about 76 MB, once) for that module only.
toolchain() {
  awk '$1 == "toolchain" { print $2; found = 1 } END { if (!found) print "local" }' "$(module_root "$1")/go.mod"
}

# Prints a line every minute while a long build runs, so CI logs show life.
# When killed it also kills its sleep: an orphaned sleep would hold the
# caller's pipe (make | tee) and our lock open for up to a minute.
ticker() {
  local what=$1 start=$2
  trap 'kill $! 2>/dev/null; exit 0' TERM
  while :; do
    sleep 60 &
    wait $!
    log "  ... still building $what ($(($(date +%s) - start))s)"
  done
}
tick=
trap '[ -z "$tick" ] || kill "$tick" 2>/dev/null || true' EXIT

# build <module dir> <name...>: one `go build` for all names of one wrapper
# module, so packages they share (most of the Kubernetes tree) compile once.
build() {
  local dir=$1 v start tmp pkgs=() name
  shift
  v=$(version "$1")
  for name in "$@"; do pkgs+=("$(package "$name")"); done
  start=$(date +%s)
  log "building $* ($dir $v) ..."
  tmp=$(mktemp -d "$cache/.build.XXXXXX")
  ticker "$*" "$start" 9>&- &
  tick=$!
  local ok=0
  # nice: a developer machine has other compilers running; keep them responsive.
  if (cd "$(module_root "$dir")" && GOTOOLCHAIN=$(toolchain "$dir") nice -n 10 "$GO" build -trimpath -buildvcs=false \
    -ldflags "$(ldflags "$dir" "$v")" -o "$tmp/" "${pkgs[@]}"); then ok=1; fi
  kill "$tick" 2>/dev/null || true
  wait "$tick" 2>/dev/null || true
  tick=
  if [ $ok = 0 ]; then
    rm -rf "$tmp"
    die "go build failed for $* ($dir $v); see the compiler output above"
  fi
  for name in "$@"; do
    # go build names an executable after the package's last path element
    # (etcd's is go.etcd.io/etcd/server/v3, hence "server").
    local out
    out=$(basename "$(package "$name")")
    [ "$out" = v3 ] && out=server
    mv -f "$tmp/$out" "$cache/$name-$v"
  done
  rm -rf "$tmp"
  log "built $* in $(($(date +%s) - start))s"
}

# --- the kwok provider's EC2 instance types (aws-instance-types) --------------

moto_pin=$here/aws-kwok-instance-types/moto.txt
# The pinned moto version, as `moto==X` in moto.txt.
moto_version() { sed -n 's/^moto==\([^ ]*\).*/\1/p' "$moto_pin"; }

# Generated, not built: cached as <cache>/aws-instance-types-<generator
# version>-moto<version>.json, from the wheel pip fetches (checked against
# moto.txt's hash) into <cache>/moto/. Needs python3 with pip.
aws_instance_types() {
  local v wheel out tmp
  v=$(moto_version)
  [ -n "$v" ] || die "cannot read the pinned moto version from $moto_pin"
  out=$cache/aws-instance-types-$(version aws-kwok-instance-types)-moto$v.json
  if [ "${GPUFLEET_REBUILD:-0}" = 1 ] || [ ! -s "$out" ]; then
    wheel=$cache/moto/moto-$v-py3-none-any.whl
    if [ ! -s "$wheel" ]; then
      log "fetching moto $v's wheel (EC2's instance type data) ..."
      mkdir -p "$cache/moto"
      tmp=$(mktemp -d "$cache/moto/.fetch.XXXXXX")
      python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
        -r "$moto_pin" -d "$tmp" >&2 || { rm -rf "$tmp"; die "pip could not fetch moto $v (pinned in $moto_pin)"; }
      mv -f "$tmp/$(basename "$wheel")" "$wheel"
      rm -rf "$tmp"
    fi
    tmp=$(mktemp "$cache/.aws-instance-types.XXXXXX")
    "$cache/aws-kwok-instance-types-$(version aws-kwok-instance-types)" -moto "$wheel" -o "$tmp" ||
      { rm -f "$tmp"; die "aws-kwok-instance-types could not write the instance types"; }
    mv -f "$tmp" "$out"
    log "wrote the EC2 instance types from moto $v"
  fi
  ln -sfn "$out" "$repo/target/tools/aws-instance-types.json"
}

asked=("$@")
[ ${#asked[@]} -gt 0 ] || asked=("${all[@]}")
names=()
want_aws_types=0
for name in "${asked[@]}"; do
  if [ "$name" = aws-instance-types ]; then
    want_aws_types=1
    name=aws-kwok-instance-types
  fi
  module_dir "$name" >/dev/null || die "unknown binary '$name' (known: ${all[*]} plugin-floor kube-apiserver-1.37 kube-scheduler-1.37 kube-controller-manager-1.37 kubectl-1.37)"
  names+=("$name")
done

mkdir -p "$cache" "$bindir"
link_all() {
  for name in "${names[@]}"; do
    ln -sfn "$cache/$name-$(version "$name")" "$bindir/$name"
  done
  [ $want_aws_types = 0 ] || aws_instance_types
  log "ready in $bindir: ${names[*]}"
}
# Everything cached: no need to wait for the lock while another checkout
# builds (a binary enters the cache whole, by rename).
cached=0
if [ "${GPUFLEET_REBUILD:-0}" != 1 ]; then
  cached=1
  for name in "${names[@]}"; do
    v=$(version "$name")
    [ -n "$v" ] && [ -x "$cache/$name-$v" ] || cached=0
  done
fi
if [ $cached = 1 ]; then
  link_all
  exit 0
fi

# Serialise concurrent callers (parallel make targets) on one machine.
exec 9>"$cache/.lock"
flock 9

# Group what is missing by wrapper module, keeping a stable order.
for dir in etcd k8s k8s-1.37 kwok karpenter kueue tofu terraform-1.13 terraform-1.5 tofu-1.8 tfplugindocs helm aws-kwok-instance-types plugin-floor; do
  todo=()
  for name in "${names[@]}"; do
    [ "$(module_dir "$name")" = "$dir" ] || continue
    v=$(version "$name")
    [ -n "$v" ] || die "cannot read the pinned version of $name from $dir/go.mod"
    if [ "${GPUFLEET_REBUILD:-0}" = 1 ] || [ ! -x "$cache/$name-$v" ]; then
      todo+=("$name")
    else
      log "$name $v: cached"
    fi
  done
  [ ${#todo[@]} -eq 0 ] || build "$dir" "${todo[@]}"
done

link_all
