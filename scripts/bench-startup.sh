#!/usr/bin/env bash
# Startup benchmark on the release binary; prints how it was run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr)"
cargo bench --quiet --bench startup
