# A slash is no part of a node name.
# expect: validate
# path: node_name
# message: not a valid name
resource "gpufleet_node_taint" "this" {
  node_name = "nodes/gpu-1" # <- diagnostic
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
