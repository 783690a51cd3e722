# A GPU fleet has at least one GPU per node.
# expect: validate
# path: accelerator_count.min
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {
    min = 0 # <- diagnostic
  }
}
