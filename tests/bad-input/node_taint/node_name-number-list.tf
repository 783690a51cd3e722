# A list where a name belongs.
# expect: validate
# path: node_name
# message: string required
resource "gpufleet_node_taint" "this" {
  node_name = ["gpu-1"] # <- diagnostic
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
