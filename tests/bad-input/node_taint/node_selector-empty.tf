# An empty selector matches every node, control plane included.
# expect: validate
# path: node_selector
# message: empty node selector
resource "gpufleet_node_taint" "this" {
  node_selector = {} # <- diagnostic
  taints        = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
