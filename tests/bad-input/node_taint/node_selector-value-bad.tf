# A label value with a space.
# expect: validate
# path: node_selector
# message: not a valid label value
resource "gpufleet_node_taint" "this" {
  node_selector = { gpu = "h100 sxm" } # <- diagnostic
  taints        = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
