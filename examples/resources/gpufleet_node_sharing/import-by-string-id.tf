import {
  to = gpufleet_node_sharing.dgx
  id = "dgx:dgx-a100-1"
}
