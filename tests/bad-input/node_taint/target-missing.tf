# Neither node_name nor node_selector.
# expect: validate
# path: node_name
# message: node_name
resource "gpufleet_node_taint" "this" { # <- diagnostic
  taints = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
