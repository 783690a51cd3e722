# Sharing a GPU one way is not sharing.
# expect: validate
# path: replicas
# message: is below 2
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "time_slicing"
  replicas  = 1 # <- diagnostic
}
