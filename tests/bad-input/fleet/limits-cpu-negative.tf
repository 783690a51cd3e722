# A negative CPU quantity.
# expect: validate
# path: limits.cpu
# message: negative
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits = {
    cpu = "-4" # <- diagnostic
  }
}
