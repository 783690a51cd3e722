import {
  to = gpufleet_node_taint.inference
  id = "gpu-node-7"
}
