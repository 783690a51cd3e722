# timeouts.update is a word, not a duration.
# expect: validate
# path: timeouts.update
# message: duration
resource "gpufleet_node_join" "this" {
  timeouts = {
    update = "soon" # <- diagnostic
  }
}
