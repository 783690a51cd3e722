# A strategy name where an object belongs.
# expect: validate
# path: gpu_sharing
# message: object required
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = "time_slicing" # <- diagnostic
}
