#!/usr/bin/env bash
# Fuzzes the decoders of what Terraform sends (fuzz/fuzz_targets) with
# cargo-fuzz on the nightly toolchain.
#
#   scripts/fuzz.sh smoke [SECONDS [TARGET...]]   each target SECONDS (default 5) from the committed corpus: make test
#   scripts/fuzz.sh long [RUNS [TARGET...]]       each target at least RUNS executions (default 1000000): make test-long
#   scripts/fuzz.sh merge [TARGET...]             folds what the last long run found into fuzz/corpus, minimized
#
# TARGETs default to all of them.
#
# Inputs are at most 8 KiB (-max_len), far beyond any value a test sends,
# which keeps executions fast. New inputs go to target/fuzz-corpus/, so runs never change the committed
# corpus; `merge` is the deliberate step that does. A panic, timeout or
# out-of-memory stops the run, fails the script and leaves the input in
# fuzz/artifacts/<target>/ (reproduce: cargo +nightly fuzz run <target> <file>).
# cargo-fuzz is built once per machine and cached as
# ~/.cache/gpufleet/bin/cargo-fuzz-<version>, like the control plane's binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

CARGO_FUZZ_VERSION=0.13.2
TARGETS=(msgpack_decode json_decode dynamic_value value_round_trip handshake_env)
cache=${GPUFLEET_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet/bin}
bindir=$repo/target/tools/bin
scratch=$repo/target/fuzz-corpus
logs=$repo/target/fuzz-logs

log() { printf '[fuzz.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

rustup run nightly rustc --version >/dev/null 2>&1 ||
  die "the nightly toolchain is missing: rustup toolchain install nightly --profile minimal"

cached=$cache/cargo-fuzz-$CARGO_FUZZ_VERSION
if [ ! -x "$cached" ]; then
  log "building cargo-fuzz $CARGO_FUZZ_VERSION (once per machine)"
  mkdir -p "$cache"
  root=$(mktemp -d "$cache/.cargo-fuzz.XXXXXX")
  cargo install --quiet --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION" --root "$root"
  mv "$root/bin/cargo-fuzz" "$cached"
  rm -rf "$root"
fi
mkdir -p "$bindir"
ln -sf "$cached" "$bindir/cargo-fuzz"
export PATH=$bindir:$PATH

# cargo fuzz SUBCOMMAND, on fuzz/; what follows `--` goes to libFuzzer.
fuzz() {
  local subcommand=$1; shift
  nice -n 10 cargo +nightly fuzz "$subcommand" --fuzz-dir fuzz "$@"
}

# The fuzz binaries `fuzz build` makes (release, with sanitizers).
bin=$repo/fuzz/target/$(rustup run nightly rustc -vV | sed -n 's/^host: //p')/release

# Runs one built target with libFuzzer options, new inputs going to
# $1/<target>; prints its executions and time.
run() {
  local out_dir=$1 target=$2; shift 2
  mkdir -p "$out_dir/$target" "fuzz/corpus/$target" "fuzz/artifacts/$target" "$logs"
  local out=$logs/$target.log
  local start=$SECONDS
  if ! nice -n 10 "$bin/$target" -artifact_prefix="fuzz/artifacts/$target/" "$@" \
    "$out_dir/$target" "fuzz/corpus/$target" >"$out" 2>&1; then
    tail -40 "$out" >&2
    die "$target failed (full log: $out); the input is in fuzz/artifacts/$target/ (reproduce: $bin/$target FILE)"
  fi
  # libFuzzer's last word: "Done 1000000 runs in 52 second(s)".
  local done
  done=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$out" | tail -1)
  printf '%-18s %s (%ss with start-up), committed corpus %s inputs\n' "$target" \
    "${done:-no summary}" "$((SECONDS - start))" "$(find "fuzz/corpus/$target" -type f | wc -l)"
}

mode=${1:-smoke}
[ $# -gt 0 ] && shift
if [ "$mode" != merge ]; then
  amount=${1:-}
  [ $# -gt 0 ] && shift
fi
[ $# -gt 0 ] && TARGETS=("$@")
case $mode in
  smoke)
    seconds=${amount:-5}
    fuzz build
    # From the committed corpus only, into a fresh directory: the replay of
    # a long run's finds would take longer than the run itself.
    rm -rf "$scratch-smoke"
    for t in "${TARGETS[@]}"; do run "$scratch-smoke" "$t" -max_total_time="$seconds" -max_len=8192; done
    ;;
  long)
    runs=${amount:-1000000}
    fuzz build
    for t in "${TARGETS[@]}"; do run "$scratch" "$t" -runs="$runs" -max_len=8192; done
    ;;
  merge)
    fuzz build
    mkdir -p "$logs"
    for t in "${TARGETS[@]}"; do
      mkdir -p "$scratch/$t" "fuzz/corpus/$t"
      # -merge=1 adds to the first directory only inputs that reach new
      # code; cmin then drops those that later ones made redundant.
      fuzz run "$t" "fuzz/corpus/$t" "$scratch/$t" -- -merge=1 >"$logs/$t-merge.log" 2>&1
      fuzz cmin "$t" "fuzz/corpus/$t" >>"$logs/$t-merge.log" 2>&1
      log "$t: $(find "fuzz/corpus/$t" -type f | wc -l) inputs in fuzz/corpus/$t"
    done
    ;;
  *) die "unknown mode $mode (smoke, long or merge)" ;;
esac
