import {
  to = gpufleet_node_join.h100
  id = "abcdef"
}
