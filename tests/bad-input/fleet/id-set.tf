# id is computed.
# expect: validate
# path: id
# message: id
# gap: caught: computed-only attributes set in configuration are not rejected
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  id         = "gpu" # <- diagnostic
}
