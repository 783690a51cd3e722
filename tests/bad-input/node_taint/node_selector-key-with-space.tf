# A label key with a space.
# expect: validate
# path: node_selector
# message: not a valid key
resource "gpufleet_node_taint" "this" {
  node_selector = { "gpu type" = "h100" } # <- diagnostic
  taints        = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
