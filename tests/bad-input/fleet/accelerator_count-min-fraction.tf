# Half a GPU is not a count.
# expect: validate
# path: accelerator_count.min
# message: whole number
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {
    min = 1.5 # <- diagnostic
  }
}
