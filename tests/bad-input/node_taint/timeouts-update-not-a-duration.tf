# timeouts.update is a negative duration.
# expect: validate
# path: timeouts.update
# message: duration
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  timeouts = {
    update = "-5m" # <- diagnostic
  }
}
