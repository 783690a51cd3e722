# minValues for providers, which this fleet does not set.
# expect: plan
# path: min_values.providers
# message: is not set
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  min_values   = { providers = 2 } # <- diagnostic
}
