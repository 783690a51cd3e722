# NVIDIA's device plugin refuses to start with MPS under the mixed MIG strategy.
# expect: validate
# path: mig_strategy
# message: using --mig-strategy=mixed is not supported with MPS
resource "gpufleet_gpu_sharing" "this" {
  strategy     = "mps"
  replicas     = 4
  mig_strategy = "mixed" # <- diagnostic
}
