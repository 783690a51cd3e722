# A profile is not a layout: the layout that fills every GPU with it is `all-1g.10gb`.
# expect: validate
# path: gpu_sharing.mig_layout
# message: did you mean `all-1g.10gb`?
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  gpu_sharing  = { strategy = "mig", mig_layout = "1g.10gb" } # <- diagnostic
}
