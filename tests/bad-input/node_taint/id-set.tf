# id is computed.
# expect: validate
# path: id
# message: is set by the provider
resource "gpufleet_node_taint" "this" {
  id        = "gpu-1" # <- diagnostic
  node_name = "gpu-1"
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
