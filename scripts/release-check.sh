#!/usr/bin/env bash
# Is the release reproducible? Two clones of the current commit, at paths of
# different lengths, each build from scratch with scripts/release.sh (own
# target directory, nothing shared but the downloaded crates); their release
# files must be byte for byte the same. Then the release tests
# (tests/offline/release.rs) run against those files instead of the packaged debug
# binary that `make test` uses.
#
#   scripts/release-check.sh [TARGET_TRIPLE]
#
# Two cold release builds (about 4 minutes each on 2 idle cores; 25-28 minutes
# each measured on a 2-core machine shared with other builds). `make test-long`.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
triple=${1:-$(rustc -vV | sed -n 's/^host: //p')}

log() { printf '[release-check.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

commit=$(git rev-parse HEAD)
git diff --quiet HEAD || log "note: uncommitted changes are not part of the check (it builds commit ${commit:0:12})"
work=$repo/target/release-check
rm -rf "$work"
mkdir -p "$work"
dists=()
for clone in a another/checkout/b; do
  dir=$work/$clone
  git clone -q --no-checkout "$repo" "$dir"
  git -C "$dir" checkout -q --detach "$commit"
  start=$(date +%s)
  log "building the release in target/release-check/$clone ..."
  (cd "$dir" && env -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR bash scripts/release.sh "$triple")
  log "  $clone: $(($(date +%s) - start))s"
  dists+=("$dir/target/release/dist")
done

if diff -r "${dists[0]}" "${dists[1]}"; then
  log "reproducible: both builds of ${commit:0:12} gave"
  sed 's/^/    /' "${dists[0]}"/*_SHA256SUMS >&2
else
  log "NOT reproducible: the two builds of ${commit:0:12} differ (above)"
  exit 1
fi

bash testbed/build.sh tofu
log "release tests against ${dists[0]} with terraform and tofu"
GPUFLEET_RELEASE_DIST=${dists[0]} GPUFLEET_REQUIRE_ALL=1 cargo test --test offline release:: -- --test-threads=2
# Two release target directories are 1.5 GB; after a failure they stay for a look.
rm -rf "$work"
