# timeouts.update is a negative duration.
# expect: validate
# path: timeouts.update
# message: duration
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "none"
  timeouts = {
    update = "-5m" # <- diagnostic
  }
}
