# A limit cannot be negative.
# expect: validate
# path: limits.gpus
# message: cannot be negative
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits = {
    gpus = -1 # <- diagnostic
  }
}
