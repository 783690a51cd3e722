# A fleet with a GPU maximum has at least one GPU per node (min = 0 only lets fractional GPUs in).
# expect: validate
# path: accelerator_count.max
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {
    max = 0 # <- diagnostic
  }
}
