# An empty list allows no namespace at all; leave the attribute out to allow every one.
# expect: validate
# path: allowed_namespaces
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  allowed_namespaces = [] # <- diagnostic
}
