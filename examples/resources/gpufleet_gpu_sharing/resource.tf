# Every GPU node shares its GPUs four ways by time slicing, unless its fleet
# (`gpu_sharing`) or a gpufleet_node_sharing says otherwise. The GPU
# Operator's ClusterPolicy is pointed at the configuration, and the
# device-plugin pods restart when it changes.
resource "gpufleet_gpu_sharing" "default" {
  strategy          = "time_slicing"
  replicas          = 4
  rename_by_default = true # pods ask for nvidia.com/gpu.shared
  mig_strategy      = "mixed"
}

output "device_plugin_config" {
  value = gpufleet_gpu_sharing.default.device_plugin_config
}
