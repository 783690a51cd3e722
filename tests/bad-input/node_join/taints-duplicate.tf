# One taint per key and effect on a node.
# expect: validate
# path: taints[1]
# message: duplicate taint
resource "gpufleet_node_join" "this" {
  taints = [
    { key = "workload", value = "a", effect = "NoSchedule" },
    { key = "workload", value = "b", effect = "NoSchedule" }, # <- diagnostic
  ]
}
