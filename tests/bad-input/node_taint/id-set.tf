# id is computed.
# expect: validate
# path: id
# message: id
# gap: caught: computed-only attributes set in configuration are not rejected
resource "gpufleet_node_taint" "this" {
  id        = "gpu-1" # <- diagnostic
  node_name = "gpu-1"
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
