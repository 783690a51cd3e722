# Karpenter durations have no days.
# expect: validate
# path: disruption.consolidate_after
# message: not a duration
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    consolidate_after = "1d" # <- diagnostic
  }
}
