# An empty limits object limits nothing.
# expect: validate
# path: limits
# message: empty limits
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits     = {} # <- diagnostic
}
