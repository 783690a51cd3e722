# Not a Karpenter consolidation policy.
# expect: validate
# path: disruption.consolidation_policy
# message: is not one of
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    consolidation_policy = "Always" # <- diagnostic
  }
}
