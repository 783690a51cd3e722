# Pods per GPU are whole.
# expect: validate
# path: replicas
# message: not a whole number
resource "gpufleet_gpu_sharing" "this" {
  strategy = "time_slicing"
  replicas = 2.5 # <- diagnostic
}
