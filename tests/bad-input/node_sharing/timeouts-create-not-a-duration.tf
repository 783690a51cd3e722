# timeouts.create is a word, not a duration.
# expect: validate
# path: timeouts.create
# message: duration
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "none"
  timeouts = {
    create = "soon" # <- diagnostic
  }
}
