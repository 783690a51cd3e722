# A size with a unit is not a number.
# expect: validate
# path: accelerator_memory_min_gib
# message: number is required
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_memory_min_gib = "80Gi" # <- diagnostic
}
