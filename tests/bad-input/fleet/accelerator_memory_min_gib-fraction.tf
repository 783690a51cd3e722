# Whole GiB only.
# expect: validate
# path: accelerator_memory_min_gib
# message: whole number
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_memory_min_gib = 79.5 # <- diagnostic
}
