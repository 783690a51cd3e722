# The key fleet-NAME is also the value of the nvidia.com/device-plugin.config
# label, at most 63 characters: 58 are too many for a shared fleet.
# expect: validate
# path: name
# message: nvidia.com/device-plugin.config
resource "gpufleet_fleet" "this" {
  name         = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" # <- diagnostic
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "time_slicing", replicas = 4 }
}
