# Not a sharing strategy.
# expect: validate
# path: gpu_sharing.strategy
# message: is not one of
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "vgpu" } # <- diagnostic
}
