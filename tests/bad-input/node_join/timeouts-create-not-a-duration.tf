# timeouts.create is a word, not a duration.
# expect: validate
# path: timeouts.create
# message: duration
resource "gpufleet_node_join" "this" {
  timeouts = {
    create = "soon" # <- diagnostic
  }
}
