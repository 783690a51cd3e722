# A bootstrap token by its id, the part of the token before the dot.
terraform import gpufleet_node_join.h100 abcdef
