# A negative count.
# expect: validate
# path: accelerator_count.max
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {
    max = -8 # <- diagnostic
  }
}
