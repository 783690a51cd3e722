# Dedicated GPUs have no replicas.
# expect: validate
# path: replicas
# message: means nothing
resource "gpufleet_gpu_sharing" "this" {
  strategy = "none"
  replicas = 4 # <- diagnostic
}
