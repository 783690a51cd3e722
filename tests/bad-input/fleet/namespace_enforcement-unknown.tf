# Enforcement is deny, warn or audit.
# expect: validate
# path: namespace_enforcement
# message: is not one of
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  allowed_namespaces    = ["training"]
  namespace_enforcement = "block" # <- diagnostic
}
