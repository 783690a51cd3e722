# The taints on one node, by the node's name.
terraform import gpufleet_node_taint.inference gpu-node-7
