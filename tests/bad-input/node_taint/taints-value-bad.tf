# A taint value with a slash.
# expect: validate
# path: taints[0].value
# message: not a valid label value
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "workload", value = "ml/training", effect = "NoSchedule" }, # <- diagnostic
  ]
}
