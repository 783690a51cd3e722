# MPS needs to know how many clients share a GPU.
# expect: validate
# path: replicas
# message: needs `replicas`
resource "gpufleet_node_sharing" "this" { # <- diagnostic
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "mps"
}
