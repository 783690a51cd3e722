# An empty list exempts nothing; leave it out.
# expect: validate
# path: exempt_namespaces
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  allowed_namespaces = ["training"]
  exempt_namespaces  = [] # <- diagnostic
}
