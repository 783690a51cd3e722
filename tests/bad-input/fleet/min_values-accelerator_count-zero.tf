# minValues counts at least one value.
# expect: validate
# path: min_values.accelerator_count
# message: outside
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = { min = 8, max = 8 }
  min_values        = { accelerator_count = 0 } # <- diagnostic
}
