# node_overlays is computed.
# expect: validate
# path: node_overlays
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name          = "gpu"
  node_class    = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  node_overlays = { gpu-8 = { gpus = 8, capacity = { "nvidia.com/gpu" = "32" } } } # <- diagnostic
}
