# Beyond what the API holds.
# expect: validate
# path: limits.gpus
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits = {
    gpus = 4294967296 # <- diagnostic
  }
}
