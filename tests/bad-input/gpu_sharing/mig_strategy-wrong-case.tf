# MIG strategies are lower case.
# expect: validate
# path: mig_strategy
# message: is not one of
resource "gpufleet_gpu_sharing" "this" {
  strategy     = "none"
  mig_strategy = "Mixed" # <- diagnostic
}
