# An empty duration.
# expect: validate
# path: disruption.consolidate_after
# message: not a duration
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    consolidate_after = "" # <- diagnostic
  }
}
