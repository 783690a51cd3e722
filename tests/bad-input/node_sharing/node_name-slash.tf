# A node name is not a path.
# expect: validate
# path: node_name
# message: not a valid name
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "nodes/gpu-1" # <- diagnostic
  strategy  = "none"
}
