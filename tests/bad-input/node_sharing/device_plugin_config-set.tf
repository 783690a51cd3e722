# device_plugin_config is computed.
# expect: validate
# path: device_plugin_config
# message: is set by the provider
resource "gpufleet_node_sharing" "this" {
  name                 = "gpu-1"
  node_name            = "gpu-1"
  strategy             = "none"
  device_plugin_config = "gpu-1" # <- diagnostic
}
