# min above max: no node matches.
# expect: validate
# path: accelerator_count.min
# message: greater than
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {
    min = 8 # <- diagnostic
    max = 4
  }
}
