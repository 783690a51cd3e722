# One model gives one accelerator name to choose from, not two.
# expect: plan
# path: min_values.accelerators
# message: min_values.accelerators is 2
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  min_values   = { accelerators = 2 } # <- diagnostic
}
