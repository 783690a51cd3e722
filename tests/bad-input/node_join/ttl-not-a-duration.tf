# ttl is a duration.
# expect: validate
# path: ttl
# message: not a duration
resource "gpufleet_node_join" "this" {
  ttl = "one day" # <- diagnostic
}
