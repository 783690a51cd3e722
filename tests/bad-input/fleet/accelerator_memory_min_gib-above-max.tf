# At least 80 GiB and at most 40: no node matches.
# expect: validate
# path: accelerator_memory_min_gib
# message: greater than
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_memory_min_gib = 80 # <- diagnostic
  accelerator_memory_max_gib = 40
}
