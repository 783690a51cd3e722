# One target: node_name or node_selector.
# expect: validate
# path: node_selector
# message: not both
resource "gpufleet_node_taint" "this" {
  node_name     = "gpu-1"
  node_selector = { gpu = "h100" } # <- diagnostic
  taints        = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
