# MIG needs a layout.
# expect: validate
# path: gpu_sharing.mig_layout
# message: needs a `mig_layout`
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  gpu_sharing  = { strategy = "mig" } # <- diagnostic
}
