# At least 1 GiB.
# expect: validate
# path: accelerator_memory_min_gib
# message: outside
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_memory_min_gib = 0 # <- diagnostic
}
