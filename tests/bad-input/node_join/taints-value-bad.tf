# A taint value with a slash.
# expect: validate
# path: taints[0].value
# message: not a valid label value
resource "gpufleet_node_join" "this" {
  taints = [
    { key = "workload", value = "ml/training", effect = "NoSchedule" }, # <- diagnostic
  ]
}
