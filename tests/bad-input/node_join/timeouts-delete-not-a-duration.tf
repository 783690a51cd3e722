# timeouts.delete is a word, not a duration.
# expect: validate
# path: timeouts.delete
# message: duration
resource "gpufleet_node_join" "this" {
  timeouts = {
    delete = "soon" # <- diagnostic
  }
}
