# sharing_labels is computed.
# expect: validate
# path: sharing_labels
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name           = "gpu"
  node_class     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  sharing_labels = { "nvidia.com/device-plugin.config" = "fleet-gpu" } # <- diagnostic
}
