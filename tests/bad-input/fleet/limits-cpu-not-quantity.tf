# Not a Kubernetes quantity.
# expect: validate
# path: limits.cpu
# message: not a kubernetes quantity
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits = {
    cpu = "lots" # <- diagnostic
  }
}
