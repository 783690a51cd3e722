# strategy is required.
# expect: validate
# path: strategy
# message: strategy
resource "gpufleet_gpu_sharing" "this" { # <- diagnostic
  replicas = 4
}
