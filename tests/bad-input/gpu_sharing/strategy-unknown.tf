# Not a sharing strategy.
# expect: validate
# path: strategy
# message: is not one of
resource "gpufleet_gpu_sharing" "this" {
  strategy = "sliced" # <- diagnostic
  replicas = 4
}
