# No node has more than 1024 GPUs.
# expect: validate
# path: accelerator_count.max
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {
    max = 1025 # <- diagnostic
  }
}
