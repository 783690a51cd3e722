# Nothing is shared, so nothing is renamed.
# expect: validate
# path: gpu_sharing.rename_by_default
# message: nothing is renamed
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  gpu_sharing  = { strategy = "none", rename_by_default = true } # <- diagnostic
}
