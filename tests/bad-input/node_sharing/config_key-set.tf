# config_key is computed.
# expect: validate
# path: config_key
# message: is set by the provider
resource "gpufleet_node_sharing" "this" {
  name       = "gpu-1"
  node_name  = "gpu-1"
  strategy   = "none"
  config_key = "node-gpu-1" # <- diagnostic
}
