# NVIDIA's device plugin refuses to start with MPS under the mixed MIG strategy.
# expect: validate
# path: strategy
# message: using --mig-strategy=mixed is not supported with MPS
resource "gpufleet_node_sharing" "this" {
  name         = "gpu-1"
  node_name    = "gpu-1"
  strategy     = "mps" # <- diagnostic
  replicas     = 4
  mig_strategy = "mixed"
}
