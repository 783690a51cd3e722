# nodes is computed: the nodes the taints landed on.
# expect: validate
# path: nodes
# message: nodes
# gap: caught: computed-only attributes set in configuration are not rejected
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  nodes     = ["gpu-1"] # <- diagnostic
}
