# timeouts.read is a word, not a duration.
# expect: validate
# path: timeouts.read
# message: duration
resource "gpufleet_node_join" "this" {
  timeouts = {
    read = "soon" # <- diagnostic
  }
}
