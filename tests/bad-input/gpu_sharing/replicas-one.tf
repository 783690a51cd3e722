# Sharing a GPU one way is not sharing.
# expect: validate
# path: replicas
# message: is below 2
resource "gpufleet_gpu_sharing" "this" {
  strategy = "time_slicing"
  replicas = 1 # <- diagnostic
}
