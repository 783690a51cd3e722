# device_plugin_config is computed.
# expect: validate
# path: device_plugin_config
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name                 = "gpu"
  node_class           = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  device_plugin_config = "version: v1" # <- diagnostic
}
