# timeouts.create is a word, not a duration.
# expect: validate
# path: timeouts.create
# message: duration
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  timeouts = {
    create = "soon" # <- diagnostic
  }
}
