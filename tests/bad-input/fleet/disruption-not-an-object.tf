# A string where an object belongs.
# expect: validate
# path: disruption
# message: object required
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = "WhenEmpty" # <- diagnostic
}
