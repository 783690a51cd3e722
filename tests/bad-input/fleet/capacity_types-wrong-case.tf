# Capacity types are lower case.
# expect: validate
# path: capacity_types
# message: is not one of
resource "gpufleet_fleet" "this" {
  name           = "gpu"
  node_class     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  capacity_types = ["Spot"] # <- diagnostic
}
