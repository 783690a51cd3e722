#!/usr/bin/env bash
# `make release`: the files a provider registry serves for one platform.
#
#   scripts/release.sh [TARGET_TRIPLE]                 build (cargo --release) and package
#   scripts/release.sh --binary PATH [TARGET_TRIPLE]   package a binary built elsewhere
#   options: --out DIR (default target/release/dist)
#
# TARGET_TRIPLE defaults to the host's (x86_64-unknown-linux-gnu here). Writes
#   terraform-provider-gpufleet_VERSION_OS_ARCH.zip       the binary, named terraform-provider-gpufleet_vVERSION
#   terraform-provider-gpufleet_VERSION_manifest.json     the plugin protocol versions (6.0)
#   terraform-provider-gpufleet_VERSION_SHA256SUMS        of every zip of VERSION in DIR and the manifest
#   terraform-provider-gpufleet_VERSION_SHA256SUMS.sig    detached gpg signature, when GPUFLEET_SIGNING_KEY
#                                                         names a secret key gpg can use without a prompt
# Run it once per triple to release several platforms into one DIR.
#
# Reproducible: the same commit gives the same files, wherever it is checked
# out. Paths of the checkout and of the cargo home are remapped in the
# binary; the zip holds one entry with a fixed mode (0755), no extra fields
# (uid, gid, extended timestamps) and the commit's time (SOURCE_DATE_EPOCH,
# by default `git log -1 --format=%ct`) in UTC.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

log() { printf '[release.sh] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

binary= out=$repo/target/release/dist triple=
while [ $# -gt 0 ]; do
  case $1 in
    --binary) binary=$(realpath "$2"); shift 2 ;;
    --out) mkdir -p "$2"; out=$(realpath "$2"); shift 2 ;;
    -*) die "unknown option $1 (see the header of $0)" ;;
    *) triple=$1; shift ;;
  esac
done
mkdir -p "$out"
[ -n "$triple" ] || triple=$(rustc -vV | sed -n 's/^host: //p')

# Registry platform names (Go's GOOS_GOARCH) for a Rust target triple.
case $triple in
  x86_64-*) arch=amd64 ;;
  aarch64-*) arch=arm64 ;;
  i686-*) arch=386 ;;
  arm-* | armv7-*) arch=arm ;;
  *) die "no registry architecture for target $triple" ;;
esac
exe=
case $triple in
  *-linux-*) os=linux ;;
  *-apple-darwin) os=darwin ;;
  *-windows-*) os=windows exe=.exe ;;
  *-freebsd) os=freebsd ;;
  *) die "no registry operating system for target $triple" ;;
esac
command -v zip >/dev/null || die "zip is needed (Debian: apt-get install zip)"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || die "cannot read the version from Cargo.toml"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null) ||
    die "not a git checkout: set SOURCE_DATE_EPOCH (seconds since 1970) for the archive timestamps"
fi
export SOURCE_DATE_EPOCH

if [ -z "$binary" ]; then
  target_dir=$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
  cargo_home=${CARGO_HOME:-$HOME/.cargo}
  # The unit separator keeps paths with spaces whole; these flags replace
  # any RUSTFLAGS, so the release does not depend on the caller's.
  sep=$'\x1f'
  flags="--remap-path-prefix=$repo=/gpufleet${sep}--remap-path-prefix=$cargo_home=/cargo"
  case $target_dir in "$repo"/*) ;; *) flags+="${sep}--remap-path-prefix=$target_dir=/target" ;; esac
  log "building terraform-provider-gpufleet $version for $triple (release profile; about 4 minutes cold on 2 cores)"
  start=$(date +%s)
  CARGO_ENCODED_RUSTFLAGS=$flags cargo build --release --locked --quiet --target "$triple"
  log "built in $(($(date +%s) - start))s"
  binary=$target_dir/$triple/release/terraform-provider-gpufleet$exe
fi
[ -f "$binary" ] || die "no binary at $binary"

base=terraform-provider-gpufleet_$version
zip_name=${base}_${os}_${arch}.zip
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -m 0755 "$binary" "$stage/terraform-provider-gpufleet_v$version$exe"
touch -d "@$SOURCE_DATE_EPOCH" "$stage/terraform-provider-gpufleet_v$version$exe"
rm -f "$out/$zip_name"
(cd "$stage" && TZ=UTC zip -q -X -6 "$out/$zip_name" "terraform-provider-gpufleet_v$version$exe")

# What the registry reads to tell clients which protocol the provider speaks.
printf '{\n  "version": 1,\n  "metadata": {\n    "protocol_versions": ["6.0"]\n  }\n}\n' >"$out/${base}_manifest.json"

sums=${base}_SHA256SUMS
(
  cd "$out"
  # Sorted by name (LC_ALL=C), so the file does not depend on the locale.
  LC_ALL=C ls -1 "${base}"_*.zip "${base}_manifest.json" | LC_ALL=C sort | xargs sha256sum >"$sums"
)
rm -f "$out/$sums.sig"
if [ -n "${GPUFLEET_SIGNING_KEY:-}" ]; then
  gpg --batch --yes --local-user "$GPUFLEET_SIGNING_KEY" --output "$out/$sums.sig" --detach-sign "$out/$sums"
  log "signed $sums with key $GPUFLEET_SIGNING_KEY"
fi
log "wrote $out:"
(cd "$out" && sha256sum "$zip_name" && ls -1 "$base"_SHA256SUMS* "${base}_manifest.json") | sed 's/^/    /' >&2
