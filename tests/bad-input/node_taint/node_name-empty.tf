# An empty node name.
# expect: validate
# path: node_name
# message: not a valid name
resource "gpufleet_node_taint" "this" {
  node_name = "" # <- diagnostic
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
