# Karpenter caps minValues at 50.
# expect: validate
# path: min_values.accelerators
# message: outside
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  min_values   = { accelerators = 51 } # <- diagnostic
}
