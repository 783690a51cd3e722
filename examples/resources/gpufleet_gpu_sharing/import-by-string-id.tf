import {
  to = gpufleet_gpu_sharing.default
  id = "default"
}
