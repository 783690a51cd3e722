# By name, then the node (or the selector as key=value,...).
terraform import gpufleet_node_sharing.dgx dgx:dgx-a100-1
terraform import gpufleet_node_sharing.lab lab:example.com/pool=lab
