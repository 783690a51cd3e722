# timeouts.delete is a duration with a space and a spelled-out unit.
# expect: validate
# path: timeouts.delete
# message: duration
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  timeouts = {
    delete = "5 minutes" # <- diagnostic
  }
}
