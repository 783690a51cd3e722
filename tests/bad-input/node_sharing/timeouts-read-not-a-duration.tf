# timeouts.read is a number without a unit.
# expect: validate
# path: timeouts.read
# message: duration
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "none"
  timeouts = {
    read = "90" # <- diagnostic
  }
}
