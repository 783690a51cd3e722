# A list where a map belongs.
# expect: validate
# path: node_selector
# message: map of string required
resource "gpufleet_node_taint" "this" {
  node_selector = ["gpu"] # <- diagnostic
  taints        = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
