# Enforcement of a fence nobody set up enforces nothing.
# expect: validate
# path: namespace_enforcement
# message: Nothing to enforce
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  namespace_enforcement = "warn" # <- diagnostic
}
