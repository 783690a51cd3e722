# all-balanced makes different MIG devices on A100-40GB and H100.
# expect: validate
# path: gpu_sharing.mig_layout
# message: differ between models
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["A100-40GB", "H100"]
  gpu_sharing  = { strategy = "mig", mig_layout = "all-balanced" } # <- diagnostic
}
