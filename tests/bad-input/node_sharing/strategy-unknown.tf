# Not a sharing strategy.
# expect: validate
# path: strategy
# message: is not one of
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "vgpu" # <- diagnostic
}
