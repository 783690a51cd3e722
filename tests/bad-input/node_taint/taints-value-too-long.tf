# A taint value holds at most 63 characters.
# expect: validate
# path: taints[0].value
# message: not a valid label value
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "workload", value = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv", effect = "NoSchedule" }, # <- diagnostic
  ]
}
