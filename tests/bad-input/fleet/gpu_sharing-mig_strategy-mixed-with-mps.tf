# NVIDIA's device plugin refuses to start with MPS under the mixed MIG strategy.
# expect: validate
# path: gpu_sharing.strategy
# message: using --mig-strategy=mixed is not supported with MPS
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "mps", replicas = 4, mig_strategy = "mixed" } # <- diagnostic
}
