# Node names are lower case.
# expect: validate
# path: node_name
# message: not a valid name
resource "gpufleet_node_taint" "this" {
  node_name = "GPU-Node-1" # <- diagnostic
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
