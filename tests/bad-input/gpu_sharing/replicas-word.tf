# A word where a number belongs.
# expect: validate
# path: replicas
# message: number is required
resource "gpufleet_gpu_sharing" "this" {
  strategy = "time_slicing"
  replicas = "four" # <- diagnostic
}
