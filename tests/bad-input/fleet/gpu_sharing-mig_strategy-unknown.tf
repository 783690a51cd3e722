# Not a MIG strategy of NVIDIA's device plugin.
# expect: validate
# path: gpu_sharing.mig_strategy
# message: is not one of
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  gpu_sharing  = { strategy = "mig", mig_layout = "all-1g.10gb", mig_strategy = "Mixed" } # <- diagnostic
}
