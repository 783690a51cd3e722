# Node names are lower case.
# expect: validate
# path: node_name
# message: not a valid name
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "GPU-Node-1" # <- diagnostic
  strategy  = "none"
}
