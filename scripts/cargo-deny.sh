#!/usr/bin/env bash
# Prints the path of cargo-deny, installing the pinned version once per
# machine into ~/.cache/gpufleet/bin (a few minutes on 2 cores the first time),
# or $GPUFLEET_BIN_CACHE, where testbed/build.sh and scripts/fuzz.sh keep theirs.
set -euo pipefail
version=0.20.2
cache=${GPUFLEET_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/bin}
binary=$cache/cargo-deny-$version
if [ ! -x "$binary" ]; then
  echo "lint: installing cargo-deny $version (once per machine)" >&2
  root=$(mktemp -d)
  cargo install --quiet --locked cargo-deny --version "$version" --root "$root" >&2
  mkdir -p "$cache"
  mv "$root/bin/cargo-deny" "$binary"
  rm -rf "$root"
fi
echo "$binary"
