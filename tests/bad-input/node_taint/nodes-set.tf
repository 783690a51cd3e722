# nodes is computed: the nodes the taints landed on.
# expect: validate
# path: nodes
# message: is set by the provider
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  nodes     = ["gpu-1"] # <- diagnostic
}
