#!/usr/bin/env bash
# make lint: formatting, clippy, and cargo-deny's license, source and
# duplicate checks (advisories too when the RustSec database is reachable).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
cargo clippy --quiet --workspace --all-targets -- -D warnings

deny=$(bash scripts/cargo-deny.sh)
"$deny" deny --log-level error check licenses bans sources
if timeout 10 git ls-remote https://github.com/rustsec/advisory-db HEAD >/dev/null 2>&1; then
  "$deny" deny --log-level error check advisories
else
  echo "lint: RustSec advisory database unreachable from here; advisories not checked"
fi
