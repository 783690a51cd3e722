# timeouts.read is a number without a unit.
# expect: validate
# path: timeouts.read
# message: duration
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  timeouts = {
    read = "90" # <- diagnostic
  }
}
