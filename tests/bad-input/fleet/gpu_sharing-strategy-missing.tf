# gpu_sharing needs a strategy.
# expect: validate
# path: gpu_sharing.strategy
# message: strategy
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { replicas = 4 } # <- diagnostic
}
