# Strategies are spelled in snake case.
# expect: validate
# path: strategy
# message: is not one of
resource "gpufleet_gpu_sharing" "this" {
  strategy = "TimeSlicing" # <- diagnostic
  replicas = 4
}
