# A ConfigMap name has no underscores.
# expect: validate
# path: device_plugin_config_map
# message: DNS-1123 subdomain
provider "gpufleet" {
  host                     = "https://127.0.0.1:1"
  device_plugin_config_map = "device_plugin" # <- diagnostic
}

data "gpufleet_accelerators" "all" {}
