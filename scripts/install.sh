#!/usr/bin/env bash
# Builds the release binary and installs it where Terraform and OpenTofu look
# without any configuration: the implied local mirror ~/.terraform.d/plugins,
# under both registries' host names.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
echo "==> building terraform-provider-gpufleet $version (release)"
cargo build --release --quiet
for host in registry.terraform.io registry.opentofu.org; do
  dir="$HOME/.terraform.d/plugins/$host/gpufleet/gpufleet/$version/linux_amd64"
  mkdir -p "$dir"
  install -m 0755 target/release/terraform-provider-gpufleet "$dir/terraform-provider-gpufleet_v$version"
  echo "==> installed $dir/terraform-provider-gpufleet_v$version"
done
