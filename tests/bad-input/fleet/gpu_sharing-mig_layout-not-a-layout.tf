# No GPU has a 9g profile.
# expect: validate
# path: gpu_sharing.mig_layout
# message: is not a MIG layout
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  gpu_sharing  = { strategy = "mig", mig_layout = "all-9g.99gb" } # <- diagnostic
}
