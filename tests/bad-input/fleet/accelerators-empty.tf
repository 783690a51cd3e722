# An empty set selects nothing.
# expect: validate
# path: accelerators
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = [] # <- diagnostic
}
