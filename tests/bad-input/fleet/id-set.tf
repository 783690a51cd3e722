# id is computed.
# expect: validate
# path: id
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  id         = "gpu" # <- diagnostic
}
