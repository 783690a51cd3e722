# name is required.
# expect: validate
# path: name
# message: name
resource "gpufleet_node_sharing" "this" { # <- diagnostic
  node_name = "gpu-1"
  strategy  = "none"
}
