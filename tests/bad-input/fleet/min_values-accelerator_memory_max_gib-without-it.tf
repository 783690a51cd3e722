# minValues for a requirement accelerator_memory_max_gib does not generate.
# expect: plan
# path: min_values.accelerator_memory_max_gib
# message: is not set
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  min_values   = { accelerator_memory_max_gib = 1 } # <- diagnostic
}
