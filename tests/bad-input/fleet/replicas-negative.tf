# A static fleet of -1 nodes.
# expect: validate
# path: replicas
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  replicas   = -1 # <- diagnostic
}
