# An empty set selects nothing.
# expect: validate
# path: capacity_types
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name           = "gpu"
  node_class     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  capacity_types = [] # <- diagnostic
}
