# id is computed.
# expect: validate
# path: id
# message: is set by the provider
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "none"
  id        = "gpu-1" # <- diagnostic
}
