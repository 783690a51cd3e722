# The cluster-wide default, by its key in the device-plugin ConfigMap.
terraform import gpufleet_gpu_sharing.default default
