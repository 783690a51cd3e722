# One zone cannot give two values to choose from.
# expect: plan
# path: min_values.zones
# message: min_values.zones is 2
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  zones      = ["zone-a"]
  min_values = { zones = 2 } # <- diagnostic
}
