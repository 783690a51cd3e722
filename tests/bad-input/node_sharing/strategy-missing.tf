# strategy is required.
# expect: validate
# path: strategy
# message: strategy
resource "gpufleet_node_sharing" "this" { # <- diagnostic
  name      = "gpu-1"
  node_name = "gpu-1"
}
