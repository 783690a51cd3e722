# The azure label scheme has no GPU memory label.
# expect: plan
# path: accelerator_memory_min_gib
# message: label scheme
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme               = "azure"
  accelerator_memory_min_gib = 80 # <- diagnostic
}
