# The key node-NAME is also the value of the nvidia.com/device-plugin.config
# label, at most 63 characters: 59 are too many.
# expect: validate
# path: name
# message: nvidia.com/device-plugin.config
resource "gpufleet_node_sharing" "this" {
  name      = "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn" # <- diagnostic
  node_name = "gpu-1"
  strategy  = "none"
}
