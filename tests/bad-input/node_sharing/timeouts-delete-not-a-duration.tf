# timeouts.delete is a duration with a space and a spelled-out unit.
# expect: validate
# path: timeouts.delete
# message: duration
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "none"
  timeouts = {
    delete = "5 minutes" # <- diagnostic
  }
}
