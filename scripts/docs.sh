#!/usr/bin/env bash
# `make docs`: docs/ generated from the provider's own schema by HashiCorp's
# tfplugindocs, with the prose from templates/ and the examples from examples/.
#
#   scripts/docs.sh           regenerate docs/, then `tfplugindocs validate`
#   scripts/docs.sh --check   generate into target/docs-check/ and fail if
#                             docs/ differs from it (what the docs test runs)
#
# The schema comes from `providers schema -json` of Terraform 1.13.3 (built
# from its Go module, and new enough to report identity schemas) against the
# built provider, installed from a throw-away filesystem mirror. GPUFLEET_PROVIDER_BINARY names the binary to
# ask; by default this builds target/debug/terraform-provider-gpufleet.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

mode=write
case ${1:-} in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

log() { printf '[docs.sh] %s\n' "$*" >&2; }

bash testbed/build.sh tfplugindocs terraform-1.13.3
tfplugindocs=$repo/target/tools/bin/tfplugindocs
cli=$repo/target/tools/bin/terraform-1.13.3

binary=${GPUFLEET_PROVIDER_BINARY:-}
if [ -z "$binary" ]; then
  cargo build --quiet
  binary=$repo/target/debug/terraform-provider-gpufleet
fi
[ -x "$binary" ] || { log "no provider binary at $binary"; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
platform=$(CHECKPOINT_DISABLE=1 "$cli" version -json 2>/dev/null | jq -r .platform)

work=$(mktemp -d "${TMPDIR:-/tmp}/gpufleet-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The binary under both registries' host names: `gpufleet/gpufleet` means
# registry.terraform.io to Terraform and registry.opentofu.org to OpenTofu.
hosts=(registry.terraform.io registry.opentofu.org)
for host in "${hosts[@]}"; do
  dir=$work/mirror/$host/gpufleet/gpufleet/$version/$platform
  mkdir -p "$dir"
  ln -s "$binary" "$dir/terraform-provider-gpufleet_v$version"
done
cat >"$work/cli.tfrc" <<EOF
provider_installation {
  filesystem_mirror {
    path    = "$work/mirror"
    include = ["registry.terraform.io/gpufleet/gpufleet", "registry.opentofu.org/gpufleet/gpufleet"]
  }
  direct {
    exclude = ["registry.terraform.io/gpufleet/gpufleet", "registry.opentofu.org/gpufleet/gpufleet"]
  }
}
EOF
mkdir "$work/config"
cat >"$work/config/main.tf" <<'EOF'
terraform {
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}
EOF
(
  cd "$work/config"
  export TF_CLI_CONFIG_FILE=$work/cli.tfrc CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
  "$cli" init -input=false -no-color >/dev/null
  "$cli" providers schema -json >"$work/schema-full.json"
)
# tfplugindocs looks the provider up by its short name.
jq '.provider_schemas |= with_entries(.key |= sub("^.*/"; ""))' "$work/schema-full.json" >"$work/schema.json"
log "schema of terraform-provider-gpufleet $version from $("$cli" version 2>/dev/null | sed -n 1p)"

generate() {
  "$tfplugindocs" generate --provider-dir "$repo" --provider-name gpufleet \
    --providers-schema "$work/schema.json" --rendered-website-dir "$1" \
    --examples-dir examples --website-source-dir templates --website-temp-dir "$work/website" >"$work/generate.log" ||
    { cat "$work/generate.log" >&2; exit 1; }
}

if [ $mode = check ]; then
  rm -rf target/docs-check
  generate target/docs-check
  # Only what tfplugindocs renders: docs/ also holds pages of our own
  # (benchmarks.md from make bench).
  status=0
  for page in index.md guides resources data-sources; do
    diff -ruN "docs/$page" "target/docs-check/$page" >>"$work/diff" || status=1
  done
  if [ $status -ne 0 ]; then
    cat "$work/diff"
    log "docs/ is not what the schema, templates/ and examples/ generate (diff above: - committed, + generated); run 'make docs' and commit the result"
    exit 1
  fi
  log "docs/ is up to date"
else
  generate docs
  log "generated docs/"
fi
"$tfplugindocs" validate --provider-dir "$repo" --provider-name gpufleet --providers-schema "$work/schema.json" \
  >"$work/validate.log" 2>&1 || { cat "$work/validate.log" >&2; log "tfplugindocs validate failed"; exit 1; }
log "tfplugindocs validate: docs/ passes the registry's checks"
