# The MPS daemon serves at most 48 clients per GPU.
# expect: validate
# path: replicas
# message: more MPS clients than
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "mps"
  replicas  = 49 # <- diagnostic
}
