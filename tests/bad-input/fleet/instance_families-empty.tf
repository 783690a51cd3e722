# An empty set selects nothing.
# expect: validate
# path: instance_families
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  instance_families = [] # <- diagnostic
}
