# gpu_sharing owns the device-plugin configuration label.
# expect: validate
# path: labels["nvidia.com/device-plugin.config"]
# message: remove it from `labels`
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "time_slicing", replicas = 4 }
  labels = {
    "nvidia.com/device-plugin.config" = "mine" # <- diagnostic
  }
}
