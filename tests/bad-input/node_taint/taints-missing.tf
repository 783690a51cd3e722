# taints is required.
# expect: validate
# path: taints
# message: required
resource "gpufleet_node_taint" "this" { # <- diagnostic
  node_name = "gpu-1"
}
