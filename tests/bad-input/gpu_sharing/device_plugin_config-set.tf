# device_plugin_config is computed.
# expect: validate
# path: device_plugin_config
# message: is set by the provider
resource "gpufleet_gpu_sharing" "this" {
  strategy             = "none"
  device_plugin_config = "default" # <- diagnostic
}
