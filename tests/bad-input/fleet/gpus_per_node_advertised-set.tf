# gpus_per_node_advertised is computed.
# expect: validate
# path: gpus_per_node_advertised
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name                     = "gpu"
  node_class               = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  gpus_per_node_advertised = 32 # <- diagnostic
}
